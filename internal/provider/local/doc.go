// Package local is the local lifecycle.Provider that `make run` uses:
// every sandbox is a real process started from the Sandman binary itself
// (`sandman sandbox ...`, whose main is RunSandbox), in its own session and
// process group, with its own directory. Pause stops the process group
// (SIGSTOP), resume continues it (SIGCONT), kill ends it (SIGKILL) and
// removes the directory. It needs Linux: it reads process states from /proc.
//
// # State on disk
//
// Nothing lives only in memory, so a control plane that restarts (or a second
// Provider over the same Dir) sees every sandbox as it is. Config.Dir holds
// one directory per sandbox, named by its id ("lsb_" and 16 lowercase base32
// characters):
//
//	<Dir>/<id>/sandbox.json  the record: template, pid, process group, the
//	                         process start time, preview port, created,
//	                         timeout and expires_at, auto_pause, metadata
//	<Dir>/<id>/files/        the sandbox's files; the web template serves them
//	<Dir>/<id>/sandbox.log   the child's stdout and stderr
//	<Dir>/<id>/lock          flock(2) target that serialises changes to one
//	                         sandbox across goroutines and processes
//
// Whether a sandbox is running, paused or gone is never stored: it is read
// from /proc/<pid>/stat each time. State T (stopped) is paused; R, S, D and
// the other live states are running; a missing process, a zombie, or a pid
// whose start time differs from the recorded one (the pid was reused) is
// gone, reported as lifecycle.ErrSandboxGone.
//
// # Processes
//
// The child is started with setsid(2), not only setpgid(2): it leads its own
// session and process group (pgid = sid = pid). With setpgid alone it would
// stay in the control plane's session, and when the control plane exits the
// kernel sends SIGHUP then SIGCONT to a newly orphaned process group that
// has a stopped member (POSIX job control), which would kill or wake every
// paused sandbox. Its stdin is /dev/null and its stdout and stderr go to
// sandbox.log, so it outlives the control plane. A child of this process is
// reaped as soon as it exits; one started by an earlier control plane is
// reaped by whoever inherited it.
//
// Templates: "base" is an idle long-running process; "web" serves the
// sandbox's files directory over HTTP on a loopback port chosen at create
// (the provider opens the listener and hands it to the child, so the port is
// known and accepting before Create returns). Its preview URL is
// http://127.0.0.1:<port>/ and Create writes an index.html there.
//
// # Preview fronts
//
// A preview port (a web sandbox's, and each port PortURL maps for a
// command) is the provider's own listener, a front, not the sandbox's: it
// forwards each request to the loopback port the sandbox's process listens
// on (record.Upstreams) while the sandbox runs, and answers at once with a
// 502 of its own (E2B's proxy's JSON shape, header FrontHeader) while it is
// paused or gone, or nothing listens behind it. A stopped process's socket
// would otherwise accept connections and never answer them. Fronts live in
// the Provider's process: New and every Tick open the fronts of the
// sandboxes in the folder that have none (a control plane that restarted),
// Close closes them, and while no Provider runs the previews refuse
// connections.
//
// # Timeouts
//
// As on E2B, a sandbox has a provider-side timeout (CreateRequest.Timeout,
// SetTimeout, Resume's timeout): past it a running sandbox is paused when it
// was created with AutoPause and killed otherwise. A stopped child cannot
// time itself, so the Provider enforces timeouts: EnforceTimeouts(ctx, now)
// (Tick uses the Provider's clock) acts on every sandbox past its expires_at
// and removes the directories of sandboxes whose process died, and Run calls
// Tick every Config.TickInterval. Because expires_at is on disk, a control
// plane that was down catches up on its first tick.
//
// # Webhooks
//
// When Config.WebhookURL is set, the provider POSTs E2B-format lifecycle
// webhooks (version "v2", sandbox.lifecycle.created, paused, resumed and
// killed, signed with E2B's v1 rule: see docs/providers/e2b.md) to it,
// asynchronously, with a few retries and exponential backoff. Flush waits
// for deliveries in flight; Close also stops new ones.
package local
