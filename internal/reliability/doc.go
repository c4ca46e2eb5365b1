// Package reliability proves that Sandman's lifecycle holds together under
// failure. Its tests (run by `make test`) drive the real service, store
// (DynamoDB Local), sweep and webhook handler against the fake provider:
//
//   - TestChaos runs mixed operations from concurrent goroutines over many
//     sessions while the provider fails calls transiently, loses sandboxes,
//     and changes sandboxes behind Sandman's back, with webhooks delivered
//     shuffled and duplicated. At the end it checks that the table agrees
//     with the provider, that versions only ever grew, and that the outbox
//     (the table's stream, read by internal/outbox's poller) published
//     every committed transition at least once by its event_id, nothing
//     else, in version order per session.
//   - TestCrash kills an operation (a Lambda invocation) at each step
//     between its provider call and its table write and checks that the
//     next sweep reconciles what it left behind.
//
// The package itself holds the small instruments those tests use: a Store
// that records every committed write and checks reads against it
// (RecordingStore), a Publisher that keeps every event the outbox publishes
// (EventLog), a
// Crasher that makes a process die at a chosen step, and an Observer that
// turns changes of the fake provider's state into the signed E2B webhooks a
// real provider would send.
//
// The default run is short (about 10 s). SANDMAN_RELIABILITY_LONG=1 (or
// -reliability.long when testing this package alone) runs more sessions,
// operations and seeds; SANDMAN_RELIABILITY_SEED=n runs one seed.
package reliability
