package apigw_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/delivery/memstore"
	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// publicResolver resolves every name to one public address.
type publicResolver struct{}

func (publicResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
}

// jobRecorder is a delivery.Dispatcher that keeps the jobs.
type jobRecorder struct {
	mu   sync.Mutex
	jobs []delivery.Job
}

func (r *jobRecorder) Dispatch(_ context.Context, j delivery.Job, _ time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.jobs = append(r.jobs, j)
	return nil
}

// withEndpoint puts a webhook endpoint id into the path.
func withEndpoint(id string) func(*events.APIGatewayV2HTTPRequest) {
	return func(ev *events.APIGatewayV2HTTPRequest) {
		old := ev.PathParameters["id"]
		ev.PathParameters["id"] = id
		ev.RawPath = strings.Replace(ev.RawPath, old, id, 1)
		ev.RequestContext.HTTP.Path = strings.Replace(ev.RequestContext.HTTP.Path, old, id, 1)
	}
}

func withDelivery(id string) func(*events.APIGatewayV2HTTPRequest) {
	return func(ev *events.APIGatewayV2HTTPRequest) {
		old := ev.PathParameters["delivery_id"]
		ev.PathParameters["delivery_id"] = id
		ev.RawPath = strings.Replace(ev.RawPath, old, id, 1)
	}
}

func decode[T any](t *testing.T, body string) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return v
}

func TestWebhookEndpointRoutes(t *testing.T) {
	store := memstore.New()
	jobs := &jobRecorder{}
	svc := delivery.NewService(store, delivery.Guard{Resolver: publicResolver{}}, jobs, nil)
	h := MustHarness(t, func(c *apigw.Config) { c.Webhooks = svc })

	r := h.invoke(t, MustEvent(t, "webhook-endpoints-create.json"))
	wantStatus(t, r, 201)
	created := decode[api.WebhookEndpoint](t, r.body)
	if !strings.HasPrefix(created.Secret, "whsec_") || len(created.EventTypes) != 2 {
		t.Fatalf("create: %+v", created)
	}
	if got, want := r.headers["Location"], "/v1/webhook-endpoints/"+created.ID; got != want {
		t.Errorf("Location = %q, want %q", got, want)
	}
	id := withEndpoint(created.ID)

	t.Run("ListAndGetHideTheSecret", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "webhook-endpoints-list.json"))
		wantStatus(t, r, 200)
		list := decode[api.WebhookEndpointList](t, r.body)
		if len(list.WebhookEndpoints) != 1 || list.WebhookEndpoints[0].Secret != "" {
			t.Errorf("list: %+v", list)
		}
		r = h.invoke(t, MustEvent(t, "webhook-endpoints-get.json", id))
		wantStatus(t, r, 200)
		if strings.Contains(r.body, "whsec_") {
			t.Errorf("get shows the secret: %s", r.body)
		}
	})
	t.Run("AnotherAccountGets404", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "webhook-endpoints-get.json", id, withKey(h.otherKey)))
		wantStatus(t, r, 404)
	})
	t.Run("Patch", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "webhook-endpoints-patch.json", id))
		wantStatus(t, r, 200)
		got := decode[api.WebhookEndpoint](t, r.body)
		if !got.Disabled || got.DisabledReason == nil || *got.DisabledReason != "disabled by request" {
			t.Errorf("patch disabled: %+v", got)
		}
		r = h.invoke(t, MustEvent(t, "webhook-endpoints-patch.json", id, withBody(`{"event_types":["session.nope"]}`)))
		wantStatus(t, r, 400)
	})
	t.Run("RotateSecret", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "webhook-endpoints-rotate-secret.json", id))
		wantStatus(t, r, 200)
		got := decode[api.WebhookEndpoint](t, r.body)
		if got.Secret == created.Secret || !strings.HasPrefix(got.Secret, "whsec_") || got.PreviousSecretExpiresAt == nil {
			t.Errorf("rotate: %+v", got)
		}
	})
	t.Run("UnsafeURLsAre400", func(t *testing.T) {
		for _, url := range []string{"http://169.254.169.254/latest", "https://10.0.0.1/hook", "http://hooks.example.com/plain"} {
			r := h.invoke(t, MustEvent(t, "webhook-endpoints-create.json", withBody(`{"url":"`+url+`"}`)))
			wantStatus(t, r, 400)
			if !strings.Contains(r.body, `"error_type":"invalid"`) {
				t.Errorf("%s: %s", url, r.body)
			}
		}
	})
	t.Run("DeliveriesAndRetry", func(t *testing.T) {
		now := time.Now().UTC()
		d := &delivery.Delivery{ID: delivery.DeliveryID(now, created.ID, "ses_a:2"), EndpointID: created.ID, AccountID: apigw.DevAccountID,
			EventID: "ses_a:2", EventType: "session.paused", Payload: []byte(`{}`), Status: delivery.StatusFailed,
			Reason: "retry schedule exhausted", Attempts: []delivery.Attempt{{At: now, StatusCode: 500, LatencyMS: 7, Response: "no"},
				{At: now, LatencyMS: 15000, Error: "timeout: no answer within 15s"}},
			CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(delivery.LogRetention), Version: 1}
		if _, err := store.CreateDelivery(context.Background(), d); err != nil {
			t.Fatal(err)
		}
		r := h.invoke(t, MustEvent(t, "webhook-endpoints-deliveries.json", id))
		wantStatus(t, r, 200)
		list := decode[api.WebhookDeliveryList](t, r.body)
		if len(list.Deliveries) != 1 || list.Deliveries[0].Status != "failed" || len(list.Deliveries[0].Attempts) != 2 ||
			*list.Deliveries[0].Attempts[0].StatusCode != 500 || list.Deliveries[0].Attempts[1].StatusCode != nil {
			t.Fatalf("deliveries: %s", r.body)
		}
		r = h.invoke(t, MustEvent(t, "webhook-endpoints-retry.json", id, withDelivery(d.ID)))
		wantStatus(t, r, 202)
		if got := decode[api.WebhookDelivery](t, r.body); got.Status != "pending" || got.NextAttemptAt == nil {
			t.Errorf("retry: %+v", got)
		}
		if len(jobs.jobs) != 1 || jobs.jobs[0].DeliveryID != d.ID || jobs.jobs[0].Seq != 2 {
			t.Errorf("dispatched jobs: %+v", jobs.jobs)
		}
		r = h.invoke(t, MustEvent(t, "webhook-endpoints-deliveries.json", id, withQuery("cursor", "bogus")))
		wantStatus(t, r, 400)
	})
	t.Run("Delete", func(t *testing.T) {
		wantStatus(t, h.invoke(t, MustEvent(t, "webhook-endpoints-delete.json", id)), 204)
		wantStatus(t, h.invoke(t, MustEvent(t, "webhook-endpoints-get.json", id)), 404)
		wantStatus(t, h.invoke(t, MustEvent(t, "webhook-endpoints-delete.json", id)), 404)
	})
}

