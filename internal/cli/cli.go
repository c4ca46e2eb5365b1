package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// Exit statuses of `sandman sessions` (docs/API.md "The CLI"). An error answer
// maps by its error_type; anything that is not an answer of the API (a
// network failure, a proxy's page) is ExitFailure.
const (
	ExitOK           = 0  // done
	ExitFailure      = 1  // not an API answer: network, timeout, unexpected body
	ExitUsage        = 2  // bad command line or missing SANDMAN_API_KEY
	ExitInvalid      = 3  // invalid, too_large: fix the input
	ExitUnauthorized = 4  // unauthorized: the key is missing or wrong
	ExitForbidden    = 5  // forbidden: another account's session
	ExitNotFound     = 6  // not_found
	ExitConflict     = 7  // conflict: the state does not allow it, or a lost race
	ExitPaused       = 8  // sandbox_paused: resume first
	ExitUnavailable  = 9  // unavailable, sandbox_unreachable: retry later
	ExitExpired      = 10 // sandbox_expired: the sandbox is gone
	ExitInternal     = 11 // internal: a server bug
)

// exitByType maps an error envelope's error_type to an exit status.
var exitByType = map[string]int{
	"invalid": ExitInvalid, "too_large": ExitInvalid,
	"unauthorized": ExitUnauthorized, "forbidden": ExitForbidden, "not_found": ExitNotFound,
	"conflict": ExitConflict, "sandbox_paused": ExitPaused,
	"checkpoint_saving": ExitConflict, "checkpoint_failed": ExitConflict, "checkpoint_expired": ExitConflict,
	"unavailable": ExitUnavailable, "sandbox_unreachable": ExitUnavailable,
	"sandbox_expired": ExitExpired, "internal": ExitInternal,
}

// ExitCode returns the exit status for err: ExitOK for nil, by error_type
// for an *APIError (by HTTP status class when the type is unknown: 5xx
// ExitUnavailable, 4xx ExitInvalid), ExitUsage for a usage error, and
// ExitFailure for anything else.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ue usageError
	if errors.As(err, &ue) {
		return ExitUsage
	}
	var ae *APIError
	if !errors.As(err, &ae) {
		return ExitFailure
	}
	if c, ok := exitByType[ae.ErrorType]; ok {
		return c
	}
	switch {
	case ae.Status >= 500:
		return ExitUnavailable
	case ae.Status >= 400:
		return ExitInvalid
	}
	return ExitFailure
}

// usageError is a bad command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// Usage is the help of `sandman sessions`.
const Usage = `usage: sandman sessions <command> [flags] [id]

commands:
  list       the caller's sessions, newest first (--limit N, --cursor C, --all)
  get        one session
  create     create a session (--template, --idle-timeout 10m, --max-lifetime 2h,
             --metadata k=v (repeatable), --idempotency-key K)
  delete     kill the sandbox; the session becomes killed (--purge: its checkpoints too)
  restore    restore the session in place from one of its checkpoints (--checkpoint ID)
  fork       a new session from a checkpoint (--checkpoint ID; none: the current state),
             --metadata k=v (repeatable), --idempotency-key K
  resume     resume a paused session; prints the fresh preview URL
  pause      pause now (idempotent); snapshot is the same command
  status     state and lifecycle envelope from the database (no provider call)
  reconnect  probe the sandbox live (never wakes a paused one)
  watch      follow a session's status live until it is final or --until STATE
             (--interval 2s)

flags of every command:
  -o table|json   output (default table; watch writes one JSON object a line)
  --url URL       the API (default $SANDMAN_URL, else http://127.0.0.1:8080)
  --api-key KEY   the API key (default $SANDMAN_API_KEY)

exit status: 0 ok, 1 no answer from the API, 2 usage, 3 invalid, 4 unauthorized,
5 forbidden, 6 not_found, 7 conflict (checkpoint_saving, _failed, _expired too), 8 sandbox_paused, 9 unavailable or
sandbox_unreachable (retry), 10 sandbox_expired, 11 internal.
`

// DefaultURL is the API when neither --url nor SANDMAN_URL is set: the local
// stack of `make run`.
const DefaultURL = "http://127.0.0.1:8080"

// Env is what Main reads from its environment.
type Env struct {
	Stdout, Stderr io.Writer
	// Getenv reads SANDMAN_URL and SANDMAN_API_KEY (os.Getenv).
	Getenv func(string) string
	// HTTP, when set, replaces the client's default HTTP client.
	HTTP *http.Client
	// After, when set, replaces time.After in watch (tests).
	After func(time.Duration) <-chan time.Time
}

