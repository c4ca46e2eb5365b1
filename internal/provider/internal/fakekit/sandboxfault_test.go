package fakekit_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

type injected struct {
	got     []string
	cleared []string
}

func (i *injected) Inject(id string, f fakekit.SandboxFault, d time.Duration) error {
	if id != "sbx_1" {
		return fakekit.NoSandbox(id)
	}
	if f == "boom" {
		return fakekit.UnknownFault(f)
	}
	i.got = append(i.got, id+" "+string(f)+" "+d.String())
	return nil
}

func (i *injected) Clear(id string) { i.cleared = append(i.cleared, id) }

// The sandbox faults are switched from `sandman fake` over HTTP as from a
// test's Inject.
func TestControlSandboxesInjectsAndClears(t *testing.T) {
	inj := &injected{}
	mux := http.NewServeMux()
	fakekit.ControlSandboxes(mux, inj)
	send := func(method, path, body string) int {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(method, path, strings.NewReader(body)))
		return w.Code
	}
	for _, tc := range []struct {
		path, body string
		want       int
	}{
		{"/_fake/sandboxes/sbx_1/faults", `{"fault":"gone"}`, 204},
		{"/_fake/sandboxes/sbx_1/faults", `{"fault":"restore_slow","delay_ms":1500}`, 204},
		{"/_fake/sandboxes/sbx_2/faults", `{"fault":"gone"}`, 404},
		{"/_fake/sandboxes/sbx_1/faults", `{"fault":"boom"}`, 400},
		{"/_fake/sandboxes/sbx_1/faults", `{"delay_ms":1}`, 400},
		{"/_fake/sandboxes/sbx_1/faults", `{"fault":"gone","delay_ms":-1}`, 400},
	} {
		if got := send("POST", tc.path, tc.body); got != tc.want {
			t.Errorf("POST %s %s = %d, want %d", tc.path, tc.body, got, tc.want)
		}
	}
	if got := send("DELETE", "/_fake/sandboxes/sbx_1/faults", ""); got != 204 || len(inj.cleared) != 1 {
		t.Errorf("DELETE = %d, cleared %v", got, inj.cleared)
	}
	if want := "sbx_1 gone 0s,sbx_1 restore_slow 1.5s"; strings.Join(inj.got, ",") != want {
		t.Errorf("injected %v, want %s", inj.got, want)
	}
}

func TestSwitches(t *testing.T) {
	var s fakekit.Switches
	s.Set("a", fakekit.FaultSnapshotSlow, time.Second)
	if d, ok := s.On("a", fakekit.FaultSnapshotSlow); !ok || d != time.Second {
		t.Errorf("On = %v %v", d, ok)
	}
	if _, ok := s.Any(fakekit.FaultSnapshotSlow); !ok {
		t.Error("Any found none")
	}
	s.Clear("a")
	if _, ok := s.On("a", fakekit.FaultSnapshotSlow); ok {
		t.Error("on after Clear")
	}
	if !fakekit.FaultRestoreSlow.Standing() || fakekit.FaultGone.Standing() {
		t.Error("Standing")
	}
}
