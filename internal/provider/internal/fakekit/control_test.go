package fakekit_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

// Faults set through Control serve as Kit.Fail's and FailUntil's do.
func TestControlQueuesAndStandsFaults(t *testing.T) {
	var k fakekit.Kit[op, fakekit.Fault]
	api := k.Handle("snapshot", &served{}, func(w http.ResponseWriter, _ *http.Request, f fakekit.Fault) {
		w.WriteHeader(f.Status)
	})
	ctl := fakekit.Control(&k)
	send := func(method, target, body string) int {
		rec := httptest.NewRecorder()
		ctl.ServeHTTP(rec, httptest.NewRequest(method, target, strings.NewReader(body)))
		return rec.Code
	}
	status := func() int {
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, httptest.NewRequest("POST", "/", nil))
		return rec.Code
	}
	if got := send("POST", "/_fake/faults", `{"op":"snapshot","fault":{"status":500},"count":2}`); got != 204 {
		t.Fatalf("queue: %d", got)
	}
	if a, b, c := status(), status(), status(); a != 500 || b != 500 || c != 200 {
		t.Errorf("after two queued faults: %d %d %d, want 500 500 200", a, b, c)
	}
	send("POST", "/_fake/faults", `{"op":"snapshot","fault":{"status":503},"standing":true}`)
	if a, b := status(), status(); a != 503 || b != 503 {
		t.Errorf("with a standing fault: %d %d, want 503 503", a, b)
	}
	if got := send("DELETE", "/_fake/faults?op=snapshot", ""); got != 204 || status() != 200 {
		t.Errorf("after stopping it: %d, then %d; want 204, then 200", got, status())
	}
	if got := send("POST", "/_fake/faults", `{"fault":{}}`); got != 400 {
		t.Errorf("a body without op: %d, want 400", got)
	}
}