// Main runs `sandman sessions <args>` and returns the exit status; errors
// are written to Stderr as "sandman sessions <command>: <error>".
func Main(ctx context.Context, args []string, env Env) int {
	err := run(ctx, args, env)
	if err != nil {
		name := "sandman sessions"
		if len(args) > 0 {
			name += " " + args[0]
		}
		fmt.Fprintf(env.Stderr, "%s: %v\n", name, err)
		if ExitCode(err) == ExitUsage {
			fmt.Fprint(env.Stderr, "\n"+Usage)
		}
	}
	return ExitCode(err)
}

// metadataFlag collects repeated --metadata k=v.
type metadataFlag map[string]string

func (m metadataFlag) String() string { return "" }

func (m metadataFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, not %q", v)
	}
	m[k] = val
	return nil
}

// command is one parsed command line.
type command struct {
	name    string
	output  string
	client  *Client
	args    []string // positional
	limit   int
	cursor  string
	all     bool
	create  CreateRequest
	idemKey string
	every   time.Duration
	until   string
	// checkpoint and purge are restore's, fork's and delete's flags.
	checkpoint string
	purge      bool
}

func run(ctx context.Context, args []string, env Env) error {
	if len(args) == 0 || slices.Contains([]string{"-h", "-help", "--help", "help"}, args[0]) {
		if len(args) == 0 {
			return usagef("a command is required")
		}
		fmt.Fprint(env.Stdout, Usage)
		return nil
	}
	c, err := parse(args, env)
	if err != nil {
		return err
	}
	return c.exec(ctx, env)
}

// parse reads the command line; flags may come before or after the id.
func parse(args []string, env Env) (*command, error) {
	c := &command{name: args[0]}
	fs := flag.NewFlagSet("sandman sessions "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.output, "o", "table", "output: table or json")
	baseURL := fs.String("url", "", "the API's URL")
	apiKey := fs.String("api-key", "", "the API key")
	var idle, lifetime time.Duration
	meta := metadataFlag{}
	switch c.name {
	case "list":
		fs.IntVar(&c.limit, "limit", 0, "page size 1..100")
		fs.StringVar(&c.cursor, "cursor", "", "next_cursor of the previous page")
		fs.BoolVar(&c.all, "all", false, "every page")
	case "create":
		fs.StringVar(&c.create.Template, "template", "", "provider template")
		fs.DurationVar(&idle, "idle-timeout", 0, "idle timeout (1m..24h)")
		fs.DurationVar(&lifetime, "max-lifetime", 0, "max lifetime (0: none)")
		fs.Var(meta, "metadata", "key=value (repeatable)")
		fs.StringVar(&c.idemKey, "idempotency-key", "", "Idempotency-Key")
	case "watch":
		fs.DurationVar(&c.every, "interval", 2*time.Second, "poll interval")
		fs.StringVar(&c.until, "until", "", "stop when the session reaches this state")
	case "delete":
		fs.BoolVar(&c.purge, "purge", false, "delete the session's checkpoints too")
	case "restore":
		fs.StringVar(&c.checkpoint, "checkpoint", "", "the checkpoint id")
	case "fork":
		fs.StringVar(&c.checkpoint, "checkpoint", "", "the checkpoint id (none: the current state)")
		fs.Var(meta, "metadata", "key=value (repeatable)")
		fs.StringVar(&c.idemKey, "idempotency-key", "", "Idempotency-Key")
	case "get", "resume", "pause", "snapshot", "status", "reconnect":
	default:
		return nil, usagef("unknown command %q", c.name)
	}
	rest := args[1:]
	for {
		if err := fs.Parse(rest); err != nil {
			return nil, usagef("%v", err)
		}
		rest = fs.Args()
		if len(rest) == 0 {
			break
		}
		c.args = append(c.args, rest[0])
		rest = rest[1:]
	}
	if c.output != "table" && c.output != "json" {
		return nil, usagef("-o must be table or json, not %q", c.output)
	}
	wantArgs := 1
	if c.name == "list" || c.name == "create" {
		wantArgs = 0
	}
	if len(c.args) != wantArgs {
		if wantArgs == 0 {
			return nil, usagef("%s takes no arguments, got %q", c.name, c.args)
		}
		return nil, usagef("%s takes one session id", c.name)
	}
	if idle%time.Second != 0 || lifetime%time.Second != 0 || idle < 0 || lifetime < 0 {
		return nil, usagef("--idle-timeout and --max-lifetime are whole seconds, e.g. 90s or 10m")
	}
	c.create.IdleTimeoutSeconds = int64(idle / time.Second)
	c.create.MaxLifetimeSeconds = int64(lifetime / time.Second)
	if len(meta) > 0 {
		c.create.Metadata = meta
	}
	u := *baseURL
	if u == "" {
		u = env.Getenv("SANDMAN_URL")
	}
	if u == "" {
		u = DefaultURL
	}
	key := *apiKey
	if key == "" {
		key = env.Getenv("SANDMAN_API_KEY")
	}
	if key == "" {
		return nil, usagef("no API key: set SANDMAN_API_KEY or pass --api-key")
	}
	c.client = &Client{BaseURL: u, APIKey: key, HTTP: env.HTTP}
	return c, nil
}

