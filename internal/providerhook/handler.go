package providerhook

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/httpapi"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// DefaultMaxBodyBytes is the largest webhook body accepted, in bytes after
// base64 decoding: 256 KiB. E2B's lifecycle events are well under 4 KiB;
// the limit only keeps a flood of large bodies from costing hashing time.
const DefaultMaxBodyBytes = 256 << 10

// DefaultRetryAfter is the Retry-After sent with a 503 (ours: 5 s).
const DefaultRetryAfter = 5 * time.Second

// ProviderParam is the route's path parameter naming the provider, as in
// routes.Table's "POST /v1/webhooks/{provider}".
const ProviderParam = "provider"

// Applier applies one verified provider event. *lifecycle.Service is the
// implementation; tests may pass their own.
type Applier interface {
	// ApplyProviderEvent applies ev and says what it did. Errors: from the
	// store only; the handler answers 5xx so the provider retries.
	ApplyProviderEvent(ctx context.Context, ev lifecycle.ProviderEvent) (lifecycle.WebhookOutcome, error)
}

var _ Applier = (*lifecycle.Service)(nil)

// Handler serves POST /v1/webhooks/{provider} (see the package comment for
// the order of checks and the status of each). Build it with New; it is
// safe for concurrent use.
type Handler struct {
	applier    Applier
	formats    map[string]Format
	maxBody    int
	retryAfter time.Duration
	timeout    time.Duration
	respond    httpapi.Responder
	log        *slog.Logger
}

// Config is what a Handler is built from (New). Applier is required; every
// other zero field means the default named on it, filled in once by New.
type Config struct {
	// Applier applies each verified event (a *lifecycle.Service).
	Applier Applier
	// Formats are the webhook formats accepted, each on the path segment
	// its Name returns. None (a deployment whose providers send no
	// webhooks: Vercel): every request answers 404.
	Formats []Format
	// MaxBodyBytes is the largest body accepted, in bytes after base64
	// decoding. Default DefaultMaxBodyBytes; a negative value is an error.
	MaxBodyBytes int
	// RetryAfter is the Retry-After of a 503. Default DefaultRetryAfter.
	RetryAfter time.Duration
	// RequestTimeout bounds each request's context; the Lambda deadline,
	// when sooner, still applies. Default httpapi.DefaultRequestTimeout
	// (29 s, under API Gateway's 30 s integration timeout).
	RequestTimeout time.Duration
	// AllowOrigin is sent as Access-Control-Allow-Origin, as the API's
	// other functions send it (app.Config.CORSOrigin). Default "*".
	AllowOrigin string
	// Log receives the access line of every request and error details; its
	// handler is wrapped with httpapi.NewLogHandler. Default slog.Default().
	Log *slog.Logger
}

