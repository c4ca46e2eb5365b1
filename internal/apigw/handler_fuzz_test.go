package apigw_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/routes"
)

// The selector byte of FuzzHandler: its low two bits choose the path id,
// the next two the API key added to the headers.
const (
	fuzzIDAsGiven  = 0 // the fuzzed id
	fuzzIDRunning  = 1 // the caller's running session
	fuzzIDPaused   = 2 // the caller's paused session
	fuzzIDForeign  = 3 // a session of another account
	fuzzKeyAsGiven = 0 // only what the fuzzed headers carry
	fuzzKeyX       = 1 // x-api-key: DevAPIKey
	fuzzKeyBearer  = 2 // Authorization: Bearer DevAPIKey
	fuzzKeyBoth    = 3 // both headers (must be refused)
)

// fuzzErrorTypes are the error_type values each error status may carry
// (httpapi.StatusFor's table and the lifecycle's specific types).
var fuzzErrorTypes = map[int][]string{
	http.StatusBadRequest:            {"invalid"},
	http.StatusUnauthorized:          {"unauthorized"},
	http.StatusForbidden:             {"forbidden"},
	http.StatusNotFound:              {"not_found"},
	http.StatusConflict:              {"conflict", lifecycle.TypeSandboxPaused},
	http.StatusRequestEntityTooLarge: {"too_large"},
	http.StatusServiceUnavailable:    {"unavailable", lifecycle.TypeSandboxExpired, lifecycle.TypeSandboxUnreachable},
}

// FuzzHandler sends arbitrary API requests (route key, path id, headers,
// query, body, base64 flag) through the API functions' handlers, over an
// in-memory store (fuzzStore, so no DynamoDB) and the fake provider, with
// two sessions of the caller (one running, one paused) and one of another
// account. headers is "Name: value" lines; which chooses the id and key
// (see the fuzzID and fuzzKey constants) so the fuzzer reaches the routes
// past authentication. The seed corpus is in testdata/fuzz/FuzzHandler.
//
// Invariants: Handle never returns an error; a panic in a route (which
// Handle turns into a 500) or any other 500 fails, since neither this store
// nor this provider ever fails; the status is one the API documents; every
// response carries the CORS and Cache-Control headers; a 204 has no body
// and every other response is one JSON object; an error is exactly the
// envelope {"status":"error","error":"<sentence>","error_type":"<type>"}
// with a type that belongs to its status; a 401 carries WWW-Authenticate;
// Retry-After, when sent, is a positive whole number of seconds; a request
// without the caller's key is never answered 2xx (OPTIONS and the OpenAPI
// document aside); every answer matches docs/openapi.json; a 201
// carries a Location naming the created session.
func FuzzHandler(f *testing.F) {
	f.Add("POST /v1/sessions", "", "content-type: application/json", "", `{"template":"base"}`, false, byte(fuzzKeyX<<2))
	f.Fuzz(func(t *testing.T, routeKey, id, headerLines, query, body string, b64 bool, which byte) {
		fx := newFuzzFixture(t)
		switch which & 3 {
		case fuzzIDRunning:
			id = fx.running
		case fuzzIDPaused:
			id = fx.paused
		case fuzzIDForeign:
			id = fx.foreign
		}
		headers := fuzzHeaders(headerLines)
		switch (which >> 2) & 3 {
		case fuzzKeyX:
			headers["x-api-key"] = apigw.DevAPIKey
		case fuzzKeyBearer:
			headers["authorization"] = "Bearer " + apigw.DevAPIKey
		case fuzzKeyBoth:
			headers["x-api-key"] = apigw.DevAPIKey
			headers["authorization"] = "Bearer " + apigw.DevAPIKey
		}
		ev := fuzzRequest(routeKey, id, headers, query, body, b64)

		resp, err := fx.handler(routeKey).Handle(t.Context(), ev)
		if err != nil {
			t.Fatalf("Handle returned an error: %v", err)
		}
		checkFuzzResponse(t, ev, resp)
		checkContract(t, ev, resp)

		method, _, _ := strings.Cut(routeKey, " ")
		keyed := (which>>2)&3 == fuzzKeyX || (which>>2)&3 == fuzzKeyBearer ||
			strings.Contains(headerLines, apigw.DevAPIKey) || strings.Contains(headerLines, fx.otherKey)
		public := routeKey == "GET "+routes.OpenAPIPath // routes.AuthNone
		if resp.StatusCode < 300 && !keyed && !public && !strings.EqualFold(method, http.MethodOptions) {
			t.Fatalf("answered %d without an API key: %s", resp.StatusCode, resp.Body)
		}
		if resp.StatusCode == http.StatusCreated {
			var out struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal([]byte(resp.Body), &out); err != nil || out.ID == "" {
				t.Fatalf("201 body %q has no session id", resp.Body)
			}
			if got, want := resp.Headers["Location"], "/v1/sessions/"+out.ID; got != want {
				t.Errorf("Location = %q, want %q", got, want)
			}
		}
	})
}

