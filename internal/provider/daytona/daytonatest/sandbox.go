package daytonatest

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/internal/sandboxfs"
)

// The sandbox states of daytona.md "State machine".
const (
	StateCreating         = "creating"
	StateRestoring        = "restoring"
	StateDestroyed        = "destroyed"
	StateDestroying       = "destroying"
	StateStarted          = "started"
	StateStopped          = "stopped"
	StateStarting         = "starting"
	StateStopping         = "stopping"
	StateError            = "error"
	StateBuildFailed      = "build_failed"
	StatePendingBuild     = "pending_build"
	StateBuildingSnapshot = "building_snapshot"
	StateUnknown          = "unknown"
	StatePullingSnapshot  = "pulling_snapshot"
	StateArchived         = "archived"
	StateArchiving        = "archiving"
	StateResizing         = "resizing"
	StateSnapshotting     = "snapshotting"
	StateForking          = "forking"
	StatePausing          = "pausing"
	StatePaused           = "paused"
	StateResuming         = "resuming"
)

var states = []string{StateCreating, StateRestoring, StateDestroyed, StateDestroying, StateStarted, StateStopped,
	StateStarting, StateStopping, StateError, StateBuildFailed, StatePendingBuild, StateBuildingSnapshot,
	StateUnknown, StatePullingSnapshot, StateArchived, StateArchiving, StateResizing, StateSnapshotting,
	StateForking, StatePausing, StatePaused, StateResuming}