// New returns a Handler built from cfg with the defaults of Config filled
// in. Errors: no applier, a nil format, two formats with one name, a name
// that is empty or not lowercase, or a negative body limit.
func New(cfg Config) (*Handler, error) {
	if cfg.Applier == nil {
		return nil, errors.New("webhook handler needs an applier")
	}
	if cfg.MaxBodyBytes < 0 {
		return nil, fmt.Errorf("webhook handler: body limit %d bytes must be positive", cfg.MaxBodyBytes)
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = DefaultRetryAfter
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = httpapi.DefaultRequestTimeout
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	h := &Handler{
		applier:    cfg.Applier,
		formats:    make(map[string]Format, len(cfg.Formats)),
		maxBody:    cfg.MaxBodyBytes,
		retryAfter: cfg.RetryAfter,
		timeout:    cfg.RequestTimeout,
		respond:    httpapi.Responder{AllowOrigin: cfg.AllowOrigin}, // "" is "*"
		// The request's attributes ride on ctx (httpapi.WithLogAttrs); wrapping
		// an already wrapped handler changes nothing.
		log: slog.New(httpapi.NewLogHandler(cfg.Log.Handler())),
	}
	for _, f := range cfg.Formats {
		if f == nil {
			return nil, errors.New("webhook handler: nil format")
		}
		name := f.Name()
		if name == "" || name != strings.ToLower(name) {
			return nil, fmt.Errorf("webhook handler: format name %q must be non-empty and lowercase", name)
		}
		if _, dup := h.formats[name]; dup {
			return nil, fmt.Errorf("webhook handler: two formats named %q", name)
		}
		h.formats[name] = f
	}
	return h, nil
}

// okBody is the 200 answer: the event was delivered, whatever it did.
type okBody struct {
	Status  string `json:"status"`  // always "ok"
	Outcome string `json:"outcome"` // applied, recorded, stale, duplicate, unknown_sandbox, ignored (deferred answers 503)
}

// outcomeIgnored answers a verified event of a kind Sandman does not use
// (ErrIgnored): nothing is claimed or changed.
const outcomeIgnored = "ignored"

// Handle serves one request. It always returns a response and a nil error:
// a Lambda error would make API Gateway answer its own 500 without the
// envelope.
func (h *Handler) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	requestID := req.RequestContext.RequestID
	// Every line logged under ctx, the service's included, carries these.
	ctx = httpapi.WithLogAttrs(ctx, slog.String("request_id", requestID), slog.String("route", req.RouteKey))
	ctx = lifecycle.WithActor(ctx, lifecycle.ActorProvider)

	ev, err := h.VerifyAndParse(req)
	if errors.Is(err, ErrIgnored) {
		h.log.InfoContext(ctx, "webhook", "outcome", outcomeIgnored, "provider", clip(req.PathParameters[ProviderParam]),
			"reason", err.Error())
		resp, _ := h.respond.JSON(http.StatusOK, okBody{Status: "ok", Outcome: outcomeIgnored}, nil) // strings always encode
		return resp, nil
	}
	if err != nil {
		h.log.WarnContext(ctx, "webhook refused", "provider", clip(req.PathParameters[ProviderParam]),
			"error_type", httpapi.ErrorType(err), "reason", err.Error())
		resp, _ := h.respond.Error(err, requestID) // logged above
		return resp, nil
	}

	ctx = httpapi.WithLogAttrs(ctx, slog.String("event_id", ev.ID), slog.String("provider", ev.Provider),
		slog.String("sandbox_id", ev.SandboxID), slog.String("type", string(ev.Type)),
		slog.String("event_time", ev.Timestamp.Format(time.RFC3339Nano)), slog.String("session_id", ev.SessionID))
	outcome, err := h.apply(ctx, ev.ProviderEvent)
	if err != nil {
		h.log.ErrorContext(ctx, "webhook not applied", "err", err)
		resp, _ := h.respond.Error(h.applyError(err), requestID) // logged above
		return resp, nil
	}
	if outcome == lifecycle.WebhookDeferred {
		// The session is mid-operation: ask the provider to deliver again
		// once it has settled (the event was not claimed).
		h.log.InfoContext(ctx, "webhook", "outcome", string(outcome))
		resp, _ := h.respond.Error(&lifecycle.Error{Code: lifecycle.CodeUnavailable, RetryAfter: h.retryAfter,
			Message: "the session is changing state; deliver this event again shortly"}, requestID)
		return resp, nil
	}
	level := slog.LevelInfo
	if outcome == lifecycle.WebhookUnknownSandbox {
		level = slog.LevelWarn
	}
	h.log.Log(ctx, level, "webhook", "outcome", string(outcome))
	resp, _ := h.respond.JSON(http.StatusOK, okBody{Status: "ok", Outcome: string(outcome)}, nil) // strings always encode
	return resp, nil
}

// apply calls the applier within the request timeout; a panic in it becomes
// an error (a 500), as in internal/apigw.
func (h *Handler) apply(ctx context.Context, ev lifecycle.ProviderEvent) (outcome lifecycle.WebhookOutcome, err error) {
	ctx, cancel := context.WithTimeout(ctx, httpapi.RequestBudget(ctx, h.timeout))
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic applying webhook %s: %v\n%s", ev.ID, p, debug.Stack())
		}
	}()
	return h.applier.ApplyProviderEvent(ctx, ev)
}

