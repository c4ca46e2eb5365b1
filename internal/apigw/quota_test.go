package apigw_test

import (
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// withMaxRunning rebuilds h's handlers on a service with max_running n.
func (h *harness) withMaxRunning(tb testing.TB, n int) {
	tb.Helper()
	cfg := h.svc.Config()
	cfg.MaxRunning = n
	h.svc = lifecycle.NewService(cfg)
	for _, fn := range apiFunctions {
		hd, err := apigw.New(apigw.Config{Function: fn, Service: h.svc, Keys: h.store, Log: apigwLogger(h.logs)})
		if err != nil {
			tb.Fatalf("apigw.New(%s): %v", fn, err)
		}
		h.handlers[fn] = hd
	}
}

// TestQuotaAnswers429: past max_running a create and a resume answer 429
// quota_exceeded naming the limit (validated against the OpenAPI document
// like every answer of the harness), without asking the provider; a pause
// frees the slot.
func TestQuotaAnswers429(t *testing.T) {
	h := MustHarness(t)
	h.withMaxRunning(t, 1)
	first := h.mustCreate(t)
	calls := h.providerCalls()
	r := h.invoke(t, MustEvent(t, "sessions-create.json", withHeader("idempotency-key", "")))
	wantError(t, r, 429, "quota_exceeded", "1 running sandbox,", "max_running")
	if got := h.providerCalls(); got != calls {
		t.Errorf("a refused create made %d provider calls", got-calls)
	}
	wantStatus(t, h.invoke(t, MustEvent(t, "snapshot.json", withID(first.ID))), 200)
	second := h.mustCreate(t)
	if second.State != "running" {
		t.Fatalf("create after a pause: state %s", second.State)
	}
	r = h.invoke(t, MustEvent(t, "resume.json", withID(first.ID)))
	wantError(t, r, 429, "quota_exceeded", "max_running")
	if got := h.mustSession(t, first.ID).State; got != lifecycle.StatePaused {
		t.Errorf("refused resume left the session %s, want paused", got)
	}
}

// TestQuotaKeyOverride: a key with max_running 2 on a deployment limit of
// 10 lets 2 of 6 concurrent creates through and answers 429 naming 2 to the
// rest; its resume is held to 2 as well; another key of the same account
// keeps the deployment's 10, counted on the same per-account counter.
func TestQuotaKeyOverride(t *testing.T) { forEachStore(t, testQuotaKeyOverride) }

func testQuotaKeyOverride(t *testing.T, newHarness harnessMaker) {
	h := newHarness(t)
	h.withMaxRunning(t, 10)
	limited, err := apigw.IssueLimitedAPIKey(t.Context(), h.store, apigw.DevAccountID, 2, t0)
	if err != nil {
		t.Fatal(err)
	}
	const creates = 6
	results := make([]result, creates)
	var wg sync.WaitGroup
	for i := range creates {
		wg.Go(func() {
			results[i] = h.invoke(t, MustEvent(t, "sessions-create.json", withHeader("idempotency-key", ""), withKey(limited)))
		})
	}
	wg.Wait()
	var created []string
	refused := 0
	for _, r := range results {
		switch r.status {
		case 201:
			created = append(created, mustDecode[api.Session](t, r).ID)
		case 429:
			wantError(t, r, 429, "quota_exceeded", "2 running sandboxes,", "max_running")
			refused++
		default:
			t.Errorf("create answered %d: %s", r.status, r.body)
		}
	}
	if len(created) != 2 || refused != creates-2 {
		t.Fatalf("%d created, %d refused; want 2 and %d", len(created), refused, creates-2)
	}
	// The dev key (no override) of the same account: the deployment's 10.
	third := h.mustCreate(t)
	if third.State != "running" {
		t.Fatalf("create with the unlimited key: %s", third.State)
	}
	// The limited key cannot resume while its account holds 3 ≥ 2.
	wantStatus(t, h.invoke(t, MustEvent(t, "snapshot.json", withID(created[0]))), 200)
	wantError(t, h.invoke(t, MustEvent(t, "resume.json", withID(created[0]), withKey(limited))), 429, "quota_exceeded", "2 running sandboxes,")
	wantStatus(t, h.invoke(t, MustEvent(t, "resume.json", withID(created[0]))), 200)
	if n, err := h.store.RunningSlots(t.Context(), apigw.DevAccountID); err != nil || n != 3 {
		t.Errorf("running slots = %d, %v; want 3", n, err)
	}
}

// TestQuotaKeyOverrideNeedsDeploymentLimit: without a deployment limit no
// counter is kept (internal/app), so an override is ignored rather than
// refusing every create.
func TestQuotaKeyOverrideNeedsDeploymentLimit(t *testing.T) {
	h := MustHarness(t)
	limited, err := apigw.IssueLimitedAPIKey(t.Context(), h.store, apigw.DevAccountID, 1, t0)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		wantStatus(t, h.invoke(t, MustEvent(t, "sessions-create.json", withHeader("idempotency-key", ""), withKey(limited))), 201)
	}
}

// TestKeyTiers: a key minted with its account's tiers (sandman apikey
// -archive-after/-delete-after) gives them to the sessions created with
// it, under a create's own fields; another key of the same account keeps
// the deployment's (none here: the fake keeps paused sandboxes for ever,
// so never).
func TestKeyTiers(t *testing.T) {
	h := MustHarness(t)
	day := 24 * time.Hour
	archive, del := 2*day, time.Duration(0)
	key, err := apigw.IssueAPIKeyWith(t.Context(), h.store, lifecycle.APIKey{AccountID: apigw.DevAccountID, CreatedAt: t0,
		Tiers: lifecycle.Tiers{ArchiveAfter: &archive, DeleteAfter: &del}})
	if err != nil {
		t.Fatal(err)
	}
	r := h.invoke(t, MustEvent(t, "sessions-create.json", withHeader("idempotency-key", ""), withKey(key)))
	wantStatus(t, r, 201)
	if got := mustDecode[api.Session](t, r); got.ArchiveAfterSeconds != int64(archive/time.Second) || got.DeleteAfterSeconds != 0 {
		t.Errorf("with the key: archive_after_seconds %d, delete_after_seconds %d; want %d and 0 (never)",
			got.ArchiveAfterSeconds, got.DeleteAfterSeconds, int64(archive/time.Second))
	}
	if got := h.mustCreate(t); got.ArchiveAfterSeconds != 0 {
		t.Errorf("with the dev key: archive_after_seconds %d, want 0 (the deployment sets none)", got.ArchiveAfterSeconds)
	}
	bad := time.Second
	if _, err := apigw.IssueAPIKeyWith(t.Context(), h.store, lifecycle.APIKey{AccountID: apigw.DevAccountID,
		Tiers: lifecycle.Tiers{ArchiveAfter: &bad}}); err == nil {
		t.Error("a key archiving after 1 s was issued")
	}
}
