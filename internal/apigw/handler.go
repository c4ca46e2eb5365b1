package apigw

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/clienttoken"
	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/httpapi"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/linkpage"
	"github.com/sandmanhq/sandman/internal/routes"
)

// corsMaxAgeSeconds is the Access-Control-Max-Age of a preflight answer, in
// seconds (routes.CORSMaxAgeSeconds, as the stack configures API Gateway).
var corsMaxAgeSeconds = strconv.Itoa(routes.CORSMaxAgeSeconds)

// Config is what a Handler is built from (New). Function, Service and Keys
// are required; every other zero field means the default named on it,
// filled in once by New.
type Config struct {
	// Function is the Lambda function whose routes the handler serves:
	// routes.Sessions, routes.Status, routes.Resume, routes.Pause or
	// routes.Reconnect. It serves exactly that function's rows of
	// routes.Table.
	Function string
	// Service runs every operation.
	Service *lifecycle.Service
	// Keys authenticates callers (usually the same store the service uses).
	Keys KeyStore
	// AllowOrigin is sent as Access-Control-Allow-Origin. Default "*".
	AllowOrigin string
	// Log receives the access line of every request and error details.
	// Its handler is wrapped with NewLogHandler. Default slog.Default().
	Log *slog.Logger
	// RequestTimeout bounds each request's context (the Lambda deadline,
	// when sooner, still applies). Default httpapi.DefaultRequestTimeout.
	RequestTimeout time.Duration
	// PreviewProber checks a preview URL for diagnose (default
	// lifecycle.HTTPPreviewProber(nil)); tests replace it.
	PreviewProber lifecycle.PreviewProber
	// Tokens mints and verifies client tokens (docs/DESIGN.md "Client channel").
	// Nil: the client-tokens route answers 503 and a client token is
	// refused (401) on every route.
	Tokens *clienttoken.Tokens
	// WSURL is the WebSocket URL a client-token answer names ("ws_url"),
	// such as "wss://abc.execute-api.eu-west-1.amazonaws.com/live"; "" for
	// null.
	WSURL string
	// Webhooks runs the /v1/webhook-endpoints routes (docs/WEBHOOKS.md).
	// Nil: they answer 503.
	Webhooks *delivery.Service
	// Brand is the look of the pages a browser sees on the stable link
	// (internal/linkpage; docs/WAKE.md "What a browser sees"). The zero
	// Brand is the default look.
	Brand linkpage.Brand
}

// routeFunc serves one route for an authenticated request.
type routeFunc func(ctx context.Context, r *request) (response, error)

// Handler serves the API routes of one Lambda function. Build it with New;
// it is safe for concurrent use.
type Handler struct {
	function string
	svc      *lifecycle.Service
	keys     KeyStore
	log      *slog.Logger
	respond  httpapi.Responder
	timeout  time.Duration
	prober   lifecycle.PreviewProber
	routes   map[string]routeFunc // by route key
	public   map[string]bool      // route keys that take no API key (routes.AuthNone)
	clientOK map[string]bool      // route keys that also take a client token
	// queryToken holds the route keys that take the client token as ?token=.
	queryToken map[string]bool
	tokens     *clienttoken.Tokens
	wsURL      string
	hooks      *delivery.Service
	brand      linkpage.Brand
}