// Sandbox is the fake's record of one sandbox; its json tags are the
// Sandbox object's fields (sandboxJSON adds the rest).
type Sandbox struct {
	ID           string            `json:"id"`
	Name         string            `json:"name"`
	State        string            `json:"state"`
	DesiredState string            `json:"desiredState"`
	ErrorReason  string            `json:"errorReason"`
	Recoverable  bool              `json:"recoverable"`
	Snapshot     string            `json:"snapshot"`
	Labels       map[string]string `json:"labels"`
	Env          map[string]string `json:"env"`
	Public       bool              `json:"public"`
	Target       string            `json:"target"`
	Class        string            `json:"sandboxClass"`
	CPU          int               `json:"cpu"`
	GPU          int               `json:"gpu"`
	Memory       int               `json:"memory"`
	Disk         int               `json:"disk"`
	AutoStop     int               `json:"autoStopInterval"`    // minutes, 0 = off
	AutoPause    int               `json:"autoPauseInterval"`   // minutes, 0 = off
	AutoArchive  int               `json:"autoArchiveInterval"` // minutes, 0 = the maximum (30 days)
	AutoDelete   int               `json:"autoDeleteInterval"`  // minutes, -1 = off, 0 = when it stops
	// AutoDestroyAt is when the TTL destroys it (zero: no TTL).
	AutoDestroyAt  time.Time `json:"autoDestroyAt"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
	LastActivityAt time.Time `json:"lastActivityAt"`
	// Token is the current preview token; it changes on every start from
	// stopped or archived.
	Token string `json:"-"`
	// Stuck, when true, keeps the sandbox in its transitional state
	// (daytona.md: sandboxes stuck for hours in starting or destroying).
	Stuck bool `json:"-"`
	// SnapshotFault makes its captures fail: SnapshotFailSilently or
	// SnapshotFailError; "" captures.
	SnapshotFault string `json:"-"`
	// SnapshotTime, when set, is how long its captures take instead of
	// Config.SnapshotTime (a slow snapshot).
	SnapshotTime time.Duration `json:"-"`

	settleAt time.Time      // when a transitional state settles
	next     string         // the state it settles to
	files    *sandboxfs.Mem // its files (fs)
	capture  *capture       // the snapshot being taken, settled with snapshotting
}

func (sb *Sandbox) clone() Sandbox {
	c := *sb
	c.Labels, c.Env = maps.Clone(sb.Labels), maps.Clone(sb.Env)
	return c
}

// sandboxJSON is the Sandbox object of get, create, start, stop, delete and
// (without env) list items: the record's fields, these in their place.
type sandboxJSON struct {
	*Sandbox
	OrganizationID  string             `json:"organizationId"`
	ErrorReason     *string            `json:"errorReason,omitempty"`
	Snapshot        *string            `json:"snapshot"`
	Env             *map[string]string `json:"env,omitempty"`
	AutoDestroyAt   *string            `json:"autoDestroyAt"`
	CreatedAt       string             `json:"createdAt"`
	UpdatedAt       string             `json:"updatedAt"`
	LastActivityAt  string             `json:"lastActivityAt"`
	RunnerID        string             `json:"runnerId"`
	ToolboxProxyURL string             `json:"toolboxProxyUrl"`
}

// toJSON is sb on the wire; encode it before sb changes. Callers hold mu.
func (s *Server) toJSON(sb *Sandbox, withEnv bool) sandboxJSON {
	out := sandboxJSON{Sandbox: sb, OrganizationID: s.opts.OrganizationID, ErrorReason: orNull(sb.ErrorReason),
		Snapshot: orNull(sb.Snapshot), CreatedAt: iso(sb.CreatedAt), UpdatedAt: iso(sb.UpdatedAt),
		LastActivityAt: iso(sb.LastActivityAt), RunnerID: "runner-1", ToolboxProxyURL: s.opts.ToolboxProxyURL}
	if withEnv {
		env := orEmpty(sb.Env)
		out.Env = &env
	}
	if !sb.AutoDestroyAt.IsZero() {
		out.AutoDestroyAt = orNull(iso(sb.AutoDestroyAt))
	}
	return out
}

// orNull is v, nil (null, or omitted) when v is "".
func orNull(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}

// orEmpty is m, or an empty map when m is nil (JSON {}, not null).
func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func iso(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// tombstone is a destroyed sandbox still seen by an eventually consistent
// list.
type tombstone struct {
	sb    Sandbox
	until time.Time
}

// Put stores sb as if Daytona held it, replacing a sandbox of that id.
// Empty fields get defaults: DesiredState the one State implies, Class,
// Target, Token, and the times from the clock. The timers are taken as
// given: AutoDelete 0 makes an ephemeral sandbox, so pass -1 for "off". A
// transitional State put here stays until Edit changes it.
func (s *Server) Put(sb Sandbox) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := sb.clone()
	now := s.opts.Clock.Now().UTC()
	c.DesiredState, c.Class, c.Target = cmp.Or(c.DesiredState, desiredOf(c.State)), cmp.Or(c.Class, s.opts.Class), cmp.Or(c.Target, DefaultTarget)
	for _, t := range []*time.Time{&c.CreatedAt, &c.UpdatedAt, &c.LastActivityAt} {
		if t.IsZero() {
			*t = now
		}
	}
	if c.Token == "" {
		c.Token = s.newToken()
	}
	c.Labels = orEmpty(c.Labels)
	s.sandboxes.Put(c.ID, &c)
}

// Sandbox returns the sandbox of id after applying everything due by the
// clock; false when it is destroyed (GET would be 404).
func (s *Server) Sandbox(id string) (Sandbox, bool) {
	s.mu.Lock()
	s.tick()
	sb, ok := s.sandboxes.Get(id)
	var c Sandbox
	if ok {
		c = sb.clone()
	}
	s.mu.Unlock()
	s.flush()
	return c, ok
}

// Edit applies f to the stored sandbox of id (for tests that need a state
// the API cannot reach, such as error). It reports whether id exists.
func (s *Server) Edit(id string, f func(*Sandbox)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes.Get(id)
	if ok {
		f(sb)
	}
	return ok
}

// Wakes returns how many times the sandbox of id ("": of every sandbox)
// was started from stopped, paused, archived or error (a start, resume,
// restore or recover); a probe must never add to it.
func (s *Server) Wakes(id string) int { return s.Tally(strings.TrimSpace("wakes " + id)) }

func (s *Server) newToken() string {
	s.tokenSeq++
	return fmt.Sprintf("dtn-preview-%06d", s.tokenSeq)
}

// The state machine: transitions that settle on the clock, and the timers
// (auto-stop, auto-pause, auto-archive, auto-delete, TTL) counted from the
// last activity. Callers of what follows hold mu.

// set changes sb's state at t, queueing the change for OnStateChange. A
// state change is activity (daytona.md "Idle and auto-stop semantics").
func (s *Server) set(sb *Sandbox, state string, t time.Time) {
	if sb.State != state {
		s.changes.Add(StateChange{SandboxID: sb.ID, OldState: sb.State, NewState: state, At: t})
	}
	sb.State, sb.UpdatedAt, sb.LastActivityAt = state, t, t
	s.loseProcesses(sb, state)
}

// begin moves sb into transitional state via toward final, settling after
// d (at once when d is 0).
func (s *Server) begin(sb *Sandbox, via, final string, d time.Duration, t time.Time) {
	sb.DesiredState = desiredOf(final)
	s.set(sb, via, t)
	sb.next, sb.settleAt = final, t.Add(d)
	if d == 0 && !sb.Stuck {
		s.settle(sb)
	}
}

// destroy starts deleting sb at t (a delete, or a timer).
func (s *Server) destroy(sb *Sandbox, t time.Time) {
	s.begin(sb, StateDestroying, StateDestroyed, s.opts.DeleteTime, t)
}

// settle ends sb's transition. A destroyed sandbox leaves the store (and,
// with ListLag, leaves a tombstone carrying the started state).
func (s *Server) settle(sb *Sandbox) {
	at, final := sb.settleAt, sb.next
	sb.next, sb.settleAt = "", time.Time{}
	if sb.capture != nil {
		s.captured(sb, at)
	}
	if final != StateDestroyed {
		s.set(sb, final, at)
		return
	}
	s.changes.Add(StateChange{SandboxID: sb.ID, OldState: sb.State, NewState: StateDestroyed, At: at})
	s.sandboxes.Delete(sb.ID)
	if s.opts.ListLag > 0 {
		c := sb.clone()
		c.State, c.DesiredState = StateStarted, StateStarted
		s.tombstones = append(s.tombstones, tombstone{sb: c, until: at.Add(s.opts.ListLag)})
	}
}

// tick applies everything due by the clock to every sandbox, in time
// order per sandbox: settling transitions, then the timers.
func (s *Server) tick() {
	now := s.opts.Clock.Now().UTC()
	for _, sb := range s.sandboxes.All() {
		for range 16 {
			if _, ok := s.sandboxes.Get(sb.ID); !ok || !s.step(sb, now) {
				break
			}
		}
	}
	s.tombstones = slices.DeleteFunc(s.tombstones, func(t tombstone) bool { return !now.Before(t.until) })
	s.tickSnapshots(now)
}

// step applies sb's earliest event due by now and reports whether there
// was one.
func (s *Server) step(sb *Sandbox, now time.Time) bool {
	if sb.next != "" {
		if sb.Stuck || sb.settleAt.After(now) {
			return false
		}
		s.settle(sb)
		return true
	}
	if !sb.AutoDestroyAt.IsZero() && !sb.AutoDestroyAt.After(now) {
		s.destroy(sb, sb.AutoDestroyAt)
		return true
	}
	after := func(m int) time.Time { return sb.LastActivityAt.Add(time.Duration(m) * time.Minute) }
	running := sb.State == StateStarted && sb.DesiredState == StateStarted
	archive := sb.AutoArchive
	if archive == 0 {
		archive = 30 * 24 * 60 // 0 is the maximum, 30 days
	}
	switch {
	case running && sb.AutoStop > 0 && !after(sb.AutoStop).After(now):
		if sb.AutoDelete == 0 {
			s.destroy(sb, after(sb.AutoStop))
		} else {
			s.begin(sb, StateStopping, StateStopped, s.opts.StopTime, after(sb.AutoStop))
		}
	case running && sb.AutoPause > 0 && !after(sb.AutoPause).After(now):
		s.begin(sb, StatePausing, StatePaused, s.opts.PauseTime, after(sb.AutoPause))
	case sb.State == StateStopped && sb.AutoDelete >= 0 && !after(sb.AutoDelete).After(now):
		s.destroy(sb, after(sb.AutoDelete))
	case sb.State == StateStopped && !after(archive).After(now):
		s.begin(sb, StateArchiving, StateArchived, s.opts.ArchiveTime, after(archive))
	default:
		return false
	}
	return true
}

// desiredOf returns the desiredState a settled state implies.
func desiredOf(state string) string {
	switch state {
	case StateStopped, StateStopping:
		return StateStopped
	case StatePaused, StatePausing:
		return StatePaused
	case StateArchived, StateArchiving:
		return StateArchived
	case StateDestroyed, StateDestroying:
		return StateDestroyed
	default: // error and build_failed too: they wanted to start
		return StateStarted
	}
}

// Transitional reports whether state is one that settles on its own:
// every known state but started, stopped, paused, archived, error,
// build_failed and destroyed, and every unknown one (daytona.md).
func Transitional(state string) bool {
	switch state {
	case StateStarted, StateStopped, StatePaused, StateArchived, StateError, StateBuildFailed, StateDestroyed:
		return false
	}
	return true
}

// flush delivers the queued state changes to OnStateChange, in order,
// outside mu (callers do not hold it).
func (s *Server) flush() { s.changes.Flush(s.opts.OnStateChange) }