func (c *command) exec(ctx context.Context, env Env) error {
	out := env.Stdout
	var id string
	if len(c.args) > 0 {
		id = c.args[0]
	}
	switch c.name {
	case "list":
		return c.list(ctx, out)
	case "get":
		s, raw, err := c.client.Get(ctx, id)
		return c.print(out, raw, err, func(w io.Writer) { sessionTable(w, s) })
	case "create":
		s, raw, err := c.client.Create(ctx, c.create, c.idemKey)
		return c.print(out, raw, err, func(w io.Writer) { sessionTable(w, s) })
	case "delete":
		s, raw, err := c.client.Delete(ctx, id, c.purge)
		return c.print(out, raw, err, func(w io.Writer) { sessionTable(w, s) })
	case "restore":
		if c.checkpoint == "" {
			return usagef("restore needs --checkpoint")
		}
		s, raw, err := c.client.Restore(ctx, id, c.checkpoint)
		return c.print(out, raw, err, func(w io.Writer) { sessionTable(w, s) })
	case "fork":
		s, raw, err := c.client.Fork(ctx, id, ForkRequest{CheckpointID: c.checkpoint, Metadata: c.create.Metadata}, c.idemKey)
		return c.print(out, raw, err, func(w io.Writer) { sessionTable(w, s) })
	case "resume":
		r, raw, err := c.client.Resume(ctx, id)
		return c.print(out, raw, err, func(w io.Writer) { sessionTable(w, r.Session) })
	case "pause", "snapshot": // snapshot: the command's former name, like the API's alias
		r, raw, err := c.client.Pause(ctx, id)
		return c.print(out, raw, err, func(w io.Writer) {
			fmt.Fprintf(w, "paused\t%t\n", r.Paused)
			sessionTable(w, r.Session)
		})
	case "status":
		s, raw, err := c.client.Status(ctx, id)
		return c.print(out, raw, err, func(w io.Writer) { statusTable(w, s) })
	case "reconnect":
		r, raw, err := c.client.Reconnect(ctx, id)
		return c.print(out, raw, err, func(w io.Writer) {
			rows(w, [][2]string{{"status", r.Status}, {"session_id", r.SessionID}, {"state", r.State},
				{"expires_at", orDash(r.ExpiresAt)}, {"preview_url", orDash(r.PreviewURL)},
				{"pause_deadline", orDash(r.Lifecycle.PauseDeadline)}})
		})
	case "watch":
		return c.watch(ctx, env, id)
	}
	return usagef("unknown command %q", c.name)
}

