package apigwmgmt_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/sandmanhq/sandman/internal/channel"
	"github.com/sandmanhq/sandman/internal/channel/apigwmgmt"
)

// mgmtAPI behaves as the API Gateway Management API of one stage does for
// PostToConnection: POST /{stage}/@connections/{id} with the message as
// the body; 200 for a live connection, 410 with x-amzn-ErrorType
// GoneException for one it no longer holds, 403 ForbiddenException when the
// request is not signed for execute-api.
type mgmtAPI struct {
	stage string
	mu    sync.Mutex
	live  map[string]bool
	got   map[string][]string
	fail  int // answer the next fail requests with 500
	calls int
}

func (m *mgmtAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	id, ok := strings.CutPrefix(r.URL.Path, "/"+m.stage+"/@connections/")
	if r.Method != http.MethodPost || !ok || id == "" {
		w.Header().Set("x-amzn-ErrorType", "BadRequestException")
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if !strings.Contains(r.Header.Get("Authorization"), "/execute-api/aws4_request") {
		w.Header().Set("x-amzn-ErrorType", "ForbiddenException")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"message":"Forbidden"}`)
		return
	}
	if m.fail > 0 {
		m.fail--
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"message":"Internal server error"}`)
		return
	}
	if !m.live[id] {
		w.Header().Set("x-amzn-ErrorType", "GoneException")
		w.WriteHeader(http.StatusGone)
		_, _ = io.WriteString(w, `{"message":null}`)
		return
	}
	body, _ := io.ReadAll(r.Body)
	m.got[id] = append(m.got[id], string(body))
	w.WriteHeader(http.StatusOK)
}

func newPusher(t *testing.T, m *mgmtAPI) *apigwmgmt.Pusher {
	t.Helper()
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	cfg := aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		RetryMaxAttempts: 2}
	client, err := apigwmgmt.NewClient(cfg, srv.URL+"/"+m.stage)
	if err != nil {
		t.Fatal(err)
	}
	p, err := apigwmgmt.New(apigwmgmt.Config{API: client})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPush(t *testing.T) {
	m := &mgmtAPI{stage: "live", live: map[string]bool{"abc=": true}, got: map[string][]string{}}
	p := newPusher(t, m)
	t.Run("OK", func(t *testing.T) {
		msg := `{"type":"session","session":{"state":"paused"}}`
		if err := p.Push(t.Context(), "abc=", []byte(msg)); err != nil {
			t.Fatal(err)
		}
		if got := m.got["abc="]; len(got) != 1 || got[0] != msg {
			t.Errorf("the API got %q, want [%q]", got, msg)
		}
	})
	t.Run("ErrGone", func(t *testing.T) {
		err := p.Push(t.Context(), "closed", []byte(`{}`))
		if !errors.Is(err, channel.ErrGone) {
			t.Errorf("err %v, want channel.ErrGone", err)
		}
	})
	t.Run("RetriedServerError", func(t *testing.T) {
		m.fail, m.calls = 1, 0
		if err := p.Push(t.Context(), "abc=", []byte(`{}`)); err != nil {
			t.Fatalf("a 500 then a 200: %v", err)
		}
		if m.calls != 2 {
			t.Errorf("%d calls, want 2 (the SDK retries a 500)", m.calls)
		}
	})
	t.Run("ErrServerErrorNotGone", func(t *testing.T) {
		m.fail = 10
		err := p.Push(t.Context(), "abc=", []byte(`{}`))
		if err == nil || errors.Is(err, channel.ErrGone) {
			t.Errorf("err %v, want an error that is not ErrGone", err)
		}
		m.fail = 0
	})
}

// TestPushPlain410: a 410 without the error type header is gone too.
func TestPushPlain410(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusGone)
	}))
	t.Cleanup(srv.Close)
	cfg := aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")}
	client, err := apigwmgmt.NewClient(cfg, srv.URL+"/prod")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := apigwmgmt.New(apigwmgmt.Config{API: client})
	if err := p.Push(t.Context(), "x", []byte(`{}`)); !errors.Is(err, channel.ErrGone) {
		t.Errorf("err %v, want channel.ErrGone", err)
	}
}

func TestNewRequiresAPI(t *testing.T) {
	if _, err := apigwmgmt.New(apigwmgmt.Config{}); err == nil {
		t.Error("New without an API client: no error")
	}
	if _, err := apigwmgmt.NewClient(aws.Config{}, ""); err == nil {
		t.Error("NewClient without an endpoint: no error")
	}
}
