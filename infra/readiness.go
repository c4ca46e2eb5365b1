package infra

import (
	"time"

	"github.com/sandmanhq/sandman/internal/routes"
)

// readinessArmers are the functions whose commits may make a session with
// an app running (create, resume, a pause rolled back, a resumed webhook,
// a reconcile, a restore or a fork of a checkpoint) and so queue its
// readiness job (lifecycle.ReadinessJobs),
// and the readiness function, which continues a job near its deadline in a
// new message: they may send to the readiness queue (sqs:SendMessage only)
// and get its URL in envnames.ReadinessQueueURL (docs/READINESS.md
// "Where it runs").
var readinessArmers = []string{routes.Sessions, routes.Resume, routes.Pause, routes.Reconnect, routes.Webhook,
	routes.Sweep, routes.Timer, routes.Channel, routes.Readiness, routes.Checkpoint}

// Settings of the readiness queue and the readiness function's event
// source mapping (ours).
const (
	// readinessTimeout is the readiness function's Lambda timeout: a job
	// probes for up to this long, less sqsjobs.DeadlineMargin, then
	// continues in a new message.
	readinessTimeout = 2 * time.Minute
	// readinessBatchSize is one job per invocation: jobs wait on apps, so
	// a batch would make the last job wait for the first.
	readinessBatchSize = 1
	// readinessMaxReceives is how many times a failing job is delivered
	// before it moves to the dead-letter queue.
	readinessMaxReceives = 5
	// readinessVisibility is the queue's visibility timeout: the
	// function's timeout plus a minute, so a job whose function died is
	// delivered again soon (batches of one are never throttled past
	// the event source's maximum concurrency).
	readinessVisibility = readinessTimeout + time.Minute
	// readinessOldestAgeAlarm is the age of the oldest job past which its
	// alarm fires: users wait on these jobs.
	readinessOldestAgeAlarm = 2 * time.Minute
)

// DefaultReadinessConcurrency is SandmanStackProps.ReadinessConcurrency's
// default.
const DefaultReadinessConcurrency = 20

// readinessQueueSpec is the readiness job queue, fed to the readiness
// function one job per invocation, at most
// SandmanStackProps.ReadinessConcurrency at once.
var readinessQueueSpec = jobQueueSpec{
	name:        "Readiness",
	visibility:  readinessVisibility,
	maxReceives: readinessMaxReceives,
	dlqAlarm:    "Sandman readiness jobs the readiness function gave up on (dead-letter queue)",
	ageAlarm:    "Sandman readiness function behind its queue (oldest job over 2 min)",
	oldestAge:   readinessOldestAgeAlarm,
}

// resumeSenders are the functions that hand a resume to a job: the resume
// function (an open of the stable link), the channel (a return) and
// sweep (the sweep queues a lost one again). They may send to the
// resume queue and get its URL in envnames.ResumeQueueURL (docs/WAKE.md
// "The resume runs in the background").
var resumeSenders = []string{routes.Resume, routes.Channel, routes.Sweep}

// Settings of the resume queue (ours). Its jobs run on the readiness
// function, which has the provider's key and the session writes a resume
// needs, under their own maximum concurrency: a slow app's bring-up holds
// a readiness slot for up to its ready timeout, and a user coming back
// must not wait for one.
const (
	// resumeConcurrency bounds the resume jobs at once: each is one
	// provider resume (at most the call timeout, 30 s), so 10 finish
	// hundreds of resumes a minute.
	resumeConcurrency = 10
	// resumeBatchSize is one job per invocation: a batch would make the
	// last resume wait for the first.
	resumeBatchSize = 1
	// resumeOldestAgeAlarm is the age of the oldest resume job past which
	// its alarm fires: a user waits on the waking page.
	resumeOldestAgeAlarm = time.Minute
)

// resumeQueueSpec is the resume job queue (sqsjobs.NewResumes), fed to the
// readiness function one job per invocation, at most resumeConcurrency at
// once. Its visibility is the readiness queue's: the consumer is the same
// function, with the same timeout.
var resumeQueueSpec = jobQueueSpec{
	name:        "WakeResume",
	visibility:  readinessVisibility,
	maxReceives: readinessMaxReceives,
	dlqAlarm:    "Sandman resume jobs the readiness function gave up on (dead-letter queue)",
	ageAlarm:    "Sandman readiness function behind its resume queue (oldest resume job over 1 min)",
	oldestAge:   resumeOldestAgeAlarm,
}