func TestWebhookEndpointsNotConfiguredAre503(t *testing.T) {
	h := MustHarness(t)
	r := h.invoke(t, MustEvent(t, "webhook-endpoints-list.json"))
	wantStatus(t, r, 503)
}

// TestAWebhookURLPortOutsideOneTo65535Is400: creating or repointing an
// endpoint at a port outside 1-65535 answers 400 invalid, the error
// naming the range; such a URL parses, but no delivery could reach it.
func TestAWebhookURLPortOutsideOneTo65535Is400(t *testing.T) {
	svc := delivery.NewService(memstore.New(), delivery.Guard{Resolver: publicResolver{}}, &jobRecorder{}, nil)
	h := MustHarness(t, func(c *apigw.Config) { c.Webhooks = svc })
	for _, port := range []string{"99999", "0", "65536"} {
		body := `{"url":"https://hooks.example.com:` + port + `/hook"}`
		r := h.invoke(t, MustEvent(t, "webhook-endpoints-create.json", withBody(body)))
		wantError(t, r, 400, "invalid", "port "+port, "1 to 65535")
	}
	r := h.invoke(t, MustEvent(t, "webhook-endpoints-create.json", withBody(`{"url":"https://hooks.example.com:8443/hook"}`)))
	wantStatus(t, r, 201)
	id := withEndpoint(decode[api.WebhookEndpoint](t, r.body).ID)
	r = h.invoke(t, MustEvent(t, "webhook-endpoints-patch.json", id, withBody(`{"url":"https://hooks.example.com:99999/hook"}`)))
	wantError(t, r, 400, "invalid", "port 99999", "1 to 65535")
}