// VerifyAndParse runs every check before the apply step on req: size,
// base64 decoding, provider lookup, signature, parse. It needs no store, so
// it can be fuzzed and benchmarked on its own.
// Errors: too_large, invalid (bad base64, malformed body), not_found
// (unknown provider), unauthorized (signature), and one wrapping ErrIgnored
// for a verified event of a kind Sandman does not use.
func (h *Handler) VerifyAndParse(req events.APIGatewayV2HTTPRequest) (Event, error) {
	body, err := h.rawBody(req)
	if err != nil {
		return Event{}, err
	}
	name := req.PathParameters[ProviderParam]
	f, ok := h.formats[name]
	if !ok {
		return Event{}, lifecycle.Errorf(lifecycle.CodeNotFound, "no webhook provider %q", clip(name))
	}
	headers := lowerKeys(req.Headers)
	if err := f.Verify(headers, body); err != nil {
		return Event{}, asCode(err, lifecycle.CodeUnauthorized, "the webhook signature could not be verified")
	}
	var ev Event
	if dp, ok := f.(DeliveryParser); ok {
		ev, err = dp.ParseDelivery(headers, body)
	} else {
		ev, err = f.Parse(body)
	}
	if errors.Is(err, ErrIgnored) {
		return Event{}, err
	}
	if err != nil {
		return Event{}, asCode(err, lifecycle.CodeInvalid, "the webhook body is not a valid event")
	}
	return ev, nil
}

// rawBody returns the bytes the provider sent: req.Body, decoded from
// base64 when API Gateway flagged it. Errors: too_large, invalid.
func (h *Handler) rawBody(req events.APIGatewayV2HTTPRequest) ([]byte, error) {
	limit := h.maxBody
	if req.IsBase64Encoded {
		limit = base64.StdEncoding.EncodedLen(h.maxBody)
	}
	if len(req.Body) > limit {
		return nil, h.tooLarge()
	}
	if !req.IsBase64Encoded {
		return []byte(req.Body), nil
	}
	body, err := base64.StdEncoding.DecodeString(req.Body)
	if err != nil {
		return nil, lifecycle.Errorf(lifecycle.CodeInvalid, "the body is flagged base64 but is not valid base64")
	}
	if len(body) > h.maxBody {
		return nil, h.tooLarge()
	}
	return body, nil
}

func (h *Handler) tooLarge() error {
	return lifecycle.Errorf(lifecycle.CodeTooLarge, "the webhook body is over the limit of %d bytes", h.maxBody)
}

// applyError turns a failure of ApplyProviderEvent into the error to
// answer. The provider must retry, so nothing here is a 4xx: a lost race
// (conflict after the service's own retries) or a timeout becomes 503 with
// Retry-After, anything else 500 with no detail.
func (h *Handler) applyError(err error) error {
	code := lifecycle.ErrorCode(err)
	if code == lifecycle.CodeConflict || code == lifecycle.CodeUnavailable ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return &lifecycle.Error{Code: lifecycle.CodeUnavailable, RetryAfter: h.retryAfter,
			Message: "the webhook could not be recorded right now; retry later", Err: err}
	}
	// Outermost, so the envelope shows internal whatever code err carries.
	return &lifecycle.Error{Code: lifecycle.CodeInternal, Message: "apply webhook", Err: err}
}

// asCode returns err when it is a *lifecycle.Error of code, and otherwise a
// new one of code with message, wrapping err: a Format that forgot to
// classify its error cannot turn a refusal into a 500 or a 200.
func asCode(err error, code lifecycle.Code, message string) error {
	if lifecycle.ErrorCode(err) == code {
		return err
	}
	return &lifecycle.Error{Code: code, Message: message, Err: err}
}

// lowerKeys returns headers with lowercase names. API Gateway's payload v2
// already lowercases them; other callers may not.
func lowerKeys(headers map[string]string) map[string]string {
	out := make(map[string]string, len(headers))
	for k, v := range headers {
		out[strings.ToLower(k)] = v
	}
	return out
}

// clip shortens a caller-supplied string before it goes into a message.
func clip(s string) string {
	const max = 64
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
