// Package provhttp is the HTTP plumbing the provider adapters
// (internal/provider/e2b, internal/provider/daytona, internal/provider/vercel)
// share: one attempt at a JSON API read in full (RoundTrip), the default
// client, the error a failed answer carries (APIError, ParseError), how a
// status maps to a lifecycle error (Classes), and the retries of idempotent
// calls (Retrier, on internal/provider/internal/retry). What differs
// between providers (authentication, URLs, their error bodies, which
// statuses mean what) each adapter declares in its own package, and
// adapters still never import each other.
package provhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/retry"
)

// Request is one attempt at a provider's API.
type Request struct {
	// Op and SandboxID name the call in errors: the lifecycle operation,
	// such as "pause", and the sandbox ("" for create and list).
	Op        string
	SandboxID string
	Method    string
	// URL is the call's URL; with Path or Query, the base they complete.
	URL string
	// Path are segments joined to URL (url.JoinPath: escaped as a path).
	Path []string
	// Query, when non-nil, replaces URL's query.
	Query url.Values
	// Body is sent JSON-encoded, with Content-Type application/json, when
	// non-nil.
	Body any
	// Header is added to the request after Accept: application/json (and
	// Content-Type with a body): authentication, user agent and the like.
	Header http.Header
	// Timeout bounds the attempt, the answer's body included.
	Timeout time.Duration
	// MaxBody is how many bytes of the answer are read at most.
	MaxBody int64
}

// Reply is an answer read in full.
type Reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// OK reports a 2xx status.
func (r Reply) OK() bool { return r.Status >= 200 && r.Status < 300 }

// RoundTrip makes one attempt at rq through client. A failure to get an
// answer (connection error, timeout, cancelled context, a body cut short) is
// a transient *lifecycle.ProviderError that wraps the cause, so
// errors.Is(err, context.Canceled) still tells a caller it gave up itself.
// A lifecycle.CallGate on ctx (a provider call limiter's) is asked before
// the attempt (its error is returned, the attempt not made) and told the
// answer's status and Retry-After.
// Any answer, whatever its status, is returned for the operation to
// interpret. Errors that retrying cannot help (a body that does not encode,
// a malformed URL) are plain.
func RoundTrip(ctx context.Context, client *http.Client, rq Request) (Reply, error) {
	actx, cancel := context.WithTimeout(ctx, rq.Timeout)
	defer cancel()
	req, err := newRequest(actx, rq, nil, "")
	if err != nil {
		return Reply{}, err
	}
	host := req.URL.Scheme + "://" + req.URL.Host
	gate := lifecycle.CallGateOf(ctx)
	if gate != nil {
		if err := gate.Attempt(ctx); err != nil {
			return Reply{}, err
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		return Reply{}, noAnswer(rq, req, err)
	}
	defer resp.Body.Close()
	if gate != nil {
		gate.Answered(resp.StatusCode, retry.ParseAfter(resp.Header.Get("Retry-After"), time.Now()))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, rq.MaxBody))
	if err != nil {
		return Reply{}, lifecycle.NewProviderError(lifecycle.ErrProviderTransient, rq.Op, rq.SandboxID,
			fmt.Errorf("read answer from %s: %w", host, err))
	}
	return Reply{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// newRequest builds rq's request under ctx: its URL (Path and Query
// joined), Accept: application/json and rq.Header; the body is stream
// with Content-Type contentType when stream is set, else rq.Body
// JSON-encoded. Errors (plain): a body that does not encode, a bad URL.
func newRequest(ctx context.Context, rq Request, stream io.Reader, contentType string) (*http.Request, error) {
	body, ctype := stream, contentType
	if stream == nil && rq.Body != nil {
		b, err := json.Marshal(rq.Body)
		if err != nil {
			return nil, fmt.Errorf("%s: encode request: %w", Describe(rq.Op, rq.SandboxID), err)
		}
		body, ctype = bytes.NewReader(b), "application/json"
	}
	target := rq.URL
	if len(rq.Path) > 0 || rq.Query != nil {
		u, err := url.Parse(rq.URL)
		if err != nil {
			return nil, fmt.Errorf("%s: build request: %w", Describe(rq.Op, rq.SandboxID), err)
		}
		u = u.JoinPath(rq.Path...)
		if rq.Query != nil {
			u.RawQuery = rq.Query.Encode()
		}
		target = u.String()
	}
	req, err := http.NewRequestWithContext(ctx, rq.Method, target, body)
	if err != nil {
		return nil, fmt.Errorf("%s: build request: %w", Describe(rq.Op, rq.SandboxID), err)
	}
	req.Header.Set("Accept", "application/json")
	for k, vs := range rq.Header {
		req.Header[k] = vs
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	return req, nil
}

// noAnswer is the transient error of a request that got no answer.
func noAnswer(rq Request, req *http.Request, err error) error {
	return lifecycle.NewProviderError(lifecycle.ErrProviderTransient, rq.Op, rq.SandboxID,
		fmt.Errorf("no answer from %s %s://%s: %w", rq.Method, req.URL.Scheme, req.URL.Host, err))
}

// Describe names an operation for plain error messages: "pause sandbox x",
// or "list sandboxes" when sandboxID is "".
func Describe(op, sandboxID string) string {
	if sandboxID == "" {
		return op + " sandboxes"
	}
	return op + " sandbox " + sandboxID
}

// maxSnippet is how many bytes of an unreadable error body a message keeps.
const maxSnippet = 200

// Snippet returns the start of an error body that is not the provider's
// JSON (a proxy's HTML page): trimmed, at most 200 bytes, "…" marking a cut.
func Snippet(body []byte) string {
	msg := strings.TrimSpace(string(body))
	if len(msg) > maxSnippet {
		msg = msg[:maxSnippet] + "…"
	}
	return msg
}

// NewClient returns the adapters' default client: a transport that bounds
// dialling and TLS handshakes to 5 s each and keeps up to 16 idle
// connections per host for 90 s. Whole-request deadlines come from
// contexts (Request.Timeout), since a pause may legitimately take a minute.
func NewClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = 5 * time.Second
	t.MaxIdleConnsPerHost = 16
	t.IdleConnTimeout = 90 * time.Second
	return &http.Client{Transport: t}
}

// OrDefaults returns the settings every adapter's Config has, each nil one
// replaced by its default: NewClient(), lifecycle.Sleep,
// lifecycle.SystemClock and slog.Default().
func OrDefaults(client *http.Client, sleep func(context.Context, time.Duration) error, clock lifecycle.Clock,
	log *slog.Logger) (*http.Client, func(context.Context, time.Duration) error, lifecycle.Clock, *slog.Logger) {
	if client == nil {
		client = NewClient()
	}
	if sleep == nil {
		sleep = lifecycle.Sleep
	}
	if clock == nil {
		clock = lifecycle.SystemClock{}
	}
	if log == nil {
		log = slog.Default()
	}
	return client, sleep, clock, log
}
