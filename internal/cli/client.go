// Package cli is the `sandman sessions`, `sandman client-tokens`,
// `sandman webhooks` (webhooks.go) and `sandman pools` (pools.go)
// commands: an operator's and a script's client of Sandman's HTTP API
// (docs/openapi.json), configured by SANDMAN_URL and SANDMAN_API_KEY (or
// --url and --api-key on every command; next to `make run`, the dev key it
// keeps in .sandman/dev_api_key).
//
//	sandman sessions list|get|create|open|events|delete|resume|pause|status|reconnect|watch
//	sandman client-tokens create <session id>
//
// Output is a human table by default and the API's JSON with -o json (watch
// writes one JSON object per line). The exit status says what went wrong,
// by the error envelope's error_type (ExitCode); the table is in docs/API.md
// "The CLI". A bad command line is one line on stderr naming the flag
// (flags.go).
//
// watch follows a session through a Follower. Today that is PollFollower,
// which polls GET /v1/sessions/{id}/status (no provider call, not activity);
// a follower over the client channel (docs/DESIGN.md "Client channel")
// could replace the poller behind the same interface.
package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// Client calls Sandman's HTTP API with one API key. The zero value is not
// usable; set BaseURL and APIKey.
type Client struct {
	// BaseURL is the API's root, e.g. http://127.0.0.1:8080 or the stack's
	// ApiUrl output (without /v1).
	BaseURL string
	// APIKey is sent as Authorization: Bearer.
	APIKey string
	// HTTP does the requests; nil means a client with a 60 s timeout.
	HTTP *http.Client
}

// APIError is an error answer of the API: its HTTP status and its error
// envelope {"status":"error","error","error_type"}. RetryAfter is the
// Retry-After header, zero when absent.
type APIError struct {
	Status     int
	Message    string
	ErrorType  string
	RetryAfter time.Duration
}

// Error returns the API's sentence with the type and status.
func (e *APIError) Error() string {
	return fmt.Sprintf("%s (%s, HTTP %d)", e.Message, e.ErrorType, e.Status)
}

// The API's answers, as internal/openapi/api declares them once for the
// handlers, the CLI and the tests (docs/openapi.json).
type (
	// Session is a session as the API answers it (docs/openapi.json, Session).
	Session = api.Session
	// SessionList is one page of GET /v1/sessions.
	SessionList = api.SessionList
	// Envelope is the lifecycle envelope.
	Envelope = api.Envelope
	// Status answers GET /v1/sessions/{id}/status.
	Status = api.Status
	// ResumeResult answers POST /v1/sessions/{id}/resume.
	ResumeResult = api.ResumeResult
	// PauseResult answers POST /v1/sessions/{id}/pause.
	PauseResult = api.PauseResult
	// ReconnectResult answers GET /v1/sessions/{id}/reconnect.
	ReconnectResult = api.ReconnectResult
	// SessionEvent is one entry of a session's timeline.
	SessionEvent = api.SessionEvent
	// SessionEventList answers GET /v1/sessions/{id}/events.
	SessionEventList = api.SessionEventList
	// ClientToken answers POST /v1/sessions/{id}/client-tokens.
	ClientToken = api.ClientToken
)

// CreateRequest is the body of POST /v1/sessions; zero fields are left out
// (the deployment's defaults apply).
type CreateRequest struct {
	Template           string            `json:"template,omitempty"`
	Provider           string            `json:"provider,omitempty"`
	IdleTimeoutSeconds int64             `json:"idle_timeout_seconds,omitempty"`
	MaxLifetimeSeconds int64             `json:"max_lifetime_seconds,omitempty"`
	Metadata           map[string]string `json:"metadata,omitempty"`
	// AwayTimeoutSeconds: nil for the default (120 s), 0 for presence off.
	AwayTimeoutSeconds *int64 `json:"away_timeout_seconds,omitempty"`
	// App is the app spec (docs/READINESS.md); nil: the template's, if any.
	App *AppRequest `json:"app,omitempty"`
}

