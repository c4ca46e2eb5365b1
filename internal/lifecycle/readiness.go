package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// AppCommandName is the name (or tag) under which Sandman starts a
// session's app command in its sandbox. A provider's command API is asked
// for it before a start, so a redelivered or duplicated readiness job never
// starts a second server (docs/READINESS.md "Crash safety").
const AppCommandName = "sandman-app"

// Command is a background command to start in a sandbox.
type Command struct {
	Name string            // AppCommandName; the provider's process tag or name
	Line string            // the shell command line (sh -c)
	Cwd  string            // working directory; "" for the sandbox user's home
	Env  map[string]string // added to the command's environment
	// Port is the sandbox port the command is expected to serve; a
	// provider that maps ports (the local one) passes the mapped port to the
	// command as PORT.
	Port int
}

// CommandStatus is what a provider knows of a command it started.
type CommandStatus struct {
	Running  bool
	ExitCode int // when not Running
	// Output is the command's last output lines (stdout and stderr), ""
	// when the provider keeps none.
	Output string
}

// ErrNoCommand is returned (wrapped) by CommandRunner.CommandStatus when the
// sandbox holds no command of that name: never started, or lost by a pause
// of a provider that does not keep processes.
var ErrNoCommand = errors.New("no such command in the sandbox")

// CommandRunner is implemented by a Provider that can run a command in a
// sandbox and reach one of its ports (docs/READINESS.md "Providers"):
// E2B's process API, Daytona's toolbox session API, Vercel Sandbox's
// run-command API, and a real child process locally.
type CommandRunner interface {
	// KeepsProcesses reports whether processes survive a pause and resume
	// (E2B full pause: yes; Vercel Sandbox and Daytona stop/start: no).
	KeepsProcesses() bool
	// StartCommand starts cmd in the background and returns at once.
	// Starting a command whose name already runs starts nothing and
	// returns the running one. Errors: gone, transient.
	StartCommand(ctx context.Context, sandboxID string, cmd Command) (CommandStatus, error)
	// CommandStatus reads the command named name. Errors: ErrNoCommand
	// (wrapped), gone, transient.
	CommandStatus(ctx context.Context, sandboxID, name string) (CommandStatus, error)
	// PortURL returns the URL of the sandbox's port as the world reaches it
	// (the preview of that port). Errors: gone, transient.
	PortURL(ctx context.Context, sandboxID string, port int) (string, error)
	// PortClosed reports whether an answer of the preview is the
	// provider's own "nothing listens on this port" answer rather than the
	// app's (E2B's 502 page, Vercel's 502, Daytona's 400-ish proxy page).
	PortClosed(status int, header http.Header, body []byte) bool
}

// ReadinessJobs runs a readiness job (Service.BringUp) for a session, in
// the background: an SQS message consumed by the readiness function in AWS,
// an in-process worker locally (internal/readiness). A job is a hint: it
// re-reads the session and does nothing when there is nothing to do, so a
// duplicate job is harmless.
type ReadinessJobs interface {
	// Enqueue asks for Service.BringUp(sessionID) soon. Errors:
	// unavailable when the job could not be queued (logged by the caller).
	Enqueue(ctx context.Context, sessionID string) error
}

// Readiness defaults (Config).
const (
	DefaultReadyProbeTimeout = 5 * time.Second
	defaultReadyBackoffMin   = 100 * time.Millisecond
	defaultReadyBackoffMax   = 250 * time.Millisecond
	readyCloseBodyLimit      = 64 << 10
	// A start the provider failed transiently is tried again after 1 s,
	// doubling to 8 s (or after its Retry-After), until the ready timeout.
	readyStartBackoffMin = time.Second
	readyStartBackoffMax = 8 * time.Second
)

