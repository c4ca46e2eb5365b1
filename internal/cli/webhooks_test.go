package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/cli"
	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/delivery/memstore"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	sessionstore "github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/localstack"
	apishape "github.com/sandmanhq/sandman/internal/openapi/api"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/routes"
)

// runWebhooks runs `sandman webhooks args...` and returns the exit status,
// stdout and stderr.
func runWebhooks(tb testing.TB, url string, args ...string) (int, string, string) {
	tb.Helper()
	var out, errOut bytes.Buffer
	env := cli.Env{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string {
		return map[string]string{"SANDMAN_URL": url, "SANDMAN_API_KEY": apigw.DevAPIKey}[k]
	}}
	code := cli.WebhooksMain(tb.Context(), args, env)
	return code, out.String(), errOut.String()
}

// TestWebhooksCommand registers an endpoint, lets one event be delivered
// (500 then 200), reads the log and replays it, all through the CLI
// against the sessions function.
func TestWebhooksCommand(t *testing.T) {
	var mu sync.Mutex
	codes := []int{500, 200}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		code := codes[0]
		if len(codes) > 1 {
			codes = codes[1:]
		}
		mu.Unlock()
		w.WriteHeader(code)
	}))
	defer rcv.Close()

	store := sessionstore.New()
	if err := store.PutAPIKey(t.Context(), lifecycle.APIKey{Hash: apigw.HashAPIKey(apigw.DevAPIKey), AccountID: apigw.DevAccountID}); err != nil {
		t.Fatal(err)
	}
	hooks := memstore.New()
	guard := delivery.Guard{AllowPrivate: true}
	local := delivery.NewLocal(delivery.LocalConfig{})
	engine, err := delivery.NewEngine(delivery.Config{Store: hooks, Dispatcher: local, Guard: guard,
		Schedule: []time.Duration{0, 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	local.Start(ctx, engine)
	defer func() { cancel(); local.Wait() }()
	svc := lifecycle.NewService(lifecycle.Config{Store: store, Provider: fake.New(fake.Config{}), Policy: lifecycle.DefaultPolicy()})
	h, err := apigw.New(apigw.Config{Function: routes.Sessions, Service: svc, Keys: store,
		Webhooks: delivery.NewService(hooks, guard, local, nil)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&localstack.Gateway{Functions: map[string]localstack.HTTPHandler{
		routes.Sessions: func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			return h.Handle(ctx, ev)
		}}})
	defer srv.Close()

	code, out, errOut := runWebhooks(t, srv.URL, "create", rcv.URL, "--event-type", "session.paused", "-o", "json")
	if code != 0 {
		t.Fatalf("create: exit %d: %s", code, errOut)
	}
	var ep apishape.WebhookEndpoint
	if err := json.Unmarshal([]byte(out), &ep); err != nil || !strings.HasPrefix(ep.Secret, "whsec_") {
		t.Fatalf("create output %q: %v", out, err)
	}
	if code, out, _ := runWebhooks(t, srv.URL, "list"); code != 0 || !strings.Contains(out, ep.ID) || strings.Contains(out, "whsec_") {
		t.Errorf("list: exit %d\n%s", code, out)
	}

	ev := lifecycle.Event{EventID: "ses_a:3", SessionID: "ses_a", AccountID: apigw.DevAccountID, From: "running", To: "paused",
		Version: 3, Reason: "idle", Time: time.Now().UTC()}
	if err := engine.Accept(ctx, ev); err != nil {
		t.Fatal(err)
	}
	local.Idle()
	code, out, _ = runWebhooks(t, srv.URL, "deliveries", ep.ID)
	if code != 0 || !strings.Contains(out, "succeeded") || !strings.Contains(out, "500,200") {
		t.Fatalf("deliveries table: exit %d\n%s", code, out)
	}
	id := delivery.DeliveryID(ev.Time, ep.ID, ev.EventID)
	if code, out, errOut := runWebhooks(t, srv.URL, "retry", ep.ID, id); code != 0 || !strings.Contains(out, "pending") {
		t.Fatalf("retry: exit %d\n%s%s", code, out, errOut)
	}
	local.Idle()
	if _, out, _ := runWebhooks(t, srv.URL, "deliveries", ep.ID); !strings.Contains(out, "500,200,200") {
		t.Errorf("after the replay:\n%s", out)
	}
	if code, _, _ := runWebhooks(t, srv.URL, "delete", ep.ID); code != 0 {
		t.Errorf("delete: exit %d", code)
	}
	if code, _, _ := runWebhooks(t, srv.URL, "delete", ep.ID); code != cli.ExitCode(&cli.APIError{ErrorType: "not_found"}) {
		t.Errorf("delete twice: exit %d, want not_found's", code)
	}
	if code, _, errOut := runWebhooks(t, srv.URL, "create", "--url", rcv.URL); code != cli.ExitUsage || !strings.Contains(errOut, "takes the endpoint's URL") {
		t.Errorf("create with the endpoint as --url (the API's): exit %d, %q; want a usage line naming the argument", code, errOut)
	}
}
