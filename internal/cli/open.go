package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// The flags of `sandman sessions create` for its app, `sandman sessions
// open` (the stable link) and `sandman client-tokens`.

// appFlags are create's --app (a start command, or the API's app spec as a
// JSON object) and --app-port.
type appFlags struct {
	app  string
	port intFlag
}

func (a *appFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.app, "app", "", `the app's start command, or its spec as JSON ({"port":3000,"start_command":…})`)
	fs.Var(&a.port, "app-port", "the port the app listens on")
}

// request returns the app spec of a create, nil without --app or
// --app-port. Errors: a usage error for --app JSON that is not an app spec.
func (a *appFlags) request() (*AppRequest, error) {
	if a.app == "" && a.port.n == 0 {
		return nil, nil
	}
	var spec AppRequest
	if strings.HasPrefix(strings.TrimSpace(a.app), "{") {
		dec := json.NewDecoder(strings.NewReader(a.app))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&spec); err != nil {
			return nil, usagef("--app: not an app spec as JSON: %v", err)
		}
	} else if a.app != "" {
		cmd := a.app
		spec.StartCommand = &cmd
	}
	if a.port.n != 0 {
		port := a.port.n
		spec.Port = &port
	}
	return &spec, nil
}

// openFlags are open's: --token mints a client token for the link, --ttl
// its lifetime, --path a page under the preview.
type openFlags struct {
	token bool
	ttl   durationFlag
	path  string
}

func (o *openFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&o.token, "token", false, "mint a client token and put it in the link (?token=)")
	fs.Var(&o.ttl, "ttl", "the token's lifetime (default 15m, at most 24h)")
	fs.StringVar(&o.path, "path", "", "a page under the preview, e.g. /dashboard")
}

// openLink prints the session's stable link (docs/WAKE.md): GET
// /v1/sessions/{id}/open[/path], with ?token= when --token minted one. It
// reads the session first, so a wrong id fails here rather than in the
// browser; reading is not activity, and the link wakes nothing until it is
// opened. -o json prints {"url","expires_at"} (expires_at null without a
// token).
func (c *command) openLink(ctx context.Context, out io.Writer, id string) error {
	if c.open.ttl.set && !c.open.token {
		return usagef("--ttl is the token's lifetime: add --token")
	}
	link := strings.TrimRight(c.client.BaseURL, "/") + sessionPath(id, "open")
	for _, seg := range strings.Split(strings.Trim(c.open.path, "/"), "/") {
		if seg != "" {
			link += "/" + url.PathEscape(seg)
		}
	}
	var expires *string
	if c.open.token {
		tok, _, err := c.client.ClientToken(ctx, id, c.open.ttl.seconds())
		if err != nil {
			return err
		}
		link += "?token=" + url.QueryEscape(tok.Token)
		expires = &tok.ExpiresAt
	} else if _, _, err := c.client.Get(ctx, id); err != nil {
		return err
	}
	if c.output == "json" {
		return json.NewEncoder(out).Encode(struct {
			URL       string  `json:"url"`
			ExpiresAt *string `json:"expires_at"`
		}{link, expires})
	}
	_, err := fmt.Fprintln(out, link)
	return err
}

// ClientToken mints a client token for session id (POST
// /v1/sessions/{id}/client-tokens), ttlSeconds long (0: the API's 15 min).
func (c *Client) ClientToken(ctx context.Context, id string, ttlSeconds int64) (ClientToken, []byte, error) {
	var body any
	if ttlSeconds > 0 {
		body = map[string]int64{"ttl_seconds": ttlSeconds}
	}
	var out ClientToken
	raw, err := c.do(ctx, http.MethodPost, sessionPath(id, "client-tokens"), nil, body, nil, &out)
	return out, raw, err
}

// ClientTokensUsage is the help of `sandman client-tokens`.
const ClientTokensUsage = `usage: sandman client-tokens create <session id> [--ttl 15m] [flags]

Mints a client token for one session (POST /v1/sessions/{id}/client-tokens): what a
browser sends instead of an API key, for that session's status, activity, resume,
stable link and client channel (docs/DESIGN.md "Client channel"). Prints the token,
when it expires and the channel's ws_url.

flags: --ttl DURATION (default 15m, at most 24h), -o table|json, --url URL (default
$SANDMAN_URL), --api-key KEY (default $SANDMAN_API_KEY, else .sandman/dev_api_key for an
API on this machine). Exit status as for sandman sessions.
`

// ClientTokensMain runs `sandman client-tokens <args>` and returns the
// exit status.
func ClientTokensMain(ctx context.Context, args []string, env Env) int {
	return report(env, "sandman client-tokens", args, runClientTokens(ctx, args, env))
}

func runClientTokens(ctx context.Context, args []string, env Env) error {
	if len(args) == 0 {
		return usagef("a command is required: create")
	}
	if isHelp(args[0]) {
		fmt.Fprint(env.Stdout, ClientTokensUsage)
		return nil
	}
	if args[0] != "create" {
		return usagef("unknown command %q", args[0])
	}
	c := &command{name: "create"}
	fs := newFlagSet("sandman client-tokens create")
	c.register(fs)
	var ttl durationFlag
	fs.Var(&ttl, "ttl", "the token's lifetime")
	pos, err := parseFlags(fs, args[1:])
	if errors.Is(err, errHelp) {
		fmt.Fprint(env.Stdout, ClientTokensUsage)
		return nil
	}
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("create takes one session id")
	}
	if c.client, err = c.commonFlags.client(env, "sandman client-tokens create"); err != nil {
		return err
	}
	tok, raw, err := c.client.ClientToken(ctx, pos[0], ttl.seconds())
	return c.print(env.Stdout, raw, err, func(w io.Writer) {
		rows(w, [][2]string{{"token", tok.Token}, {"expires_at", tok.ExpiresAt}, {"ws_url", orDash(tok.WSURL)}})
	})
}
