package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// WebhooksUsage is the help of `sandman webhooks`.
const WebhooksUsage = `usage: sandman webhooks <command> [flags] [ids]

commands:
  list        the account's webhook endpoints
  create      register an endpoint (--url URL, --event-type session.paused (repeatable;
              none: every type), --description TEXT); prints its secret, shown once
  delete      delete an endpoint: sandman webhooks delete <endpoint id>
  deliveries  an endpoint's delivery log, newest first (--limit N, --cursor C):
              sandman webhooks deliveries <endpoint id>
  retry       send a delivery again now: sandman webhooks retry <endpoint id> <delivery id>

flags of every command: -o table|json, --url-api URL (default $SANDMAN_URL), --api-key KEY
(default $SANDMAN_API_KEY). Exit status as for sandman sessions.
`

// repeated collects a repeatable flag.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// WebhooksMain runs `sandman webhooks <args>` and returns the exit status.
func WebhooksMain(ctx context.Context, args []string, env Env) int {
	err := runWebhooks(ctx, args, env)
	if err != nil {
		name := "sandman webhooks"
		if len(args) > 0 {
			name += " " + args[0]
		}
		fmt.Fprintf(env.Stderr, "%s: %v\n", name, err)
		if ExitCode(err) == ExitUsage {
			fmt.Fprint(env.Stderr, "\n"+WebhooksUsage)
		}
	}
	return ExitCode(err)
}

