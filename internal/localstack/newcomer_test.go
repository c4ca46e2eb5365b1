package localstack_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/localstack"
	"github.com/sandmanhq/sandman/internal/provider/local"
)

// syncBuffer is a bytes.Buffer safe for the stack's writer and the test's
// reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runStack starts localstack.Run with vars as its whole environment and
// returns the API's base URL and the banner written so far; the stack is
// stopped (and its sandboxes left to the caller) at cleanup.
func runStack(t *testing.T, vars map[string]string) (base string, banner *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	banner = &syncBuffer{}
	go func() {
		done <- localstack.Run(ctx, localstack.Config{Getenv: func(k string) string { return vars[k] }, Out: banner,
			Log: slog.New(slog.DiscardHandler), Ready: func(u string) { ready <- u }})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("local stack: %v", err)
		}
	})
	select {
	case base = <-ready:
	case err := <-done:
		done <- err // for the cleanup
		t.Fatalf("local stack did not start: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("local stack did not start within 2 min")
	}
	return base, banner
}

// stackVars is the environment of a local stack on the test's DynamoDB
// Local (a table of its own) with its own state folder.
func stackVars(t *testing.T) map[string]string {
	t.Helper()
	endpoint := os.Getenv(envnames.DynamoEndpoint)
	if endpoint == "" {
		t.Skip("DYNAMODB_ENDPOINT is not set: this test needs DynamoDB Local (make test starts it)")
	}
	return map[string]string{
		envnames.DynamoEndpoint: endpoint,
		envnames.Table:          "newcomer-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		envnames.Addr:           "127.0.0.1:0",
		envnames.StateDir:       t.TempDir(),
		envnames.Provider:       local.ProviderName,
		envnames.DevAPIKey:      "sk_newcomernewcomernewcomer234567",
	}
}

// TestMakeRunBannerNamesTheConsoleURL: the banner `make run` prints names
// the console's URL, and that URL serves the console.
func TestMakeRunBannerNamesTheConsoleURL(t *testing.T) {
	base, banner := runStack(t, stackVars(t))
	url := base + "/console/"
	if !strings.Contains(banner.String(), url) {
		t.Fatalf("banner does not name %s:\n%s", url, banner)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "<html") {
		t.Errorf("GET %s = %d %.80q, want 200 and the console page", url, resp.StatusCode, body)
	}
}

// TestMakeRunStartsDynamoDBLocalOnSANDMAN_DDB_PORT: with SANDMAN_DDB_PORT
// set, the DynamoDB Local the stack starts listens on that port (the banner
// names it and it answers there); a value that is not a port stops the
// boot naming the variable.
func TestMakeRunStartsDynamoDBLocalOnSANDMAN_DDB_PORT(t *testing.T) {
	vars := stackVars(t)
	delete(vars, envnames.DynamoEndpoint) // the stack starts its own
	vars[envnames.InMemory] = "1"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	vars[envnames.DDBPort] = strconv.Itoa(port)

	_, banner := runStack(t, vars)
	endpoint := "http://127.0.0.1:" + strconv.Itoa(port)
	if !strings.Contains(banner.String(), "DynamoDB Local   "+endpoint+" ") {
		t.Errorf("banner does not name DynamoDB Local at %s:\n%s", endpoint, banner)
	}
	resp, err := http.Get(endpoint + "/")
	if err != nil {
		t.Fatalf("DynamoDB Local does not answer on %s: %v", endpoint, err)
	}
	resp.Body.Close()

	bad := stackVars(t)
	delete(bad, envnames.DynamoEndpoint)
	bad[envnames.DDBPort] = "99999"
	err = localstack.Run(t.Context(), localstack.Config{Getenv: func(k string) string { return bad[k] }, Out: io.Discard,
		Log: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), envnames.DDBPort) {
		t.Errorf("Run with %s=99999 = %v, want an error naming the variable", envnames.DDBPort, err)
	}
}
