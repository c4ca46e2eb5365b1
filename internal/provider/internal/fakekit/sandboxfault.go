package fakekit

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/internal/sandboxfs"
)

// SandboxFault is a fault switched on one sandbox of a fake, the ways a
// sandbox is lost or its checkpoints misbehave at a real provider
// (docs/RELIABILITY.md "Recovery"; each fake's Inject says how it plays
// them):
type SandboxFault string

// The sandbox faults every fake takes (Injector).
const (
	// FaultGone deletes the sandbox behind Sandman's back: the provider's
	// not-found from then on.
	FaultGone SandboxFault = "gone"
	// FaultForeign puts another sandbox behind the id: its workspace is
	// replaced by one holding another session's identity marker.
	FaultForeign SandboxFault = "foreign"
	// FaultPartial leaves a partial workspace: the identity marker and
	// the workspace folder are removed, the rest kept.
	FaultPartial SandboxFault = "partial"
	// FaultSnapshotExpired expires every snapshot taken of the sandbox so
	// far, as the provider's retention would.
	FaultSnapshotExpired SandboxFault = "snapshot_expired"
	// FaultSnapshotFail fails the sandbox's snapshots from now on, as the
	// provider fails them.
	FaultSnapshotFail SandboxFault = "snapshot_fail"
	// FaultSnapshotSlow makes the sandbox's snapshots take Delay.
	FaultSnapshotSlow SandboxFault = "snapshot_slow"
	// FaultRestoreSlow makes a sandbox made from one of the sandbox's
	// snapshots take Delay to come up.
	FaultRestoreSlow SandboxFault = "restore_slow"
)

// SandboxFaults lists every SandboxFault, for tests that walk them.
var SandboxFaults = []SandboxFault{FaultGone, FaultForeign, FaultPartial, FaultSnapshotExpired,
	FaultSnapshotFail, FaultSnapshotSlow, FaultRestoreSlow}

// Standing reports whether f stays on until cleared (the snapshot and
// restore faults); the others happen once, when injected.
func (f SandboxFault) Standing() bool {
	return f == FaultSnapshotFail || f == FaultSnapshotSlow || f == FaultRestoreSlow
}

// Injector is a fake that takes sandbox faults: Inject switches f on
// sandboxID (delay: for the slow faults; how a fake spends it, on its clock
// or the wall's, its Inject says); Clear switches its standing faults off.
// Errors: no such sandbox, a fault the fake cannot play.
type Injector interface {
	Inject(sandboxID string, f SandboxFault, delay time.Duration) error
	Clear(sandboxID string)
}

// ForeignMarker is the identity marker FaultForeign leaves: another
// session's, another sandbox's.
const ForeignMarker = `{"session_id":"ses_foreign","sandbox_id":"sbx_foreign"}`

// MarkerPath and WorkspaceDir are where Sandman keeps its identity marker
// and the workspace (lifecycle.IdentityMarkerPath, DefaultWorkspaceDir),
// restated here: fakes do not import lifecycle's service.
const (
	MarkerPath   = "/home/user/.sandman/identity.json"
	WorkspaceDir = "/home/user/app"
)

// Foreign returns the workspace FaultForeign puts behind an id: only
// another session's identity marker.
func Foreign() *sandboxfs.Mem {
	m := &sandboxfs.Mem{}
	m.Apply(sandboxfs.Op{Path: MarkerPath, Data: []byte(ForeignMarker)})
	return m
}

// Partial returns a copy of files without the identity marker and the
// workspace folder (FaultPartial).
func Partial(files *sandboxfs.Mem) *sandboxfs.Mem {
	if files == nil {
		return &sandboxfs.Mem{}
	}
	return files.Without(MarkerPath, WorkspaceDir)
}

// Switches holds a fake's standing sandbox faults and their delays, by
// sandbox id. The zero Switches is ready; it is safe for concurrent use.
type Switches struct {
	mu sync.Mutex
	on map[string]map[SandboxFault]time.Duration
}

// Set switches f on for id, with delay.
func (s *Switches) Set(id string, f SandboxFault, delay time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.on == nil {
		s.on = map[string]map[SandboxFault]time.Duration{}
	}
	if s.on[id] == nil {
		s.on[id] = map[SandboxFault]time.Duration{}
	}
	s.on[id][f] = delay
}

// Clear switches every fault of id off.
func (s *Switches) Clear(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.on, id)
}

// On reports whether f is on for id, and its delay.
func (s *Switches) On(id string, f SandboxFault) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.on[id][f]
	return d, ok
}

// Hold waits out the delay of f on id, when it is on, on the wall's clock:
// until it passed, r's client gave up or k closed. It reports whether the
// request should go on (no fault, or the delay passed).
func (s *Switches) Hold(r *http.Request, id string, f SandboxFault, closing <-chan struct{}) bool {
	d, ok := s.On(id, f)
	if !ok || d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.Context().Done():
		return false
	case <-closing:
		return false
	case <-t.C:
		return true
	}
}

// ControlSandboxes serves an Injector's faults over HTTP, for a fake run on
// its own (`sandman fake <provider>`), beside Control:
//
//	POST   /_fake/sandboxes/{id}/faults {"fault": "<fault>", "delay_ms": n}
//	       switches the fault on (204); 404 for an unknown sandbox, 400 for
//	       a bad body or a fault the fake cannot play
//	DELETE /_fake/sandboxes/{id}/faults   switches its standing faults off (204)
func ControlSandboxes(mux *http.ServeMux, inj Injector) {
	mux.HandleFunc("POST "+ControlPrefix+"/sandboxes/{id}/faults", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Fault   SandboxFault `json:"fault"`
			DelayMS int64        `json:"delay_ms"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody)).Decode(&in); err != nil || in.Fault == "" || in.DelayMS < 0 {
			http.Error(w, `want {"fault", "delay_ms"?}`, http.StatusBadRequest)
			return
		}
		if err := inj.Inject(r.PathValue("id"), in.Fault, time.Duration(in.DelayMS)*time.Millisecond); err != nil {
			status := http.StatusBadRequest
			if IsNoSandbox(err) {
				status = http.StatusNotFound
			}
			http.Error(w, err.Error(), status)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("DELETE "+ControlPrefix+"/sandboxes/{id}/faults", func(w http.ResponseWriter, r *http.Request) {
		inj.Clear(r.PathValue("id"))
		w.WriteHeader(http.StatusNoContent)
	})
}

// errNoSandbox is Inject's error for an unknown sandbox.
type errNoSandbox string

func (e errNoSandbox) Error() string { return fmt.Sprintf("no sandbox %q", string(e)) }

// NoSandbox is Inject's error for the unknown sandbox id.
func NoSandbox(id string) error { return errNoSandbox(id) }

// IsNoSandbox reports whether err is NoSandbox's.
func IsNoSandbox(err error) bool { _, ok := err.(errNoSandbox); return ok }

// UnknownFault is Inject's error for a fault f it cannot play.
func UnknownFault(f SandboxFault) error { return fmt.Errorf("unknown sandbox fault %q", f) }

// Any reports whether f is on for any sandbox, and one delay of it.
func (s *Switches) Any(f SandboxFault) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, on := range s.on {
		if d, ok := on[f]; ok {
			return d, true
		}
	}
	return 0, false
}
