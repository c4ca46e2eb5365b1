package infra

import (
	"testing"

	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/routes"
)

// TestReadinessJobs pins the AWS side of docs/READINESS.md "Where it
// runs": the encrypted readiness queue with its dead-letter queue, the
// readiness function on it one job at a time with batch item failures and a
// maximum concurrency, sqs:SendMessage and the queue URL for exactly the
// functions that may queue a job, and the alarms on the queue; and the same
// of the resume queue, whose jobs the readiness function runs under a
// maximum concurrency of their own (docs/WAKE.md "The resume runs in the
// background").
func TestReadinessJobs(t *testing.T) {
	s := MustDefaultStack(t)
	checkJobQueue(t, s, jobQueueWant{
		name: "Readiness", visibility: readinessVisibility, maxReceives: readinessMaxReceives,
		consumer: routes.Readiness, batchSize: readinessBatchSize, concurrency: DefaultReadinessConcurrency,
		senders: readinessArmers, urlEnv: envnames.ReadinessQueueURL, oldestAge: readinessOldestAgeAlarm,
	})
	checkJobQueue(t, s, jobQueueWant{
		name: "WakeResume", visibility: readinessVisibility, maxReceives: readinessMaxReceives,
		consumer: routes.Readiness, batchSize: resumeBatchSize, concurrency: resumeConcurrency,
		senders: resumeSenders, urlEnv: envnames.ResumeQueueURL, oldestAge: resumeOldestAgeAlarm,
	})
	if readinessVisibility <= readinessTimeout {
		t.Errorf("readiness queue visibility %v is not above the function's timeout %v: a running job would be delivered twice", readinessVisibility, readinessTimeout)
	}
}
