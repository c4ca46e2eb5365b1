package infra

import (
	"time"

	"github.com/sandmanhq/sandman/internal/routes"
)

// timerArmers are the functions whose writes may set a pause deadline before
// the next sweep and so arm its timer at once (lifecycle.Service.ArmTimer;
// the channel's heartbeats, resumes and away deadlines included, and the
// readiness function's, which finishes the resume an open of a stable link
// hands off: docs/WAKE.md "The resume runs in the background", and the
// checkpoint function's, whose restores and forks make sessions running),
// and the timer, which re-arms a timer whose deadline moved: they may send
// to the timer queue (sqs:SendMessage only) and get its URL in
// envnames.TimerQueueURL.
var timerArmers = []string{routes.Sessions, routes.Resume, routes.Pause, routes.Reconnect, routes.Webhook,
	routes.Sweep, routes.Timer, routes.Channel, routes.Readiness, routes.Checkpoint}

// Settings of the timer queue and the timer function's event source mapping (ours;
// docs/DESIGN.md "Precise pausing" asks for a timer that fires on the deadline,
// and tolerates a duplicate or late one).
const (
	// pauserTimeout is the timer function's Lambda timeout (see functionSpecs).
	pauserTimeout = time.Minute
	// timerBatchSize is the most timers per timer invocation.
	timerBatchSize = 10
	// timerMaxReceives is how many times a timer is delivered before it
	// moves to the dead-letter queue; the sweep still pauses its session.
	timerMaxReceives = 5
	// timerVisibility is the queue's visibility timeout: six times the
	// timer's timeout, as Lambda recommends for SQS event sources, so a
	// timer is not delivered twice while a batch is still working on it.
	timerVisibility = 6 * pauserTimeout
	// timerOldestAgeAlarm is the age of the oldest timer past which its
	// alarm fires: the longest delay SQS allows (15 min,
	// sqstimer.MaxDelay) plus 5 minutes of the timer function falling behind.
	timerOldestAgeAlarm = 20 * time.Minute
)

// timerQueueSpec is the timer queue (internal/timer/sqstimer sends one
// message per armed timer, delayed up to 15 minutes), fed to the timer function in
// batches of timerBatchSize, at most SandmanStackProps.PauserConcurrency at
// once: the bound on the provider's pause rate from timers.
var timerQueueSpec = jobQueueSpec{
	name:        "Timer",
	visibility:  timerVisibility,
	maxReceives: timerMaxReceives,
	dlqAlarm:    "Sandman pause timers the timer function gave up on (dead-letter queue)",
	ageAlarm:    "Sandman timer function behind the timer queue (oldest timer over 20 min)",
	oldestAge:   timerOldestAgeAlarm,
}