// enqueueReadiness queues sess's readiness job when the committed write
// from from made it running with its app starting: after a create, a
// resume, and a pause rolled back while it was still starting.
func (s *Service) enqueueReadiness(ctx context.Context, sess *Session, from State) {
	if s.cfg.ReadinessJobs == nil || from == StateRunning || sess.State != StateRunning ||
		sess.Readiness != ReadinessStarting {
		return
	}
	if err := s.cfg.ReadinessJobs.Enqueue(ctx, sess.ID); err != nil {
		s.log().WarnContext(ctx, "queue the readiness job; the session stays starting until one runs",
			"session_id", sess.ID, "err", err)
	}
}

// RequeueReadiness queues the readiness job of sess again when it is
// running with its app still starting, or resuming with its resume handed
// to a job (ResumeQueued, an open of its link) and its lease not yet
// expired: the sweep's repair of a job that was never queued (the writer
// died between the commit and the send, or the send failed) or that the
// queue gave up on (docs/READINESS.md "Crash safety", docs/WAKE.md "The
// resume runs in the background"). The job looks before it starts
// anything, so a job still at work finds its command running, and two
// copies of a resume's job commit one resuming → running. It reports
// whether a job was queued (false without ReadinessJobs, or for a session
// with nothing to bring up). A resume's job goes to Config.ResumeJobs when
// set. Errors: the queue's (unavailable).
func (s *Service) RequeueReadiness(ctx context.Context, sess *Session) (bool, error) {
	starting := sess.State == StateRunning && sess.App != nil && sess.Readiness == ReadinessStarting
	jobs := s.cfg.ReadinessJobs
	if !starting {
		jobs = s.resumeJobs()
	}
	if jobs == nil || !starting && !sess.resumeJobDue(s.now()) {
		return false, nil
	}
	if err := jobs.Enqueue(ctx, sess.ID); err != nil {
		return false, err
	}
	return true, nil
}

// resumeJobDue reports whether sess is resuming with its resume handed to
// a job that may have been lost: queued, waited ResumeRequeueAfter, and
// within its lease (after it, the sweep reconciles the session instead).
func (sess *Session) resumeJobDue(now time.Time) bool {
	return sess.State == StateResuming && sess.ResumeQueued && now.Before(sess.LeaseExpiresAt) &&
		!now.Before(sess.StateChangedAt.Add(ResumeRequeueAfter))
}

// ResumeJobDue reports whether the sweep should queue the job of sess's
// handed-off resume again rather than reconcile it (RequeueReadiness).
func (sess *Session) ResumeJobDue(now time.Time) bool { return sess.resumeJobDue(now) }

// BringUpOutcome says what a readiness job did.
type BringUpOutcome string

// The readiness job outcomes.
const (
	BringUpNothing BringUpOutcome = "nothing" // not running with its app starting: nothing to do
	BringUpReady   BringUpOutcome = "ready"
	BringUpFailed  BringUpOutcome = "failed"
	BringUpMoved   BringUpOutcome = "moved" // the session left running (paused, killed) meanwhile
	// BringUpResumed: the job finished a resume an open handed to it
	// (Session.ResumeQueued); the running write queued the app's job.
	// FinishResume's outcome, and BringUp's when there are no ResumeJobs.
	BringUpResumed BringUpOutcome = "resumed"
)

