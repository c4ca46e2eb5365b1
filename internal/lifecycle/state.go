package lifecycle

import "fmt"

// State is where a session is in its lifecycle (docs/DESIGN.md "Session states").
type State string

// The session states.
const (
	StateProvisioning State = "provisioning" // sandbox being created; carries a lease
	StateRunning      State = "running"      // sandbox up and billed; in the idle index
	StatePausing      State = "pausing"      // pause under way; carries a lease
	StatePaused       State = "paused"       // sandbox snapshotted, not billed for compute
	StateResuming     State = "resuming"     // resume under way; carries a lease
	StateRestoring    State = "restoring"    // sandbox being replaced from a checkpoint; carries a lease
	StateArchived     State = "archived"     // only a checkpoint is kept; the provider's sandbox is deleted (tiers.go)
	StateDeleted      State = "deleted"      // its retention ended: sandbox and checkpoints deleted; terminal
	StateExpired      State = "expired"      // the provider says the sandbox is gone
	StateKilled       State = "killed"       // deleted on purpose; terminal
	StateFailed       State = "failed"       // provisioning failed
)

// States lists every state, in lifecycle order.
var States = []State{
	StateProvisioning, StateRunning, StatePausing, StatePaused,
	StateResuming, StateRestoring, StateArchived, StateDeleted, StateExpired, StateKilled, StateFailed,
}

// transitions is the single source of truth for which state changes are
// allowed. The store refuses any other, the API and the sweep ask CanTransition.
//
// From docs/DESIGN.md: provisioning → running ⇄ pausing → paused → resuming →
// running; provisioning → failed; from any state expired and killed. Ours:
// pausing → running (a pause that failed transiently rolls back), resuming →
// paused (likewise for resume), running → paused and paused → running (a
// provider webhook or a reconcile reports a change made outside Sandman),
// killed is terminal, and expired and failed may only be killed (deleted).
// A restore (docs/CHECKPOINTS.md "Restore") starts from running, paused or
// resuming and ends running (the new sandbox), or back where it started
// when it fails (running or paused), or expired when the old sandbox
// turned out gone meanwhile. The retention tiers (tiers.go): paused →
// archived (reason archive) → deleted (reason retention), paused →
// deleted when the delete deadline comes first, archived → restoring
// (reason unarchive) and a failed unarchive restoring → archived;
// archived may expire (its checkpoint is gone) or be killed, deleted is
// terminal like killed.
var transitions = map[State][]State{
	StateProvisioning: {StateRunning, StateFailed, StateExpired, StateKilled},
	StateRunning:      {StatePausing, StatePaused, StateRestoring, StateExpired, StateKilled},
	StatePausing:      {StatePaused, StateRunning, StateExpired, StateKilled},
	StatePaused:       {StateResuming, StateRunning, StateRestoring, StateArchived, StateDeleted, StateExpired, StateKilled},
	StateResuming:     {StateRunning, StatePaused, StateRestoring, StateExpired, StateKilled},
	StateRestoring:    {StateRunning, StatePaused, StateArchived, StateExpired, StateKilled},
	StateArchived:     {StateRestoring, StateDeleted, StateExpired, StateKilled},
	StateDeleted:      {},
	StateExpired:      {StateKilled},
	StateFailed:       {StateKilled},
	StateKilled:       {},
}

// CanTransition reports whether the table allows from → to. A state never
// transitions to itself: writes that keep the state (heartbeats, recording a
// provider timeout) are updates, not transitions.
func CanTransition(from, to State) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// CheckTransition returns nil when from → to is allowed and a CodeConflict
// *Error naming both states otherwise.
func CheckTransition(from, to State) error {
	if CanTransition(from, to) {
		return nil
	}
	return Errorf(CodeConflict, "a %s session cannot become %s", from, to)
}

// Valid reports whether s is one of the known states.
func (s State) Valid() bool {
	_, ok := transitions[s]
	return ok
}

// Transitional reports whether s is provisioning, pausing, resuming or
// restoring: a state that carries a lease and is reconciled by probing the
// provider once the lease runs out.
func (s State) Transitional() bool {
	return s == StateProvisioning || s == StatePausing || s == StateResuming || s == StateRestoring
}

// Final reports whether no further work can happen on the sandbox (expired,
// killed, failed, deleted). A final session has no sandbox to bill.
func (s State) Final() bool {
	return s == StateExpired || s == StateKilled || s == StateFailed || s == StateDeleted
}

// ParseState returns the State named by s, or a CodeInvalid error.
func ParseState(s string) (State, error) {
	st := State(s)
	if !st.Valid() {
		return "", Errorf(CodeInvalid, "unknown session state %q", s)
	}
	return st, nil
}

// String returns the state's name.
func (s State) String() string { return string(s) }

// GoString helps test failure messages.
func (s State) GoString() string { return fmt.Sprintf("lifecycle.State(%q)", string(s)) }
