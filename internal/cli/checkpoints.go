package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// CheckpointsUsage is the help of `sandman checkpoints`.
const CheckpointsUsage = `usage: sandman checkpoints <command> [flags] <session id> [checkpoint id]

A session's checkpoints (docs/CHECKPOINTS.md); restore and fork are sandman sessions
restore|fork.

commands:
  create   save the session's sandbox: sandman checkpoints create <session id>
           (--label TEXT, --metadata k=v (repeatable), --pin, --idempotency-key K);
           it answers saving, a job makes it ready
  list     the session's checkpoints, newest first (--limit N, --cursor C)
  get      one checkpoint: sandman checkpoints get <session id> <checkpoint id>
  delete   delete one and its snapshot or archive: sandman checkpoints delete <session id> <checkpoint id>

flags of every command: -o table|json, --url-api URL (default $SANDMAN_URL), --api-key KEY
(default $SANDMAN_API_KEY). Exit status as for sandman sessions.
`

// CheckpointsMain runs `sandman checkpoints <args>` and returns the exit
// status.
func CheckpointsMain(ctx context.Context, args []string, env Env) int {
	return report(env, "sandman checkpoints", args, runCheckpoints(ctx, args, env))
}

// checkpointBody is the body of POST …/checkpoints; zero fields are left
// out.
type checkpointBody struct {
	Label    string            `json:"label,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Pin      bool              `json:"pin,omitempty"`
}

func runCheckpoints(ctx context.Context, args []string, env Env) error {
	c, fs, err := subcommand("sandman checkpoints", args, env, CheckpointsUsage)
	if c == nil {
		return err
	}
	name := c.name
	var body checkpointBody
	meta := metadataFlag{}
	wantArgs := 1
	switch name {
	case "create":
		fs.StringVar(&body.Label, "label", "", "a label")
		fs.Var(meta, "metadata", "key=value (repeatable)")
		fs.BoolVar(&body.Pin, "pin", false, "keep it out of the automatic keep count")
		fs.StringVar(&c.idemKey, "idempotency-key", "", "Idempotency-Key")
	case "list":
		fs.Var(&c.limit, "limit", "page size 1..100")
		fs.StringVar(&c.cursor, "cursor", "", "next_cursor of the previous page")
	case "get", "delete":
		wantArgs = 2
	default:
		return usagef("unknown command %q", name)
	}
	if help, err := c.parseArgs(fs, args[1:], env, CheckpointsUsage); help || err != nil {
		return err
	}
	if err := c.wantArgs(wantArgs); err != nil {
		return err
	}
	if len(meta) > 0 {
		body.Metadata = meta
	}
	if c.client, err = c.commonFlags.client(env, "sandman checkpoints "+name); err != nil {
		return err
	}
	root := sessionPath(c.args[0], "checkpoints")
	out := env.Stdout
	switch name {
	case "create":
		var h map[string]string
		if c.idemKey != "" {
			h = map[string]string{"Idempotency-Key": c.idemKey}
		}
		var cp api.Checkpoint
		raw, err := c.client.do(ctx, http.MethodPost, root, nil, body, h, &cp)
		return c.print(out, raw, err, func(w io.Writer) { checkpointTable(w, cp) })
	case "list":
		q := url.Values{}
		if c.limit.n > 0 {
			q.Set("limit", strconv.Itoa(c.limit.n))
		}
		if c.cursor != "" {
			q.Set("cursor", c.cursor)
		}
		var l api.CheckpointList
		raw, err := c.client.do(ctx, http.MethodGet, root, q, nil, nil, &l)
		return c.print(out, raw, err, func(w io.Writer) {
			fmt.Fprintln(w, "ID\tSTATE\tKIND\tTRIGGER\tSIZE\tCREATED\tEXPIRES\tLABEL")
			for _, cp := range l.Checkpoints {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", cp.ID, cp.State, cp.Kind, cp.Trigger, cp.SizeBytes,
					orDash(cp.CreatedAt), orDash(cp.ExpiresAt), cp.Label)
			}
			if l.NextCursor != nil {
				fmt.Fprintf(w, "next_cursor\t%s\n", *l.NextCursor)
			}
		})
	case "get":
		var cp api.Checkpoint
		raw, err := c.client.do(ctx, http.MethodGet, root+"/"+url.PathEscape(c.args[1]), nil, nil, nil, &cp)
		return c.print(out, raw, err, func(w io.Writer) { checkpointTable(w, cp) })
	case "delete":
		_, err := c.client.do(ctx, http.MethodDelete, root+"/"+url.PathEscape(c.args[1]), nil, nil, nil, nil)
		if err == nil && c.output == "table" {
			fmt.Fprintf(out, "deleted %s\n", c.args[1])
		}
		return err
	}
	return usagef("unknown command %q", name)
}

// checkpointTable writes one checkpoint, a row per field.
func checkpointTable(w io.Writer, cp api.Checkpoint) {
	rows(w, [][2]string{
		{"id", cp.ID}, {"session_id", cp.SessionID}, {"state", cp.State}, {"reason", orDash(cp.Reason)},
		{"kind", cp.Kind}, {"keeps", cp.Keeps}, {"size_bytes", strconv.FormatInt(cp.SizeBytes, 10)},
		{"trigger", cp.Trigger}, {"label", cp.Label}, {"pinned", fmt.Sprint(cp.Pinned)},
		{"created_at", orDash(cp.CreatedAt)}, {"expires_at", orDash(cp.ExpiresAt)},
	})
}