// BringUp is a readiness job (docs/READINESS.md "How the app is brought
// up"). For a resuming session whose resume an open handed to a job
// (Session.ResumeQueued, docs/WAKE.md "The resume runs in the background") it finishes
// that resume and returns BringUpResumed (the running write queues the
// next job, for the app). For a running session whose app is starting, it looks for the app
// command in the sandbox (CommandRunner.CommandStatus) and starts it only
// when none runs, then probes the preview at the app's ready path with
// backoff until it answers below 500 with something other than the
// provider's "port not open" answer (ready), the command exits, or
// ReadyTimeout has passed since the session became running (failed). Each
// outcome is a conditional write of the running session that publishes
// Session Ready or Session Not Ready through the outbox. The deadline is
// counted from the committed state change, so a job redelivered after a
// crash continues the same wait rather than starting a new one. The
// session is re-read before every probe: a paused sandbox is never probed.
// Errors: the store's and the provider's (transient: the job is retried).
func (s *Service) BringUp(ctx context.Context, id string) (BringUpOutcome, error) {
	sess, err := s.cfg.Store.GetSession(ctx, id)
	if err != nil {
		if IsCode(err, CodeNotFound) {
			return BringUpNothing, nil
		}
		return "", err
	}
	if sess.State == StateResuming && sess.ResumeQueued {
		return s.finishQueuedResume(ctx, sess), nil
	}
	if sess.State != StateRunning || sess.App == nil || sess.Readiness != ReadinessStarting {
		return BringUpNothing, nil
	}
	run := sess.StateChangedAt
	deadline := run.Add(sess.App.ReadyTimeout)
	url := readyURL(sess.PreviewURL, sess.App.ReadyPath)
	runner, _ := As[CommandRunner](s.provider(sess))
	started := runner == nil // a provider without a command API serves the app itself
	if runner != nil {
		pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		base, err := runner.PortURL(pctx, sess.SandboxID, sess.App.Port)
		cancel()
		if err != nil {
			return "", fmt.Errorf("readiness of %s: port URL: %w", id, err)
		}
		url = readyURL(base, sess.App.ReadyPath)
	}
	backoff, startBackoff := s.cfg.ReadyBackoff, readyStartBackoffMin
	for {
		wait := backoff
		if !started {
			err := s.ensureCommand(ctx, runner, sess)
			switch {
			case err == nil:
				started = true
			case ctx.Err() != nil || errors.Is(err, ErrSandboxGone):
				return "", fmt.Errorf("readiness of %s: start the app command: %w", id, err)
			case !errors.Is(err, ErrProviderTransient):
				// Refused for good (a cwd that does not exist, a command
				// the provider will not run): no retry can start it.
				return s.settleReadiness(ctx, id, run, ReadinessFailed,
					"the start command could not be started: "+err.Error())
			case !s.now().Before(deadline):
				return s.settleReadiness(ctx, id, run, ReadinessFailed, fmt.Sprintf(
					"the start command could not be started within %d s: %v", int64(sess.App.ReadyTimeout/time.Second), err))
			}
			if !started {
				// A provider in trouble is asked again less often than a
				// server that boots is probed.
				wait = max(startBackoff, RetryAfter(err))
				startBackoff = min(2*startBackoff, readyStartBackoffMax)
			}
		}
		if started {
			if done, out, err := s.probeOnce(ctx, runner, sess, url, run, deadline); done {
				return out, err
			}
		}
		if err := s.sleep(ctx, max(min(wait, deadline.Sub(s.now())+time.Millisecond), time.Millisecond)); err != nil {
			return "", err
		}
		if started {
			backoff = min(2*backoff, s.cfg.ReadyBackoffMax)
		}
		cur, err := s.cfg.Store.GetSession(ctx, id)
		if err != nil {
			return "", err
		}
		if cur.State != StateRunning || !cur.StateChangedAt.Equal(run) || cur.Readiness != ReadinessStarting {
			return BringUpMoved, nil
		}
	}
}

// probeOnce makes one probe of sess's app at url and settles its
// readiness when the probe or the command decides it: ready when the
// preview answered, failed when the command is gone or exited, or the
// deadline has passed. It reports whether it settled (or failed), with
// BringUp's outcome and error.
func (s *Service) probeOnce(ctx context.Context, runner CommandRunner, sess *Session, url string, run, deadline time.Time) (bool, BringUpOutcome, error) {
	ok, why := s.probeReady(ctx, runner, url)
	if ok {
		out, err := s.settleReadiness(ctx, sess.ID, run, ReadinessReady, "")
		return true, out, err
	}
	late := !s.now().Before(deadline)
	timedOut := fmt.Sprintf("the preview did not answer at %s within %d s (%s)",
		sess.App.ReadyPath, int64(sess.App.ReadyTimeout/time.Second), why)
	if runner == nil {
		if !late {
			return false, "", nil
		}
		out, err := s.settleReadiness(ctx, sess.ID, run, ReadinessFailed, timedOut)
		return true, out, err
	}
	st, err := s.commandStatus(ctx, runner, sess)
	if err != nil && !errors.Is(err, ErrNoCommand) {
		return true, "", err
	}
	var detail string
	var exit *int
	switch {
	case err != nil:
		detail = "the start command is no longer in the sandbox"
	case !st.Running:
		detail = fmt.Sprintf("the start command exited with code %d before the preview answered", st.ExitCode)
		exit = &st.ExitCode
	case late:
		detail = timedOut
	default:
		return false, "", nil
	}
	out, serr := s.settleFailed(ctx, sess.ID, run, withOutput(detail, st.Output), exit)
	return true, out, serr
}

