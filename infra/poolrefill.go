package infra

import (
	"strings"
	"time"
)

// Settings of the pool refill queue and the sweep function's event
// source mapping on it (docs/POOLS.md "Refill", ours).
const (
	// poolRefillBatchSize is the most refill requests one invocation
	// takes: SQS's maximum for a FIFO queue; a batch naming a pool several
	// times fills it once (sqsrefill.Handler).
	poolRefillBatchSize = 10
	// poolRefillConcurrency is the event source's maximum concurrency
	// (Lambda's minimum): at most two pools refill at once from the queue,
	// and never one pool twice (its message group), so claims in a burst
	// cost the provider no more creates at once than two fills
	// (lifecycle.DefaultPoolFillConcurrency each).
	poolRefillConcurrency = 2
	// poolRefillMaxReceives: the handler reports no failures (a refill
	// not made waits for the sweep), so only an invocation that died
	// brings a request back; after three it is dropped to the
	// dead-letter queue.
	poolRefillMaxReceives = 3
	// poolRefillVisibility is the queue's visibility timeout: above the
	// sweep function's timeout (4 min 50 s), so a refill under way is
	// not handed to a second invocation.
	poolRefillVisibility = 6 * time.Minute
	// poolRefillOldestAgeAlarm is the age of the oldest request past
	// which its alarm fires: two sweep intervals, after which the sweep
	// would have refilled the pool anyway.
	poolRefillOldestAgeAlarm = 10 * time.Minute
)

// poolRefillQueueSpec is the pool refill queue: FIFO, one message group
// per pool (internal/sweep/sqsrefill), fed to the sweep function.
var poolRefillQueueSpec = jobQueueSpec{
	name:        "PoolRefill",
	fifo:        true,
	visibility:  poolRefillVisibility,
	maxReceives: poolRefillMaxReceives,
	dlqAlarm:    "Sandman pool refill requests the sweep function died on three times (dead-letter queue)",
	ageAlarm:    "Sandman pool refills behind their queue (oldest request over 10 min)",
	oldestAge:   poolRefillOldestAgeAlarm,
}

// hasPools reports whether the stack configures warm pools
// (SandmanStackProps.Pools other than "" and "[]"): only then are the
// refill queue and its grants made.
func hasPools(p SandmanStackProps) bool {
	s := strings.TrimSpace(p.Pools)
	return s != "" && strings.ReplaceAll(s, " ", "") != "[]"
}