// AppRequest is the app spec of a create (docs/openapi.json, AppRequest):
// absent fields are left to the template's default app spec.
type AppRequest struct {
	Port                *int              `json:"port,omitempty"`
	StartCommand        *string           `json:"start_command,omitempty"`
	Cwd                 *string           `json:"cwd,omitempty"`
	Env                 map[string]string `json:"env,omitempty"`
	ReadyPath           *string           `json:"ready_path,omitempty"`
	ReadyTimeoutSeconds *int64            `json:"ready_timeout_seconds,omitempty"`
}

// ListFilter narrows GET /v1/sessions (docs/API.md "Listing sessions"):
// State is one state or several comma-separated; "" fields filter nothing.
type ListFilter struct {
	State    string
	Provider string
	Template string
	Metadata map[string]string
}

// query adds f's parameters to q.
func (f ListFilter) query(q url.Values) {
	for k, v := range map[string]string{"state": f.State, "provider": f.Provider, "template": f.Template} {
		if v != "" {
			q.Set(k, v)
		}
	}
	for k, v := range f.Metadata {
		q.Set("metadata["+k+"]", v)
	}
}

// finalStates are the states a session never leaves.
var finalStates = map[string]bool{"expired": true, "killed": true, "failed": true}

// do sends one request and decodes a 2xx JSON answer into out (when out is
// not nil), returning the raw body too. Errors: *APIError for an error
// answer, a wrapped error for a network failure or an answer that is not
// the API's.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body any, headers map[string]string, out any) ([]byte, error) {
	u := strings.TrimRight(c.BaseURL, "/") + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader = http.NoBody
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.APIKey)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "sandman-cli")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode >= 400 {
		return raw, apiError(resp, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return raw, fmt.Errorf("%s %s: answer %d is not the API's JSON: %w", method, path, resp.StatusCode, err)
		}
	}
	return raw, nil
}