// readyURL is the URL a readiness probe GETs: the port's preview URL base
// with its path joined to readyPath (which starts with "/" and may carry a
// query of its own). The preview's query is kept: Daytona's carries the
// preview token (DAYTONA_SANDBOX_AUTH_KEY), so appending the path to the
// whole URL would spoil the token and every probe would meet the sign-in
// redirect. A base that does not parse is joined as text.
func readyURL(base, readyPath string) string {
	u, err := neturl.Parse(base)
	if err != nil {
		return strings.TrimSuffix(base, "/") + readyPath
	}
	path, query, _ := strings.Cut(readyPath, "?")
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawPath = ""
	if query != "" {
		if u.RawQuery != "" {
			u.RawQuery += "&"
		}
		u.RawQuery += query
	}
	return u.String()
}

// ensureCommand starts sess's app command unless one already runs in the
// sandbox (a redelivered job, or a provider that kept it across a pause).
// Errors: the provider's, as it returned them (BringUp tells a start that
// may succeed later, transient, from one refused for good).
func (s *Service) ensureCommand(ctx context.Context, runner CommandRunner, sess *Session) error {
	st, err := s.commandStatus(ctx, runner, sess)
	if err == nil && st.Running {
		return nil
	}
	if err != nil && !errors.Is(err, ErrNoCommand) {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	app := sess.App
	if _, err := runner.StartCommand(pctx, sess.SandboxID, Command{Name: AppCommandName,
		Line: app.StartCommand, Cwd: app.Cwd, Env: app.Env, Port: app.Port}); err != nil {
		return err
	}
	s.log().InfoContext(ctx, "app command started", "session_id", sess.ID, "sandbox_id", sess.SandboxID)
	return nil
}

func (s *Service) commandStatus(ctx context.Context, runner CommandRunner, sess *Session) (CommandStatus, error) {
	pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	return runner.CommandStatus(pctx, sess.SandboxID, AppCommandName)
}

// probeReady makes one GET of url. It reports whether the app answered,
// else a few words on what came back.
func (s *Service) probeReady(ctx context.Context, runner CommandRunner, url string) (bool, string) {
	pctx, cancel := context.WithTimeout(ctx, s.cfg.ReadyProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(pctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := s.cfg.ReadyHTTP.Do(req)
	if err != nil {
		return false, "no answer"
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, readyCloseBodyLimit))
	switch {
	case runner != nil && runner.PortClosed(resp.StatusCode, resp.Header, body):
		return false, "the provider says nothing listens on the port"
	case resp.StatusCode >= 500:
		return false, fmt.Sprintf("status %d", resp.StatusCode)
	}
	return true, ""
}

// appPreviewURL returns the preview URL of sess's app port when sess has an
// app and its provider can map ports, else fallback (the sandbox's own
// preview URL). A failure to map is logged and falls back.
func (s *Service) appPreviewURL(ctx context.Context, sess *Session, fallback string) string {
	runner, ok := As[CommandRunner](s.provider(sess))
	if sess.App == nil || !ok || sess.SandboxID == "" {
		return fallback
	}
	pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	u, err := runner.PortURL(pctx, sess.SandboxID, sess.App.Port)
	if err != nil {
		s.log().WarnContext(ctx, "preview URL of the app port", "session_id", sess.ID, "err", err)
		return fallback
	}
	return u
}

// outputSeparator joins a readiness detail's sentence to the command's
// last output lines (withOutput, AppOutput).
const outputSeparator = "; last output:\n"

// withOutput appends the command's last output lines to detail, cutting
// the output's beginning (never the sentence) so the whole fits in
// MaxReadinessDetail.
func withOutput(detail, output string) string {
	if output = strings.TrimSpace(output); output == "" {
		return detail
	}
	room := MaxReadinessDetail - len(detail) - len(outputSeparator)
	if room <= len("…") {
		return TruncateDetail(detail + outputSeparator + output)
	}
	if len(output) > room {
		cut := len(output) - room + len("…")
		for cut < len(output) && !utf8.RuneStart(output[cut]) {
			cut++
		}
		output = "…" + output[cut:]
	}
	return detail + outputSeparator + output
}

// settleFailed records readiness failed with detail, and the start
// command's exit code when it exited (exit nil otherwise), as
// settleReadiness does.
func (s *Service) settleFailed(ctx context.Context, id string, run time.Time, detail string, exit *int) (BringUpOutcome, error) {
	return s.settle(ctx, id, run, ReadinessFailed, detail, exit)
}

// settleReadiness records readiness r (ready or failed) on session id if it
// is still the same run (running since run) with its app starting: one
// conditional write, retried on a lost race. Errors: the store's.
func (s *Service) settleReadiness(ctx context.Context, id string, run time.Time, r Readiness, detail string) (BringUpOutcome, error) {
	return s.settle(ctx, id, run, r, detail, nil)
}

func (s *Service) settle(ctx context.Context, id string, run time.Time, r Readiness, detail string, exit *int) (BringUpOutcome, error) {
	for attempt := 0; ; attempt++ {
		sess, err := s.cfg.Store.GetSession(ctx, id)
		if err != nil {
			return "", err
		}
		if sess.State != StateRunning || !sess.StateChangedAt.Equal(run) || sess.Readiness != ReadinessStarting {
			return BringUpMoved, nil
		}
		now := s.now()
		sess.Readiness, sess.ReadinessDetail, sess.UpdatedAt = r, TruncateDetail(detail), now
		sess.AppExitCode = nil
		if exit != nil {
			code := *exit
			sess.AppExitCode = &code
		}
		if r == ReadinessReady {
			sess.ReadyAt = now
		}
		err = s.commit(ctx, sess, StateRunning, Guard{})
		if err == nil {
			ev := NewReadinessEvent(sess)
			s.log().InfoContext(ctx, "session readiness", "session_id", id, "readiness", r,
				"detail", sess.ReadinessDetail, "version", sess.Version, "event_id", ev.EventID,
				"after_ms", now.Sub(run).Milliseconds())
			if r == ReadinessReady {
				return BringUpReady, nil
			}
			return BringUpFailed, nil
		}
		if !IsCode(err, CodeConflict) || attempt >= maxConflictRetries {
			return "", err
		}
	}
}

// WaitReady holds until session id's app is no longer starting, the
// session is not running, or bound has passed (docs/READINESS.md "Waiting":
// POST …/resume?wait=ready, at most MaxWaitReady), re-reading the session
// every ReadyPollInterval, and returns the session as it then is. Errors:
// not_found, forbidden, the store's.
func (s *Service) WaitReady(ctx context.Context, accountID, id string, bound time.Duration) (*Session, error) {
	bound = min(bound, MaxWaitReady)
	end := s.now().Add(bound)
	// Bounded by rounds too, so a clock that does not move (a test's)
	// cannot hold it forever.
	for round := 0; ; round++ {
		sess, err := s.owned(ctx, accountID, id)
		if err != nil {
			return nil, err
		}
		if sess.State != StateRunning || sess.Readiness != ReadinessStarting || !s.now().Before(end) ||
			round > int(bound/s.cfg.ReadyPollInterval) {
			return sess, nil
		}
		if err := s.sleep(ctx, min(s.cfg.ReadyPollInterval, end.Sub(s.now()))); err != nil {
			return sess, nil
		}
	}
}

// MaxWaitReady bounds WaitReady: the API Gateway budget of 29 s less a
// margin for the resume itself.
const MaxWaitReady = 25 * time.Second
