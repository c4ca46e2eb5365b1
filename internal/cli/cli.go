package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Exit statuses of `sandman sessions` (docs/API.md "The CLI"). An error answer
// maps by its error_type; anything that is not an answer of the API (a
// network failure, a proxy's page) is ExitFailure.
const (
	ExitOK           = 0  // done
	ExitFailure      = 1  // not an API answer: network, timeout, unexpected body
	ExitUsage        = 2  // bad command line or no API key
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
  list       the caller's sessions, newest first (--limit N, --cursor C, --all; filters:
             --state running,paused, --provider P, --template T, --metadata k=v (repeatable))
  get        one session
  create     create a session (--template, --provider, --idle-timeout 10m, --max-lifetime 2h,
             --away-timeout 2m (0: presence off), --app 'npm run dev' or --app '{…}' with
             --app-port 3000, --metadata k=v (repeatable), --idempotency-key K)
  open       print the session's stable link (--token: with a new client token, --ttl 15m,
             --path /page)
  events     the session's timeline, newest first (--limit N, --cursor C, --all)
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
  --api-key KEY   the API key (default $SANDMAN_API_KEY; for an API on this machine,
                  else .sandman/dev_api_key, the key ` + "`make run`" + ` keeps)

exit status: 0 ok, 1 no answer from the API, 2 usage, 3 invalid, 4 unauthorized,
5 forbidden, 6 not_found, 7 conflict (checkpoint_saving, _failed, _expired too), 8 sandbox_paused, 9 unavailable or
sandbox_unreachable (retry), 10 sandbox_expired, 11 internal.
`

// Env is what Main reads from its environment.
type Env struct {
	Stdout, Stderr io.Writer
	// Getenv reads SANDMAN_URL, SANDMAN_API_KEY and SANDMAN_STATE_DIR
	// (os.Getenv).
	Getenv func(string) string
	// ReadFile reads the dev key file (os.ReadFile when nil).
	ReadFile func(string) ([]byte, error)
	// HTTP, when set, replaces the client's default HTTP client.
	HTTP *http.Client
	// After, when set, replaces time.After in watch (tests).
	After func(time.Duration) <-chan time.Time
}

// Main runs `sandman sessions <args>` and returns the exit status. An error
// is one line on Stderr: "sandman sessions <command>: <error>", and for a
// bad command line, where the help is.
func Main(ctx context.Context, args []string, env Env) int {
	return report(env, "sandman sessions", args, run(ctx, args, env))
}

// report writes err in one line for the command name (and its first
// argument) and returns its exit status.
func report(env Env, name string, args []string, err error) int {
	if err == nil {
		return ExitOK
	}
	cmd := name
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd += " " + args[0]
	}
	msg := err.Error()
	if ExitCode(err) == ExitUsage {
		msg += " (" + name + " help)"
	}
	fmt.Fprintf(env.Stderr, "%s: %s\n", cmd, msg)
	return ExitCode(err)
}

// isHelp reports whether arg asks for the usage.
func isHelp(arg string) bool { return slices.Contains([]string{"-h", "-help", "--help", "help"}, arg) }

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
	commonFlags
	name    string
	client  *Client
	args    []string // positional
	limit   intFlag
	cursor  string
	all     bool
	filter  ListFilter
	create  CreateRequest
	idemKey string
	every   time.Duration
	until   string
	open    openFlags
	// checkpoint and purge are restore's, fork's and delete's flags.
	checkpoint string
	purge      bool
}

func run(ctx context.Context, args []string, env Env) error {
	if len(args) == 0 {
		return usagef("a command is required")
	}
	if isHelp(args[0]) {
		fmt.Fprint(env.Stdout, Usage)
		return nil
	}
	c, err := parse(args, env)
	if errors.Is(err, errHelp) {
		fmt.Fprint(env.Stdout, Usage)
		return nil
	}
	if err != nil {
		return err
	}
	return c.exec(ctx, env)
}

// parse reads the command line; flags may come before or after the id.
func parse(args []string, env Env) (*command, error) {
	c := &command{name: args[0]}
	fs := newFlagSet("sandman sessions " + c.name)
	c.register(fs)
	var idle, lifetime, away durationFlag
	var app appFlags
	meta := metadataFlag{}
	wantArgs := 1
	switch c.name {
	case "list":
		wantArgs = 0
		fs.Var(&c.limit, "limit", "page size 1..100")
		fs.StringVar(&c.cursor, "cursor", "", "next_cursor of the previous page")
		fs.BoolVar(&c.all, "all", false, "every page")
		fs.StringVar(&c.filter.State, "state", "", "states, comma-separated")
		fs.StringVar(&c.filter.Provider, "provider", "", "a provider")
		fs.StringVar(&c.filter.Template, "template", "", "a template")
		fs.Var(meta, "metadata", "key=value (repeatable)")
	case "events":
		fs.Var(&c.limit, "limit", "page size 1..100")
		fs.StringVar(&c.cursor, "cursor", "", "next_cursor of the previous page")
		fs.BoolVar(&c.all, "all", false, "every page")
	case "create":
		wantArgs = 0
		fs.StringVar(&c.create.Template, "template", "", "provider template")
		fs.StringVar(&c.create.Provider, "provider", "", "the provider (default: the deployment's)")
		fs.Var(&idle, "idle-timeout", "idle timeout (1m..24h)")
		fs.Var(&lifetime, "max-lifetime", "max lifetime (0: none)")
		fs.Var(&away, "away-timeout", "how long it runs once its last visible client left (0: presence off)")
		app.register(fs)
		fs.Var(meta, "metadata", "key=value (repeatable)")
		fs.StringVar(&c.idemKey, "idempotency-key", "", "Idempotency-Key")
	case "open":
		c.open.register(fs)
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
	var err error
	if c.args, err = parseFlags(fs, args[1:]); err != nil {
		return nil, err
	}
	if len(c.args) != wantArgs {
		if wantArgs == 0 {
			return nil, usagef("%s takes no arguments, got %q", c.name, c.args)
		}
		return nil, usagef("%s takes one session id", c.name)
	}
	c.create.IdleTimeoutSeconds, c.create.MaxLifetimeSeconds = idle.seconds(), lifetime.seconds()
	if away.set {
		s := away.seconds()
		c.create.AwayTimeoutSeconds = &s
	}
	if c.create.App, err = app.request(); err != nil {
		return nil, err
	}
	if len(meta) > 0 {
		c.create.Metadata, c.filter.Metadata = meta, meta
	}
	c.client, err = c.commonFlags.client(env, "sandman sessions "+c.name)
	return c, err
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
	case "events":
		return c.events(ctx, out, id)
	case "open":
		return c.openLink(ctx, out, id)
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
	return printPages(c, out, func(cursor string) (SessionList, []byte, error) {
		return c.client.List(ctx, c.limit.n, cursor, c.filter)
	}, func(all *SessionList, page SessionList) *string {
		if all.Sessions == nil {
			all.Sessions = []Session{} // "sessions": [] even when none
		}
		all.Sessions = append(all.Sessions, page.Sessions...)
		return page.NextCursor
	}, listTable)
}

func (c *command) events(ctx context.Context, out io.Writer, id string) error {
	return printPages(c, out, func(cursor string) (SessionEventList, []byte, error) {
		return c.client.Events(ctx, id, c.limit.n, cursor)
	}, func(all *SessionEventList, page SessionEventList) *string {
		if all.Events == nil {
			all.Events = []SessionEvent{} // "events": [] even when none
		}
		all.Events = append(all.Events, page.Events...)
		return page.NextCursor
	}, eventsTable)
}

// printPages prints one page read with fetch from the command's cursor or,
// with --all, every page from there merged into one answer (merge appends
// a page and returns its next cursor).
func printPages[P any](c *command, out io.Writer, fetch func(cursor string) (P, []byte, error),
	merge func(all *P, page P) (next *string), table func(io.Writer, P)) error {
	var all P
	cursor := c.cursor
	for {
		page, raw, err := fetch(cursor)
		if err != nil {
			return err
		}
		if !c.all {
			return c.print(out, raw, nil, func(w io.Writer) { table(w, page) })
		}
		next := merge(&all, page)
		if next == nil {
			break
		}
		cursor = *next
	}
	raw, err := json.Marshal(all)
	if err != nil {
		return fmt.Errorf("encode the pages: %w", err)
	}
	return c.print(out, raw, nil, func(w io.Writer) { table(w, all) })
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