// apiError decodes an error answer's envelope; an answer without one (a
// proxy's page) keeps its status with error_type "" and a generic message.
func apiError(resp *http.Response, raw []byte) error {
	e := &APIError{Status: resp.StatusCode}
	var env api.Error
	if json.Unmarshal(raw, &env) == nil && env.ErrorType != "" {
		e.Message, e.ErrorType = env.Error, env.ErrorType
	} else {
		e.Message = fmt.Sprintf("the server answered %s without the API's error envelope", resp.Status)
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}

// sessionPath returns /v1/sessions/{id}[/suffix], the id path-escaped.
func sessionPath(id, suffix string) string {
	p := "/v1/sessions/" + url.PathEscape(id)
	if suffix != "" {
		p += "/" + suffix
	}
	return p
}

// List returns one page of the caller's sessions that pass f, newest
// first; limit 1..100 (0: the API's default, 20), cursor "" for the first
// page. A filtered page may be short, even empty, and still have a cursor.
func (c *Client) List(ctx context.Context, limit int, cursor string, f ListFilter) (SessionList, []byte, error) {
	q := pageQuery(limit, cursor)
	f.query(q)
	var out SessionList
	raw, err := c.do(ctx, http.MethodGet, "/v1/sessions", q, nil, nil, &out)
	return out, raw, err
}

// Events returns one page of session id's timeline, newest first; limit
// 1..100 (0: the API's default, 20), cursor "" for the first page.
func (c *Client) Events(ctx context.Context, id string, limit int, cursor string) (SessionEventList, []byte, error) {
	var out SessionEventList
	raw, err := c.do(ctx, http.MethodGet, sessionPath(id, "events"), pageQuery(limit, cursor), nil, nil, &out)
	return out, raw, err
}

// pageQuery is ?limit=&cursor= (each left out when zero).
func pageQuery(limit int, cursor string) url.Values {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	return q
}

// Get returns one session.
func (c *Client) Get(ctx context.Context, id string) (Session, []byte, error) {
	var out Session
	raw, err := c.do(ctx, http.MethodGet, sessionPath(id, ""), nil, nil, nil, &out)
	return out, raw, err
}

// Create creates a session; a non-empty idempotencyKey is sent as
// Idempotency-Key (a repeat answers the first create's session).
func (c *Client) Create(ctx context.Context, in CreateRequest, idempotencyKey string) (Session, []byte, error) {
	var h map[string]string
	if idempotencyKey != "" {
		h = map[string]string{"Idempotency-Key": idempotencyKey}
	}
	var out Session
	raw, err := c.do(ctx, http.MethodPost, "/v1/sessions", nil, in, h, &out)
	return out, raw, err
}

// Delete kills the session's sandbox and returns the killed session.
func (c *Client) Delete(ctx context.Context, id string, purge bool) (Session, []byte, error) {
	var q url.Values
	if purge {
		q = url.Values{"purge": {"true"}}
	}
	var out Session
	raw, err := c.do(ctx, http.MethodDelete, sessionPath(id, ""), q, nil, nil, &out)
	return out, raw, err
}

// ForkRequest is the body of POST /v1/sessions/{id}/fork; zero fields are
// left out (a fresh checkpoint, the source's metadata).
type ForkRequest struct {
	CheckpointID string            `json:"checkpoint_id,omitempty"`
	Metadata     map[string]string `json:"metadata,omitempty"`
}

// Restore restores the session in place from one of its checkpoints and
// returns it, restoring.
func (c *Client) Restore(ctx context.Context, id, checkpointID string) (Session, []byte, error) {
	var out Session
	raw, err := c.do(ctx, http.MethodPost, sessionPath(id, "restore"), nil, map[string]string{"checkpoint_id": checkpointID}, nil, &out)
	return out, raw, err
}

// Fork makes a new session from a checkpoint of session id and returns it,
// provisioning; a non-empty idempotencyKey is sent as Idempotency-Key.
func (c *Client) Fork(ctx context.Context, id string, in ForkRequest, idempotencyKey string) (Session, []byte, error) {
	var h map[string]string
	if idempotencyKey != "" {
		h = map[string]string{"Idempotency-Key": idempotencyKey}
	}
	var out Session
	raw, err := c.do(ctx, http.MethodPost, sessionPath(id, "fork"), nil, in, h, &out)
	return out, raw, err
}

// Resume resumes a paused session (a running one answers as is).
func (c *Client) Resume(ctx context.Context, id string) (ResumeResult, []byte, error) {
	var out ResumeResult
	raw, err := c.do(ctx, http.MethodPost, sessionPath(id, "resume"), nil, nil, nil, &out)
	return out, raw, err
}

// Pause pauses the session now (idempotent): POST /v1/sessions/{id}/pause.
func (c *Client) Pause(ctx context.Context, id string) (PauseResult, []byte, error) {
	var out PauseResult
	raw, err := c.do(ctx, http.MethodPost, sessionPath(id, "pause"), nil, nil, nil, &out)
	return out, raw, err
}

// Status returns the session's state from the database (no provider call).
func (c *Client) Status(ctx context.Context, id string) (Status, []byte, error) {
	var out Status
	raw, err := c.do(ctx, http.MethodGet, sessionPath(id, "status"), nil, nil, nil, &out)
	return out, raw, err
}

// Reconnect probes the session's sandbox live (never waking a paused one).
func (c *Client) Reconnect(ctx context.Context, id string) (ReconnectResult, []byte, error) {
	var out ReconnectResult
	raw, err := c.do(ctx, http.MethodGet, sessionPath(id, "reconnect"), nil, nil, nil, &out)
	return out, raw, err
}

// isTransient reports whether err is worth another poll: a 503 or a
// network failure.
func isTransient(err error) bool {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status == http.StatusServiceUnavailable
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}