// checkFuzzResponse checks what every response must be (FuzzHandler's doc).
func checkFuzzResponse(t *testing.T, ev events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse) {
	t.Helper()
	status := resp.StatusCode
	if status == http.StatusInternalServerError {
		t.Fatalf("%s answered 500 (a panic or an unclassified error): %s", ev.RouteKey, resp.Body)
	}
	if _, isError := fuzzErrorTypes[status]; !isError && !slices.Contains([]int{200, 201, 204}, status) {
		t.Fatalf("status %d is not one the API answers", status)
	}
	if got, want := resp.Headers["Access-Control-Allow-Origin"], "*"; got != want {
		t.Errorf("Access-Control-Allow-Origin = %q, want %q", got, want)
	}
	if got, want := resp.Headers["Cache-Control"], "no-store"; got != want {
		t.Errorf("Cache-Control = %q, want %q", got, want)
	}
	if ra, ok := resp.Headers["Retry-After"]; ok {
		if n, err := strconv.Atoi(ra); err != nil || n < 1 {
			t.Errorf("Retry-After = %q, want a positive whole number of seconds", ra)
		}
	}
	if status == http.StatusNoContent {
		if resp.Body != "" {
			t.Errorf("204 with body %q", resp.Body)
		}
		return
	}
	if got, want := resp.Headers["Content-Type"], "application/json; charset=utf-8"; got != want {
		t.Errorf("Content-Type = %q, want %q", got, want)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(resp.Body), &obj); err != nil {
		t.Fatalf("status %d body %q is not a JSON object: %v", status, resp.Body, err)
	}
	types, isError := fuzzErrorTypes[status]
	if !isError {
		return
	}
	var env struct {
		Status    string `json:"status"`
		Error     string `json:"error"`
		ErrorType string `json:"error_type"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(resp.Body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil || len(obj) != 3 {
		t.Fatalf("status %d body %q is not the error envelope: %v", status, resp.Body, err)
	}
	if env.Status != "error" || env.Error == "" || !slices.Contains(types, env.ErrorType) {
		t.Errorf("status %d envelope = %+v, want status error, a sentence and a type in %v", status, env, types)
	}
	if _, ok := resp.Headers["WWW-Authenticate"]; ok != (status == http.StatusUnauthorized) {
		t.Errorf("status %d with WWW-Authenticate %v", status, ok)
	}
}

// fuzzHeaders parses "Name: value" lines as API Gateway passes headers on:
// names lowercased, the values of a repeated name joined with commas.
func fuzzHeaders(lines string) map[string]string {
	headers := map[string]string{}
	for _, line := range strings.Split(lines, "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || name == "" {
			continue
		}
		name, value = strings.ToLower(name), strings.TrimSpace(value)
		if prev, dup := headers[name]; dup {
			value = prev + "," + value
		}
		headers[name] = value
	}
	return headers
}

// fuzzRequest builds the payload v2 event API Gateway would send.
func fuzzRequest(routeKey, id string, headers map[string]string, query, body string, b64 bool) events.APIGatewayV2HTTPRequest {
	method, path, _ := strings.Cut(routeKey, " ")
	var params map[string]string
	if strings.Contains(path, "{id}") {
		params = map[string]string{"id": id}
		path = strings.ReplaceAll(path, "{id}", id)
	}
	var qs map[string]string
	if values, err := url.ParseQuery(query); err == nil && len(values) > 0 {
		qs = map[string]string{}
		for k, vs := range values {
			qs[k] = strings.Join(vs, ",")
		}
	}
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: routeKey, RawPath: path, RawQueryString: query,
		Headers: headers, QueryStringParameters: qs, PathParameters: params,
		Body: body, IsBase64Encoded: b64,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: routeKey, RequestID: "fuzz-request", Stage: "$default",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path},
		},
	}
}

// fuzzFixture is one iteration's world: the handlers of every API function
// over a fresh fuzzStore and fake provider, and three sessions.
type fuzzFixture struct {
	handlers map[string]*apigw.Handler // by function
	running  string                    // the dev account's running session
	paused   string                    // the dev account's paused session
	foreign  string                    // otherAccount's running session
	otherKey string                    // otherAccount's API key
}

func newFuzzFixture(tb testing.TB) *fuzzFixture {
	tb.Helper()
	ctx := context.Background()
	store := newFuzzStore()
	clock := lifecycle.NewManualClock(t0)
	log := slog.New(slog.DiscardHandler)
	svc := lifecycle.NewService(lifecycle.Config{Store: store, Provider: fake.New(fake.Config{Clock: clock}), Clock: clock,
		Policy: lifecycle.DefaultPolicy(), Log: log, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	if err := store.PutAPIKey(ctx, lifecycle.APIKey{Hash: apigw.HashAPIKey(apigw.DevAPIKey), AccountID: apigw.DevAccountID, CreatedAt: t0}); err != nil {
		tb.Fatal(err)
	}
	otherKey, err := apigw.IssueAPIKey(ctx, store, otherAccount, t0)
	if err != nil {
		tb.Fatal(err)
	}
	fx := &fuzzFixture{handlers: map[string]*apigw.Handler{}, otherKey: otherKey}
	for _, fn := range apiFunctions {
		h, err := apigw.New(apigw.Config{Function: fn, Service: svc, Keys: store, Log: log})
		if err != nil {
			tb.Fatal(err)
		}
		fx.handlers[fn] = h
	}
	for _, s := range []struct {
		account string
		id      *string
	}{{apigw.DevAccountID, &fx.running}, {apigw.DevAccountID, &fx.paused}, {otherAccount, &fx.foreign}} {
		sess, _, err := svc.Create(ctx, s.account, lifecycle.CreateInput{Template: "base"})
		if err != nil {
			tb.Fatal(err)
		}
		*s.id = sess.ID
	}
	if _, err := svc.PauseNow(ctx, apigw.DevAccountID, fx.paused); err != nil {
		tb.Fatal(err)
	}
	return fx
}

// handler returns the handler of the function that serves routeKey, or the
// sessions function's for a route outside the table.
func (fx *fuzzFixture) handler(routeKey string) *apigw.Handler {
	for _, rt := range routes.Table {
		if rt.Key() == routeKey && fx.handlers[rt.Function] != nil {
			return fx.handlers[rt.Function]
		}
	}
	return fx.handlers[routes.Sessions]
}

// fuzzStore is an in-memory lifecycle.Store with the contract's rules that
// the API routes rely on: conditional writes on (state, version) checked
// against the transition table, an idle deadline that never moves back,
// the sweep's due guard, owner listing with an opaque cursor, claims and
// API keys. FindDue finds nothing (no route uses it). Claims never expire
// (a fixture lives for one request).
type fuzzStore struct {
	mu       sync.Mutex
	sessions map[string]*lifecycle.Session
	claims   map[string]string
	keys     map[string]lifecycle.APIKey
}

var _ lifecycle.Store = (*fuzzStore)(nil)

func newFuzzStore() *fuzzStore {
	return &fuzzStore{sessions: map[string]*lifecycle.Session{}, claims: map[string]string{}, keys: map[string]lifecycle.APIKey{}}
}

func (s *fuzzStore) CreateSession(_ context.Context, sess *lifecycle.Session) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sessions[sess.ID]; ok {
		return lifecycle.Errorf(lifecycle.CodeConflict, "session %s already exists", sess.ID)
	}
	sess.Version = 1
	s.sessions[sess.ID] = sess.Clone()
	return nil
}

func (s *fuzzStore) GetSession(_ context.Context, id string) (*lifecycle.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[id]
	if !ok {
		return nil, lifecycle.Errorf(lifecycle.CodeNotFound, "no session %s", id)
	}
	return sess.Clone(), nil
}

func (s *fuzzStore) ListSessions(_ context.Context, accountID, cursor string, limit int) (lifecycle.SessionPage, error) {
	if limit < 1 || limit > 100 {
		return lifecycle.SessionPage{}, lifecycle.Errorf(lifecycle.CodeInvalid, "limit must be between 1 and 100")
	}
	offset := 0
	if cursor != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(cursor, "o"))
		if err != nil || !strings.HasPrefix(cursor, "o") || n < 0 {
			return lifecycle.SessionPage{}, lifecycle.Errorf(lifecycle.CodeInvalid, "cursor is not valid")
		}
		offset = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var mine []*lifecycle.Session
	for _, sess := range s.sessions {
		if sess.AccountID == accountID {
			mine = append(mine, sess.Clone())
		}
	}
	slices.SortFunc(mine, func(a, b *lifecycle.Session) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	if offset > len(mine) {
		offset = len(mine)
	}
	page := lifecycle.SessionPage{Sessions: mine[offset:]}
	if len(page.Sessions) > limit {
		page.Sessions = page.Sessions[:limit]
		page.Cursor = "o" + strconv.Itoa(offset+limit)
	}
	return page, nil
}

func (s *fuzzStore) FindBySandbox(_ context.Context, provider, sandboxID string) (*lifecycle.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sess := range s.sessions {
		if sess.Provider == provider && sess.SandboxID == sandboxID && sandboxID != "" {
			return sess.Clone(), nil
		}
	}
	return nil, lifecycle.Errorf(lifecycle.CodeNotFound, "no session holds sandbox %s", sandboxID)
}

func (s *fuzzStore) UpdateSession(_ context.Context, sess *lifecycle.Session, from lifecycle.State, guard lifecycle.Guard) error {
	if sess.State != from {
		if err := lifecycle.CheckTransition(from, sess.State); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.sessions[sess.ID]
	switch {
	case !ok:
		return lifecycle.Errorf(lifecycle.CodeNotFound, "no session %s", sess.ID)
	case old.State != from || old.Version != sess.Version:
		return lifecycle.Errorf(lifecycle.CodeConflict, "session %s changed meanwhile", sess.ID)
	case !old.IdleDeadline.IsZero() && sess.IdleDeadline.Before(old.IdleDeadline):
		return lifecycle.Errorf(lifecycle.CodeConflict, "the idle deadline of session %s cannot move backwards", sess.ID)
	case !guard.DueBy.IsZero() && (old.State != lifecycle.StateRunning || old.PauseDeadline().After(guard.DueBy)):
		return lifecycle.Errorf(lifecycle.CodeConflict, "session %s is no longer due", sess.ID)
	}
	sess.Version++
	s.sessions[sess.ID] = sess.Clone()
	return nil
}

func (s *fuzzStore) FindDue(context.Context, lifecycle.DueQuery) (lifecycle.SessionPage, error) {
	return lifecycle.SessionPage{}, nil
}

func (s *fuzzStore) Claim(_ context.Context, key, value string, _ time.Duration, _ time.Time) (bool, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if stored, ok := s.claims[key]; ok {
		return false, stored, nil
	}
	s.claims[key] = value
	return true, value, nil
}

func (s *fuzzStore) ReleaseClaim(_ context.Context, key, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.claims[key] == value {
		delete(s.claims, key)
	}
	return nil
}

func (s *fuzzStore) PutAPIKey(_ context.Context, k lifecycle.APIKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.keys[k.Hash]; ok {
		return lifecycle.Errorf(lifecycle.CodeConflict, "api key exists")
	}
	s.keys[k.Hash] = k
	return nil
}

func (s *fuzzStore) GetAPIKey(_ context.Context, hash string) (lifecycle.APIKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.keys[hash]
	if !ok {
		return lifecycle.APIKey{}, lifecycle.Errorf(lifecycle.CodeNotFound, "no api key")
	}
	return k, nil
}