// print writes one answer: the API's JSON indented with -o json, else the
// table.
func (c *command) print(out io.Writer, raw []byte, err error, table func(io.Writer)) error {
	if err != nil {
		return err
	}
	if c.output == "json" {
		var buf bytes.Buffer
		if json.Indent(&buf, raw, "", "  ") != nil {
			buf.Reset()
			buf.Write(raw)
		}
		buf.WriteByte('\n')
		_, err := out.Write(buf.Bytes())
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

func (c *command) list(ctx context.Context, out io.Writer) error {
	var all SessionList
	cursor := c.cursor
	for {
		page, raw, err := c.client.List(ctx, c.limit, cursor)
		if err != nil {
			return err
		}
		if !c.all {
			return c.print(out, raw, nil, func(w io.Writer) { listTable(w, page) })
		}
		all.Sessions = append(all.Sessions, page.Sessions...)
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	if all.Sessions == nil {
		all.Sessions = []Session{}
	}
	raw, err := json.Marshal(all)
	if err != nil {
		return fmt.Errorf("encode sessions: %w", err)
	}
	return c.print(out, raw, nil, func(w io.Writer) { listTable(w, all) })
}

func (c *command) watch(ctx context.Context, env Env, id string) error {
	f := &PollFollower{Client: c.client, Interval: c.every, After: env.After,
		OnRetry: func(err error) { fmt.Fprintf(env.Stderr, "sandman sessions watch: %v; polling again\n", err) }}
	enc := json.NewEncoder(env.Stdout)
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	if c.output == "table" {
		fmt.Fprintln(tw, "TIME\tSTATE\tPAUSE_DEADLINE\tPREVIEW_URL")
	}
	return f.Follow(ctx, id, func(s Status) (bool, error) {
		if c.output == "json" {
			if err := enc.Encode(s); err != nil {
				return false, err
			}
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", orDash(s.Lifecycle.ServerTime), s.State,
				orDash(s.Lifecycle.PauseDeadline), orDash(s.PreviewURL))
			if err := tw.Flush(); err != nil {
				return false, err
			}
		}
		return finalStates[s.State] || (c.until != "" && s.State == c.until), nil
	})
}

// orDash returns *p, or "-" for null or "".
func orDash(p *string) string {
	if p == nil || *p == "" {
		return "-"
	}
	return *p
}

func rows(w io.Writer, kv [][2]string) {
	for _, r := range kv {
		fmt.Fprintf(w, "%s\t%s\n", r[0], r[1])
	}
}

func sessionTable(w io.Writer, s Session) {
	meta := make([]string, 0, len(s.Metadata))
	for k, v := range s.Metadata {
		meta = append(meta, k+"="+v)
	}
	slices.Sort(meta)
	m := strings.Join(meta, ",")
	seconds := func(n int64, zero string) string {
		if n == 0 {
			return zero
		}
		return (time.Duration(n) * time.Second).String()
	}
	// Every field of the API's session (internal/openapi/api.Session).
	rows(w, [][2]string{
		{"id", s.ID}, {"account_id", s.AccountID}, {"state", s.State}, {"reason", s.Reason}, {"provider", s.Provider},
		{"template", s.Template}, {"sandbox_id", orDash(s.SandboxID)}, {"preview_url", orDash(s.PreviewURL)},
		{"idle_timeout", (time.Duration(s.IdleTimeoutSeconds) * time.Second).String()},
		{"max_lifetime", seconds(s.MaxLifetimeSeconds, "none")},
		{"away_timeout", seconds(s.AwayTimeoutSeconds, "off")}, {"away_deadline", orDash(s.AwayDeadline)},
		{"pause_deadline", orDash(s.PauseDeadline)}, {"idle_deadline", orDash(s.IdleDeadline)},
		{"last_activity_at", orDash(s.LastActivityAt)}, {"running_since", orDash(s.RunningSince)},
		{"paused_at", orDash(s.PausedAt)}, {"sandbox_expires_at", orDash(s.SandboxExpiresAt)},
		{"created_at", orDash(s.CreatedAt)}, {"updated_at", orDash(s.UpdatedAt)},
		{"version", fmt.Sprint(s.Version)}, {"metadata", orDash(&m)}, {"app", appSummary(s.App)},
		{"readiness", orDash(s.Readiness)}, {"readiness_detail", orDash(s.ReadinessDetail)}, {"ready_at", orDash(s.ReadyAt)},
		{"resume_on_return", fmt.Sprint(s.ResumeOnReturn)}, {"from_pool", fmt.Sprint(s.FromPool)},
		{"forked_from", forkSummary(s.ForkedFrom)}, {"checkpoint_on_pause", fmt.Sprint(s.CheckpointOnPause)},
		{"checkpoint_every", seconds(s.CheckpointEverySeconds, "off")}, {"checkpoints_keep", fmt.Sprint(s.CheckpointsKeep)},
		{"restore_checkpoint_id", orDash(s.RestoreCheckpointID)}, {"restore_error", orDash(s.RestoreError)},
	})
}

// forkSummary is one line for what a session was forked from, "-" for
// none.
func forkSummary(f *api.ForkOrigin) string {
	if f == nil {
		return "-"
	}
	return f.SessionID + " at " + f.CheckpointID
}

// appSummary is one line for a session's app spec: the start command, the
// port and ready path, "-" without an app.
func appSummary(a *api.App) string {
	if a == nil {
		return "-"
	}
	return fmt.Sprintf("%q on port %d, ready at %s within %s", a.StartCommand, a.Port, a.ReadyPath,
		time.Duration(a.ReadyTimeoutSeconds)*time.Second)
}

func statusTable(w io.Writer, s Status) {
	rows(w, [][2]string{
		{"session_id", s.SessionID}, {"state", s.State}, {"sandbox_paused", fmt.Sprint(s.SandboxPaused)},
		{"has_snapshot", fmt.Sprint(s.HasSnapshot)}, {"preview_url", orDash(s.PreviewURL)},
		{"last_activity_at", orDash(s.Lifecycle.LastActivityAt)}, {"pause_deadline", orDash(s.Lifecycle.PauseDeadline)},
		{"sandbox_expires_at", orDash(s.Lifecycle.SandboxExpiresAt)}, {"server_time", orDash(s.Lifecycle.ServerTime)},
	})
}

func listTable(w io.Writer, l SessionList) {
	fmt.Fprintln(w, "ID\tSTATE\tPROVIDER\tTEMPLATE\tCREATED\tPREVIEW_URL")
	for _, s := range l.Sessions {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.State, s.Provider, s.Template, orDash(s.CreatedAt), orDash(s.PreviewURL))
	}
	if l.NextCursor != nil {
		fmt.Fprintf(w, "\nmore: --cursor %s\n", *l.NextCursor)
	}
}
