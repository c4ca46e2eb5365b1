package providerhook_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/e2bhook"
	"github.com/sandmanhq/sandman/internal/providerhook"
)

// BenchmarkHandler measures the whole handler path on DynamoDB Local:
// verify, parse, find the session, the conditional transition write and the
// dedupe claim. Deliveries alternate paused and resumed with increasing
// timestamps, so every one applies (and publishes). Signing happens before
// the timer starts. It reports events/s and the p50/p99 latency in ms.
func BenchmarkHandler(b *testing.B) {
	h := MustDynamoHarness(b)
	h.MustSession(b)
	h.handler = mustQuietHandler(b, h)

	reqs := make([]events.APIGatewayV2HTTPRequest, b.N)
	paused, resumed := fixtureBody(b, e2bhook.TypePaused), fixtureBody(b, e2bhook.TypeResumed)
	for i := range reqs {
		body := paused
		if i%2 == 1 {
			body = resumed
		}
		body.ID = fmt.Sprintf("bench-%d", i)
		body.Timestamp = fixtureStart.Add(time.Duration(i+1) * time.Millisecond).Format(time.RFC3339Nano)
		reqs[i] = SignedRequest(b, body)
	}
	h.clock.Set(fixtureStart.Add(time.Hour))

	lat := make([]time.Duration, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		resp, err := h.handler.Handle(b.Context(), reqs[i])
		lat[i] = time.Since(start)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("delivery %d: status %d %s %v", i, resp.StatusCode, resp.Body, err)
		}
	}
	b.StopTimer()

	if got, want := len(h.Published()), b.N; got != want {
		b.Fatalf("published %d events, want %d (every delivery applies)", got, want)
	}
	reportLatency(b, lat)
}

// BenchmarkVerifyAndParse measures the checks before the apply step alone.
func BenchmarkVerifyAndParse(b *testing.B) {
	hd := MustStubHandler(b, &stubApplier{outcome: lifecycle.WebhookApplied})
	req := MustFixtureRequest(b, "apigw-e2b-paused.json")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := hd.VerifyAndParse(req); err != nil {
			b.Fatal(err)
		}
	}
}

// mustQuietHandler rebuilds h's handler and service logging at warn, so
// the benchmark measures the path, not the log encoder.
func mustQuietHandler(tb testing.TB, h *harness) *providerhook.Handler {
	tb.Helper()
	quiet := slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg := h.service.Config()
	cfg.Log = quiet
	h.service = lifecycle.NewService(cfg)
	return MustHandler(tb, h.service, h.provider.Name(), func(c *providerhook.Config) { c.Log = quiet })
}

func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	var total time.Duration
	for _, d := range lat {
		total += d
	}
	b.ReportMetric(float64(len(lat))/total.Seconds(), "events/s")
	b.ReportMetric(float64(pct(0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(pct(0.99).Microseconds())/1000, "p99-ms")
}
