package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// WebhooksUsage is the help of `sandman webhooks`.
const WebhooksUsage = `usage: sandman webhooks <command> [flags] [arguments]

commands:
  list        the account's webhook endpoints
  create      register an endpoint: sandman webhooks create <endpoint URL> (--event-type
              session.paused (repeatable; none: every type), --description TEXT); prints its
              secret, shown once
  delete      delete an endpoint: sandman webhooks delete <endpoint id>
  deliveries  an endpoint's delivery log, newest first (--limit N, --cursor C):
              sandman webhooks deliveries <endpoint id>
  retry       send a delivery again now: sandman webhooks retry <endpoint id> <delivery id>

flags of every command: -o table|json, --url URL (the API; default $SANDMAN_URL), --api-key KEY
(default $SANDMAN_API_KEY, else .sandman/dev_api_key for an API on this machine). Exit status
as for sandman sessions.
`

// repeated collects a repeatable flag.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// WebhooksMain runs `sandman webhooks <args>` and returns the exit status.
func WebhooksMain(ctx context.Context, args []string, env Env) int {
	return report(env, "sandman webhooks", args, runWebhooks(ctx, args, env))
}

func runWebhooks(ctx context.Context, args []string, env Env) error {
	c, fs, err := subcommand("sandman webhooks", args, env, WebhooksUsage)
	if c == nil {
		return err
	}
	name := c.name
	var in api.WebhookEndpointRequest
	var description string
	var types repeated
	wantArgs := 0
	switch name {
	case "list":
	case "create":
		wantArgs = 1
		fs.StringVar(&description, "description", "", "a description")
		fs.Var(&types, "event-type", "an event type (repeatable)")
	case "delete":
		wantArgs = 1
	case "deliveries":
		wantArgs = 1
		fs.Var(&c.limit, "limit", "page size 1..100")
		fs.StringVar(&c.cursor, "cursor", "", "next_cursor of the previous page")
	case "retry":
		wantArgs = 2
	default:
		return usagef("unknown command %q", name)
	}
	if help, err := c.parseArgs(fs, args[1:], env, WebhooksUsage); help || err != nil {
		return err
	}
	if name == "create" && len(c.args) == 0 {
		return usagef("create takes the endpoint's URL: sandman webhooks create https://example.com/hooks (--url is the API's URL)")
	}
	if err := c.wantArgs(wantArgs); err != nil {
		return err
	}
	if name == "create" {
		in.URL = &c.args[0]
		if description != "" {
			in.Description = &description
		}
		if len(types) > 0 {
			t := []string(types)
			in.EventTypes = &t
		}
	}
	if c.client, err = c.commonFlags.client(env, "sandman webhooks "+name); err != nil {
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
		var l api.WebhookDeliveryList
		raw, err := c.client.do(ctx, http.MethodGet, root+"/"+url.PathEscape(c.args[0])+"/deliveries", pageQuery(c.limit.n, c.cursor), nil, nil, &l)
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