// New returns the Handler of cfg.Function with the defaults of Config
// filled in. Errors: no Service or Keys, a function with no API routes, or
// a route of the table without an implementation here.
func New(cfg Config) (*Handler, error) {
	if cfg.Service == nil || cfg.Keys == nil {
		return nil, fmt.Errorf("apigw: a service and a key store are required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = httpapi.DefaultRequestTimeout
	}
	function := cfg.Function
	h := &Handler{
		function:   function,
		svc:        cfg.Service,
		keys:       cfg.Keys,
		log:        slog.New(httpapi.NewLogHandler(cfg.Log.Handler())),
		respond:    httpapi.Responder{AllowOrigin: cfg.AllowOrigin}, // "" is "*"
		timeout:    cfg.RequestTimeout,
		prober:     cfg.PreviewProber,
		routes:     map[string]routeFunc{},
		public:     map[string]bool{},
		clientOK:   map[string]bool{},
		queryToken: map[string]bool{},
		tokens:     cfg.Tokens,
		wsURL:      cfg.WSURL,
		hooks:      cfg.Webhooks,
		brand:      cfg.Brand,
	}
	impls := h.implementations()
	for _, rt := range routes.Table {
		if rt.Function != function {
			continue
		}
		impl, ok := impls[rt.Key()]
		if !ok {
			return nil, fmt.Errorf("apigw: route %q of function %q has no handler in apigw", rt.Key(), function)
		}
		h.routes[rt.Key()] = impl
		h.public[rt.Key()] = rt.Auth() == routes.AuthNone
		h.clientOK[rt.Key()] = rt.AcceptsClientToken()
		h.queryToken[rt.Key()] = rt.AcceptsQueryToken()
	}
	if len(h.routes) == 0 {
		return nil, fmt.Errorf("apigw: function %q serves no API routes", function)
	}
	return h, nil
}

// implementations maps every route key of routes.Table to its
// implementation; New checks the two agree.
func (h *Handler) implementations() map[string]routeFunc {
	return map[string]routeFunc{
		"POST /v1/sessions":                                     h.createSession,
		"GET /v1/sessions":                                      h.listSessions,
		"GET /v1/sessions/{id}":                                 h.getSession,
		"DELETE /v1/sessions/{id}":                              h.deleteSession,
		"POST /v1/sessions/{id}/activity":                       h.heartbeat,
		"GET /v1/sessions/{id}/status":                          h.status,
		"POST /v1/sessions/{id}/resume":                         h.resume,
		"GET " + routes.OpenPath:                                h.open,
		"GET " + routes.OpenPath + "/{path+}":                   h.open,
		"POST /v1/sessions/{id}/pause":                          h.pause,
		"POST /v1/sessions/{id}/snapshot":                       h.pause, // the alias (routes.Aliases)
		"GET /v1/sessions/{id}/reconnect":                       h.reconnect,
		"GET /v1/sessions/{id}/diagnose":                        h.diagnose,
		"POST " + routes.CheckpointsPath:                        h.createCheckpoint,
		"GET " + routes.CheckpointsPath:                         h.listCheckpoints,
		"GET " + routes.CheckpointsPath + "/{checkpoint_id}":    h.getCheckpoint,
		"DELETE " + routes.CheckpointsPath + "/{checkpoint_id}": h.deleteCheckpoint,
		"POST /v1/sessions/{id}/restore":                        h.restore,
		"POST /v1/sessions/{id}/fork":                           h.fork,
		"GET " + routes.UsagePath:                               h.usage,
		"GET " + routes.PoolsPath:                               h.pools,
		"GET " + routes.OpenAPIPath:                             h.openAPIDocument,
		"GET " + routes.ClientScriptPath:                        h.clientScript,
		"POST " + routes.ClientTokensPath:                       h.createClientToken,
		"GET /v1/sessions/{id}/events":                          h.sessionEvents,

		"POST " + routes.WebhookEndpointsPath:                                          h.createWebhookEndpoint,
		"GET " + routes.WebhookEndpointsPath:                                           h.listWebhookEndpoints,
		"GET " + routes.WebhookEndpointsPath + "/{id}":                                 h.getWebhookEndpoint,
		"PATCH " + routes.WebhookEndpointsPath + "/{id}":                               h.patchWebhookEndpoint,
		"DELETE " + routes.WebhookEndpointsPath + "/{id}":                              h.deleteWebhookEndpoint,
		"POST " + routes.WebhookEndpointsPath + "/{id}/rotate-secret":                  h.rotateWebhookSecret,
		"GET " + routes.WebhookEndpointsPath + "/{id}/deliveries":                      h.listWebhookDeliveries,
		"POST " + routes.WebhookEndpointsPath + "/{id}/deliveries/{delivery_id}/retry": h.retryWebhookDelivery,
	}
}

// Routes returns the route keys this handler serves.
func (h *Handler) Routes() []string {
	keys := make([]string, 0, len(h.routes))
	for _, rt := range routes.Table {
		if _, ok := h.routes[rt.Key()]; ok {
			keys = append(keys, rt.Key())
		}
	}
	return keys
}

// response is what a route answers before encoding: a status, an optional
// body to encode as JSON (nil: no body) and extra headers.
type response struct {
	status  int
	body    any
	headers map[string]string
	// html, when not "", is the body as text/html instead of body's JSON
	// (the stable link's pages, open.go).
	html string
	// contentType, when not "", is html's Content-Type instead of
	// text/html (the client script, clientscript.go).
	contentType string
}

// Handle serves one API Gateway HTTP API (payload 2.0) request. It never
// returns an error: failures are error responses (with CORS headers), so
// API Gateway never substitutes its own bare 500.
func (h *Handler) Handle(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	start := time.Now()
	r := newRequest(&ev)
	ctx = httpapi.WithLogAttrs(ctx, slog.String("request_id", r.requestID))
	ctx, cancel := context.WithTimeout(ctx, httpapi.RequestBudget(ctx, h.timeout))
	defer cancel()

	resp, err := h.serve(ctx, r)
	var out events.APIGatewayV2HTTPResponse
	level := slog.LevelInfo
	var errType string
	if err != nil {
		var known bool
		out, known = h.respond.Error(err, r.requestID)
		errType = httpapi.ErrorType(err)
		switch {
		case !known:
			level = slog.LevelError
			h.log.ErrorContext(ctx, "request failed", "route", ev.RouteKey, "err", err)
		case out.StatusCode >= 500:
			level = slog.LevelWarn
			h.log.WarnContext(ctx, "request failed", "route", ev.RouteKey, "error_type", errType, "err", err)
		}
		// The stable link (the routes taking ?token=) answers a browser
		// with a page; an API client keeps the envelope.
		if h.queryToken[ev.RouteKey] && prefersHTML(r) {
			h.linkPageForError(ctx, r, err, &out)
		}
	} else if out, err = h.respond.JSON(resp.status, resp.body, resp.headers); err != nil {
		h.log.ErrorContext(ctx, "encode response", "err", err)
	} else if resp.html != "" {
		out.Headers["Content-Type"] = "text/html; charset=utf-8"
		if resp.contentType != "" {
			out.Headers["Content-Type"] = resp.contentType
		}
		out.Body = resp.html
	}
	if out.StatusCode == http.StatusUnauthorized { // an API key is the challenge; Responder leaves it to us
		out.Headers["WWW-Authenticate"] = `Bearer realm="sandman"`
	}

	attrs := []slog.Attr{
		slog.String("route", ev.RouteKey),
		slog.String("method", r.method()),
		slog.String("path", r.path()),
		slog.Int("status", out.StatusCode),
		slog.Int64("duration_ms", time.Since(start).Milliseconds()),
		slog.String("account_id", r.accountID),
	}
	if errType != "" {
		attrs = append(attrs, slog.String("error_type", errType))
	}
	h.log.LogAttrs(ctx, level, "request", attrs...)
	return out, nil
}

// serve authenticates and dispatches; a panic in a route becomes an error.
func (h *Handler) serve(ctx context.Context, r *request) (resp response, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic serving %s: %v\n%s", r.event.RouteKey, p, debug.Stack())
		}
	}()
	if r.method() == http.MethodOptions {
		return response{status: http.StatusNoContent, headers: map[string]string{
			"Access-Control-Max-Age": corsMaxAgeSeconds,
		}}, nil
	}
	route, ok := h.routes[r.event.RouteKey]
	if !ok {
		return response{}, lifecycle.Errorf(lifecycle.CodeNotFound, "no route %s %s", r.method(), truncate(r.path(), 128))
	}
	if h.public[r.event.RouteKey] {
		return route(ctx, r)
	}
	if tok, ok := r.event.QueryStringParameters["token"]; ok && h.queryToken[r.event.RouteKey] {
		// The stable link carries its client token in the query: it is
		// meant for an iframe or a new tab (docs/WAKE.md).
		if r.accountID, err = h.clientTokenAuth(r, tok); err != nil {
			return response{}, err
		}
		r.clientToken = true
		return route(lifecycle.WithActor(ctx, lifecycle.ActorClient), r)
	}
	if _, hasAuthz := r.header("Authorization"); hasAuthz {
		if bearer, err := apiKey(r); err == nil && looksLikeClientToken(bearer) {
			if r.accountID, err = h.clientTokenAuth(r, bearer); err != nil {
				return response{}, err
			}
			r.clientToken = true
			return route(lifecycle.WithActor(ctx, lifecycle.ActorClient), r)
		}
	}
	key, err := authenticate(ctx, h.keys, r)
	if err != nil {
		return response{}, err
	}
	r.accountID = key.AccountID
	// The key's own running limit (lifecycle quota.go) and its account's
	// tiers (tiers.go), if it sets them.
	ctx = lifecycle.WithAccountTiers(lifecycle.WithMaxRunning(ctx, key.MaxRunning), key.Tiers)
	return route(lifecycle.WithActor(ctx, lifecycle.ActorAPI), r)
}
