// Package bench measures Sandman for `make bench` (scripts/bench.sh, which
// runs internal/lab/cmd/bench against its own in-memory DynamoDB Local): the
// figures of docs/BENCH.md. Every figure is measured in the run that reports
// it; nothing here is a constant written down from an earlier run.
//
// The figures, one Run function each:
//
//   - RunStatus: latency of GET /v1/sessions/{id}/status through the
//     status function's handler built as production builds it (app.New,
//     App.HTTPHandler), once with the API-key cache as deployed (one
//     GetItem, the session, per warm request) and once with it turned off
//     (one GetItem for the key, one for the session), against a raw
//     DynamoDB GetItem of the same session item, interleaved in one loop.
//     The functions' DynamoDB requests are counted by a CountingProxy in
//     front of DynamoDB Local, since app.New builds its own client.
//   - RunSweep: one idle sweep (internal/sweep) over a table of many running
//     sessions of which some are idle, with a fake provider whose pause
//     takes a real, fixed latency; its wall time against the bound
//     idle × latency ÷ concurrency, the DynamoDB operations it issued
//     (counted on the wire, see OpCounter: Scan must be 0), and a check that
//     exactly the idle sessions were paused and no other session was
//     touched.
//   - RunWebhook: signed E2B deliveries through the real providerhook.Handler
//     (verify, parse, find the session by sandbox, conditional transition,
//     dedupe claim), sequential and from concurrent senders.
//   - RunColdStart: each Lambda function built as the real `bootstrap`
//     binary, its zipped size as deployed (linux/arm64) and, on this machine
//     (linux/amd64), its init duration and first invocations against
//     RuntimeAPI, a minimal Lambda Runtime API served in process (AWS's
//     Runtime Interface Emulator is not available here).
//   - RunOutbox: snapshot and resume with the event published in the
//     request's path against through the table's stream, and the lag from
//     commit to event through the local stream poller.
//   - RunChannel: the client channel as the local stack runs it (issue
//     18): commit of a pause → a WebSocket client holding the push, through
//     the stream poller, channel.Handler as notifier and
//     localstack.WSGateway over real sockets; one client per session
//     paused one at a time, then 1,000 clients on 100 sessions paused at
//     once (every client must get its push).
//   - RunTimers: how late pauses land on the real timer and sweep code:
//     lifecycle.Service with internal/timer/localtimer and
//     internal/sweep against a fake provider behind a sliding-window rate
//     limit, in real time, at the target load scaled down (counts and
//     durations divided, the ratio of deadlines to the limit kept); with
//     the sweep alone and with bunched deadlines for comparison.
//   - RunCheckpoints: checkpoint (202 → ready) and restore (request → the
//     session running on the new sandbox, its app ready) per provider
//     model: lifecycle.Service on DynamoDB Local with its checkpoint and
//     readiness workers, each provider's real adapter against its fake
//     with the model's latencies (fakekit's SetLatency), and the local
//     provider's archives, each against the provider's own floor; then
//     the archive path (internal/lab/archivebench, RunArchive).
//
// Report gathers them with the Machine they ran on and renders the markdown
// report (Report.Markdown) and the raw figures (JSON).
//
// Latencies are measured on the client side with the monotonic clock and
// reported in milliseconds. Percentiles are nearest-rank (Summarize).
package bench