func runWebhooks(ctx context.Context, args []string, env Env) error {
	if len(args) == 0 {
		return usagef("a command is required")
	}
	if slices.Contains([]string{"-h", "-help", "--help", "help"}, args[0]) {
		fmt.Fprint(env.Stdout, WebhooksUsage)
		return nil
	}
	name := args[0]
	fs := flag.NewFlagSet("sandman webhooks "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := &command{name: name}
	fs.StringVar(&c.output, "o", "table", "output: table or json")
	baseURL := fs.String("url-api", "", "the API's URL")
	apiKey := fs.String("api-key", "", "the API key")
	var in api.WebhookEndpointRequest
	var target, description string
	var types repeated
	wantArgs := 0
	switch name {
	case "list":
	case "create":
		fs.StringVar(&target, "url", "", "the endpoint's URL")
		fs.StringVar(&description, "description", "", "a description")
		fs.Var(&types, "event-type", "an event type (repeatable)")
	case "delete":
		wantArgs = 1
	case "deliveries":
		wantArgs = 1
		fs.IntVar(&c.limit, "limit", 0, "page size 1..100")
		fs.StringVar(&c.cursor, "cursor", "", "next_cursor of the previous page")
	case "retry":
		wantArgs = 2
	default:
		return usagef("unknown command %q", name)
	}
	if err := c.parseArgs(fs, args[1:], wantArgs); err != nil {
		return err
	}
	if name == "create" {
		if target == "" {
			return usagef("create needs --url")
		}
		in.URL = &target
		if description != "" {
			in.Description = &description
		}
		if len(types) > 0 {
			t := []string(types)
			in.EventTypes = &t
		}
	}
	if err := c.connect(*baseURL, *apiKey, env); err != nil {
		return err
	}
	out := env.Stdout
	const root = "/v1/webhook-endpoints"
	switch name {
	case "list":
		var l api.WebhookEndpointList
		raw, err := c.client.do(ctx, http.MethodGet, root, nil, nil, nil, &l)
		return c.print(out, raw, err, func(w io.Writer) {
			fmt.Fprintln(w, "ID\tURL\tEVENT TYPES\tDISABLED\tFAILING SINCE")
			for _, e := range l.WebhookEndpoints {
				fmt.Fprintf(w, "%s\t%s\t%s\t%t\t%s\n", e.ID, e.URL, typesText(e.EventTypes), e.Disabled, orDash(e.FailingSince))
			}
		})
	case "create":
		var e api.WebhookEndpoint
		raw, err := c.client.do(ctx, http.MethodPost, root, nil, in, nil, &e)
		return c.print(out, raw, err, func(w io.Writer) {
			rows(w, [][2]string{{"id", e.ID}, {"url", e.URL}, {"event_types", typesText(e.EventTypes)},
				{"secret", e.Secret + "   (shown once: keep it now)"}})
		})
	case "delete":
		_, err := c.client.do(ctx, http.MethodDelete, root+"/"+url.PathEscape(c.args[0]), nil, nil, nil, nil)
		if err == nil && c.output == "table" {
			fmt.Fprintf(out, "deleted %s\n", c.args[0])
		}
		return err
	case "deliveries":
		q := url.Values{}
		if c.limit > 0 {
			q.Set("limit", strconv.Itoa(c.limit))
		}
		if c.cursor != "" {
			q.Set("cursor", c.cursor)
		}
		var l api.WebhookDeliveryList
		raw, err := c.client.do(ctx, http.MethodGet, root+"/"+url.PathEscape(c.args[0])+"/deliveries", q, nil, nil, &l)
		return c.print(out, raw, err, func(w io.Writer) { deliveriesTable(w, l) })
	case "retry":
		var d api.WebhookDelivery
		raw, err := c.client.do(ctx, http.MethodPost,
			root+"/"+url.PathEscape(c.args[0])+"/deliveries/"+url.PathEscape(c.args[1])+"/retry", nil, nil, nil, &d)
		return c.print(out, raw, err, func(w io.Writer) {
			deliveriesTable(w, api.WebhookDeliveryList{Deliveries: []api.WebhookDelivery{d}})
		})
	}
	return usagef("unknown command %q", name)
}

// parseArgs parses rest with fs, flags before or after the positional
// arguments, which it keeps in c.args. Errors: usage (a bad flag, -o, or
// not wantArgs arguments).
func (c *command) parseArgs(fs *flag.FlagSet, rest []string, wantArgs int) error {
	for {
		if err := fs.Parse(rest); err != nil {
			return usagef("%v", err)
		}
		if rest = fs.Args(); len(rest) == 0 {
			break
		}
		c.args, rest = append(c.args, rest[0]), rest[1:]
	}
	if c.output != "table" && c.output != "json" {
		return usagef("-o must be table or json, not %q", c.output)
	}
	if len(c.args) != wantArgs {
		return usagef("%s takes %d argument(s), got %q", c.name, wantArgs, c.args)
	}
	return nil
}

// connect sets c's client from the flags, else SANDMAN_URL and
// SANDMAN_API_KEY. Errors: usage when there is no API key.
func (c *command) connect(baseURL, apiKey string, env Env) error {
	key := firstNonEmpty(apiKey, env.Getenv("SANDMAN_API_KEY"))
	if key == "" {
		return usagef("no API key: set SANDMAN_API_KEY or pass --api-key")
	}
	c.client = &Client{BaseURL: firstNonEmpty(baseURL, env.Getenv("SANDMAN_URL"), DefaultURL), APIKey: key, HTTP: env.HTTP}
	return nil
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

func typesText(ts []string) string {
	if len(ts) == 0 {
		return "(all)"
	}
	return strings.Join(ts, ",")
}

// deliveriesTable writes one row per delivery, with its attempts' status
// codes in order ("-" for no answer).
func deliveriesTable(w io.Writer, l api.WebhookDeliveryList) {
	fmt.Fprintln(w, "ID\tEVENT\tTYPE\tSTATUS\tATTEMPTS\tNEXT ATTEMPT")
	for _, d := range l.Deliveries {
		codes := make([]string, 0, len(d.Attempts))
		for _, a := range d.Attempts {
			if a.StatusCode != nil {
				codes = append(codes, strconv.Itoa(*a.StatusCode))
			} else {
				codes = append(codes, "-")
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", d.ID, d.EventID, d.EventType, d.Status, strings.Join(codes, ","), orDash(d.NextAttemptAt))
	}
	if l.NextCursor != nil {
		fmt.Fprintf(w, "next_cursor\t%s\n", *l.NextCursor)
	}
}
