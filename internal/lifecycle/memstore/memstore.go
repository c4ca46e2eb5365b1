// Package memstore is an in-memory lifecycle.Store for tests and
// benchmarks. It enforces the conditional-write rules of the DynamoDB store
// (internal/dynamo) so the domain's behaviour can be tested without a
// database: create only when the id is new, update only from the stored
// state and version through an allowed transition, an idle deadline that
// never moves backwards, the sweep's due-by guard, claims that expire, and
// sparse due indexes that hold a session only in the state they are for.
// The store contract tests (internal/lifecycle/storetest) run against both stores.
// It keeps everything in one process and nothing across restarts: not for
// production.
package memstore

import (
	"cmp"
	"context"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Store is an in-memory lifecycle.Store. The zero value is not usable; call
// New. It is safe for concurrent use.
type Store struct {
	mu       sync.Mutex
	sessions map[string]*lifecycle.Session
	claims   map[string]claim
	keys     map[string]lifecycle.APIKey
	running  map[string]int // account id → running slots held (lifecycle quota.go)
	usage    usageState     // usage counters and recent events (usage.go)
	pools    poolState      // spares and pool status (pool.go)
	// checkpoints by session id, then checkpoint id (checkpoint.go)
	checkpoints map[string]map[string]*lifecycle.Checkpoint
	idle        idleState // the learned idle policy's histograms (idle.go)
}

type claim struct {
	value   string
	expires time.Time // whole second, as DynamoDB's TTL
}

var _ lifecycle.Store = (*Store)(nil)

// New returns an empty Store.
func New() *Store {
	return &Store{
		sessions: map[string]*lifecycle.Session{},
		claims:   map[string]claim{},
		keys:     map[string]lifecycle.APIKey{},
		running:  map[string]int{},
		usage:    newUsageState(),
		pools:    newPoolState(),

		checkpoints: map[string]map[string]*lifecycle.Checkpoint{},
	}
}

// CreateSession stores a copy of s with version 1 and sets s.Version to 1.
// Errors: invalid (no id or account, unknown state), conflict when the id
// exists.
func (st *Store) CreateSession(_ context.Context, s *lifecycle.Session) error {
	if err := validSession(s); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, ok := st.sessions[s.ID]; ok {
		return lifecycle.Errorf(lifecycle.CodeConflict, "session %s already exists", s.ID)
	}
	if err := st.moveSlots(s, ""); err != nil {
		return err
	}
	next := s.Clone()
	next.Version = 1
	next.RunningLimit = 0 // not stored
	st.sessions[s.ID] = next
	s.Version = 1
	return nil
}

// GetSession returns a copy of session id. Errors: not_found.
func (st *Store) GetSession(_ context.Context, id string) (*lifecycle.Session, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	s, ok := st.sessions[id]
	if !ok {
		return nil, errSessionNotFound(id)
	}
	return s.Clone(), nil
}

// ListSessions returns accountID's sessions newest first (by created_at,
// then id), at most limit (1..lifecycle.MaxListLimit), after cursor.
// Errors: invalid for a limit out of range, no account, or a cursor this
// store did not issue for accountID.
func (st *Store) ListSessions(_ context.Context, accountID, cursor string, limit int) (lifecycle.SessionPage, error) {
	if limit < 1 || limit > lifecycle.MaxListLimit {
		return lifecycle.SessionPage{}, lifecycle.Errorf(lifecycle.CodeInvalid, "limit must be between 1 and %d", lifecycle.MaxListLimit)
	}
	if accountID == "" {
		return lifecycle.SessionPage{}, lifecycle.Errorf(lifecycle.CodeInvalid, "account id is required")
	}
	var after *position
	if cursor != "" {
		p, err := decodeCursor(cursor, "owner:"+accountID)
		if err != nil {
			return lifecycle.SessionPage{}, err
		}
		after = &p
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var all []*lifecycle.Session
	for _, s := range st.sessions {
		if s.AccountID == accountID {
			all = append(all, s)
		}
	}
	newestFirst := func(a, b *lifecycle.Session) int {
		return -cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	}
	slices.SortFunc(all, newestFirst)
	return page(all, limit, "owner:"+accountID, func(s *lifecycle.Session) position { return position{s.CreatedAt, s.ID} },
		func(s *lifecycle.Session) bool {
			return after == nil || newestFirst(s, &lifecycle.Session{CreatedAt: after.at, ID: after.id}) > 0
		})
}

// FindBySandbox returns the session that holds provider's sandbox sandboxID;
// the newest when several do. Errors: invalid for an empty sandbox id,
// not_found.
func (st *Store) FindBySandbox(_ context.Context, provider, sandboxID string) (*lifecycle.Session, error) {
	if sandboxID == "" {
		return nil, lifecycle.Errorf(lifecycle.CodeInvalid, "sandbox id is required")
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var found *lifecycle.Session
	for _, s := range st.sessions {
		if s.Provider == provider && s.SandboxID == sandboxID && (found == nil || s.CreatedAt.After(found.CreatedAt)) {
			found = s
		}
	}
	if found == nil {
		return nil, lifecycle.Errorf(lifecycle.CodeNotFound, "no session holds %s sandbox %s", provider, sandboxID)
	}
	return found.Clone(), nil
}

// UpdateSession stores a copy of s if the stored session still has state
// from and version s.Version, its idle deadline does not move backwards and,
// when guard.DueBy is set, it is running with a pause deadline at or before
// guard.DueBy. When s.State != from the transition must be allowed by
// lifecycle.CheckTransition. On success s.Version is incremented.
// Errors: invalid (malformed session), conflict (refused transition, lost
// race, deadline moved), not_found, quota_exceeded (see moveSlots).
func (st *Store) UpdateSession(_ context.Context, s *lifecycle.Session, from lifecycle.State, guard lifecycle.Guard) error {
	if err := validSession(s); err != nil {
		return err
	}
	if s.State != from {
		if err := lifecycle.CheckTransition(from, s.State); err != nil {
			return err
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	old, ok := st.sessions[s.ID]
	switch {
	case !ok:
		return errSessionNotFound(s.ID)
	case old.State != from || old.Version != s.Version:
		return lifecycle.Errorf(lifecycle.CodeConflict,
			"session %s changed meanwhile: expected %s at version %d, found %s at version %d",
			s.ID, from, s.Version, old.State, old.Version)
	case !guard.DueBy.IsZero() && !dueBy(old, guard.DueBy):
		return lifecycle.Errorf(lifecycle.CodeConflict, "session %s is no longer due to be paused", s.ID)
	case !old.IdleDeadline.IsZero() && (s.IdleDeadline.IsZero() || s.IdleDeadline.Before(old.IdleDeadline)):
		return lifecycle.Errorf(lifecycle.CodeConflict,
			"the idle deadline of session %s cannot move backwards (stored %s, given %s)",
			s.ID, old.IdleDeadline.Format(time.RFC3339Nano), s.IdleDeadline.Format(time.RFC3339Nano))
	}
	if err := st.moveSlots(s, from); err != nil {
		return err
	}
	next := s.Clone()
	next.Version = s.Version + 1
	next.RunningLimit = 0 // not stored
	st.sessions[s.ID] = next
	s.Version = next.Version
	return nil
}

// moveSlots moves s's account's running-slot counter for a write from state
// from ("" for a create) to s.State, refusing a slot beyond s.RunningLimit.
// The caller holds st.mu and writes the session right after, so the counter
// and the session move together. Errors: quota_exceeded.
func (st *Store) moveSlots(s *lifecycle.Session, from lifecycle.State) error {
	d := lifecycle.RunningSlotDelta(from, s.State)
	if d > 0 && s.RunningLimit > 0 && st.running[s.AccountID] >= s.RunningLimit {
		return lifecycle.ErrQuotaExceeded(s.AccountID, s.RunningLimit)
	}
	st.running[s.AccountID] += d
	return nil
}

// RunningSlots returns how many running slots accountID holds.
func (st *Store) RunningSlots(_ context.Context, accountID string) (int, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.running[accountID], nil
}

// dueBy reports whether the stored session is running with a pause deadline
// at or before t (the DynamoDB store keeps pause_deadline only while
// running).
func dueBy(s *lifecycle.Session, t time.Time) bool {
	d := s.PauseDeadline()
	return s.State == lifecycle.StateRunning && !d.IsZero() && !d.After(t)
}

// dueTime returns when s is due in index ix, and whether the sparse index
// holds s at all (the DynamoDB store's index keys, internal/dynamo).
func dueTime(ix lifecycle.DueIndex, s *lifecycle.Session) (time.Time, bool) {
	switch ix {
	case lifecycle.IndexIdle:
		d := s.PauseDeadline()
		return d, s.State == lifecycle.StateRunning && !d.IsZero()
	case lifecycle.IndexLease:
		return s.LeaseDue()
	case lifecycle.IndexPaused:
		return s.DormantDue()
	case lifecycle.IndexTier:
		to, at := s.NextTier()
		return at, to != ""
	}
	return time.Time{}, false
}

// FindDue returns the sessions of index q.Index due at or before q.Before,
// in due order, at most q.Limit (1..lifecycle.MaxDuePageSize) a page.
// Errors: invalid for an unknown index, a limit out of range or a cursor
// this store did not issue for the index.
func (st *Store) FindDue(_ context.Context, q lifecycle.DueQuery) (lifecycle.SessionPage, error) {
	switch q.Index {
	case lifecycle.IndexIdle, lifecycle.IndexLease, lifecycle.IndexPaused, lifecycle.IndexTier:
	default:
		return lifecycle.SessionPage{}, lifecycle.Errorf(lifecycle.CodeInvalid, "unknown due index %q", q.Index)
	}
	if q.Limit < 1 || q.Limit > lifecycle.MaxDuePageSize {
		return lifecycle.SessionPage{}, lifecycle.Errorf(lifecycle.CodeInvalid, "limit must be between 1 and %d", lifecycle.MaxDuePageSize)
	}
	scope := "due:" + string(q.Index)
	var after *position
	if q.Cursor != "" {
		p, err := decodeCursor(q.Cursor, scope)
		if err != nil {
			return lifecycle.SessionPage{}, err
		}
		after = &p
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var due []*lifecycle.Session
	for _, s := range st.sessions {
		if at, ok := dueTime(q.Index, s); ok && !at.After(q.Before) {
			due = append(due, s)
		}
	}
	pos := func(s *lifecycle.Session) position { at, _ := dueTime(q.Index, s); return position{at, s.ID} }
	slices.SortFunc(due, func(a, b *lifecycle.Session) int { return pos(a).compare(pos(b)) })
	return page(due, q.Limit, scope, pos, func(s *lifecycle.Session) bool { return after == nil || pos(s).compare(*after) > 0 })
}

// page returns up to limit copies of the sorted sessions that keep accepts,
// with a cursor after the last one when more follow.
func page(sorted []*lifecycle.Session, limit int, scope string, pos func(*lifecycle.Session) position,
	keep func(*lifecycle.Session) bool) (lifecycle.SessionPage, error) {
	out := lifecycle.SessionPage{Sessions: []*lifecycle.Session{}}
	for _, s := range sorted {
		if !keep(s) {
			continue
		}
		if len(out.Sessions) == limit {
			out.Cursor = encodeCursor(scope, pos(out.Sessions[limit-1]))
			break
		}
		out.Sessions = append(out.Sessions, s.Clone())
	}
	return out, nil
}

// position is where a page ended: a time and an id to break ties.
type position struct {
	at time.Time
	id string
}

func (p position) compare(o position) int {
	return cmp.Or(p.at.Compare(o.at), strings.Compare(p.id, o.id))
}

// encodeCursor writes p for the listing named scope.
func encodeCursor(scope string, p position) string {
	raw := scope + "\n" + strconv.FormatInt(p.at.UnixNano(), 10) + "\n" + p.id
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// decodeCursor reads a cursor of the listing named scope.
// Errors: invalid ("cursor is not valid") for anything else.
func decodeCursor(text, scope string) (position, error) {
	raw, err := base64.RawURLEncoding.DecodeString(text)
	parts := strings.Split(string(raw), "\n")
	if err != nil || len(parts) != 3 || parts[0] != scope || parts[2] == "" {
		return position{}, lifecycle.Errorf(lifecycle.CodeInvalid, "cursor is not valid")
	}
	ns, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return position{}, lifecycle.Errorf(lifecycle.CodeInvalid, "cursor is not valid")
	}
	return position{time.Unix(0, ns).UTC(), parts[2]}, nil
}

// Claim records key with value unless an unexpired claim of key exists; the
// claim expires at now+ttl rounded up to a whole second (DynamoDB's TTL
// unit) and counts as absent once now is past that second. It returns
// claimed=false and the stored value when a live claim exists. Errors:
// invalid for an empty key or a ttl that is not positive.
func (st *Store) Claim(_ context.Context, key, value string, ttl time.Duration, now time.Time) (bool, string, error) {
	if key == "" {
		return false, "", lifecycle.Errorf(lifecycle.CodeInvalid, "claim key is required")
	}
	if ttl <= 0 {
		return false, "", lifecycle.Errorf(lifecycle.CodeInvalid, "claim ttl must be positive")
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	// DynamoDB's condition: absent, or ttl (seconds) < now (seconds).
	if c, ok := st.claims[key]; ok && c.expires.Unix() >= now.Unix() {
		return false, c.value, nil
	}
	expires := now.Add(ttl)
	sec := expires.Unix()
	if time.Unix(sec, 0).Before(expires) {
		sec++
	}
	st.claims[key] = claim{value: value, expires: time.Unix(sec, 0)}
	return true, value, nil
}

// ReleaseClaim deletes key's claim if it still holds value; otherwise it
// does nothing. Errors: invalid for an empty key.
func (st *Store) ReleaseClaim(_ context.Context, key, value string) error {
	if key == "" {
		return lifecycle.Errorf(lifecycle.CodeInvalid, "claim key is required")
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if c, ok := st.claims[key]; ok && c.value == value {
		delete(st.claims, key)
	}
	return nil
}

// PutAPIKey stores k under its hash. Errors: invalid (lifecycle.ValidAPIKey),
// conflict when the hash exists.
func (st *Store) PutAPIKey(_ context.Context, k lifecycle.APIKey) error {
	if err := lifecycle.ValidAPIKey(k); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, ok := st.keys[k.Hash]; ok {
		return lifecycle.Errorf(lifecycle.CodeConflict, "api key exists")
	}
	k.CreatedAt = k.CreatedAt.UTC()
	st.keys[k.Hash] = k
	return nil
}

// GetAPIKey returns the API key with hash. Errors: not_found.
func (st *Store) GetAPIKey(_ context.Context, hash string) (lifecycle.APIKey, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	k, ok := st.keys[hash]
	if !ok {
		return lifecycle.APIKey{}, lifecycle.Errorf(lifecycle.CodeNotFound, "api key not found")
	}
	return k, nil
}

func errSessionNotFound(id string) error {
	return lifecycle.Errorf(lifecycle.CodeNotFound, "session %s not found", id)
}

// validSession checks what the store needs to write s
// (lifecycle.ValidStoredSession).
func validSession(s *lifecycle.Session) error { return lifecycle.ValidStoredSession(s) }

var _ lifecycle.SessionFinder = (*Store)(nil)

// FindSessions returns one page of q.AccountID's sessions that pass
// q.Filter, in q.Order (internal/dynamo's contract; memstore reads every
// session of the account and never ends a page early). Errors: invalid (an
// empty filter newest first, a limit out of range, a cursor not issued for
// this account, filter and order).
func (st *Store) FindSessions(_ context.Context, q lifecycle.SessionQuery) (lifecycle.SessionPage, error) {
	asc := q.Order == lifecycle.OrderAsc
	switch {
	case q.Limit < 1 || q.Limit > lifecycle.MaxListLimit:
		return lifecycle.SessionPage{}, lifecycle.Errorf(lifecycle.CodeInvalid, "limit must be between 1 and %d", lifecycle.MaxListLimit)
	case q.AccountID == "":
		return lifecycle.SessionPage{}, lifecycle.Errorf(lifecycle.CodeInvalid, "account id is required")
	case q.Filter.Empty() && !asc:
		return lifecycle.SessionPage{}, lifecycle.Errorf(lifecycle.CodeInvalid, "a filter is required: list without one")
	}
	sign := -1 // newest first
	scope := "find:" + q.AccountID + ":" + q.Filter.Fingerprint()
	if asc {
		sign, scope = 1, scope+":asc"
	}
	var after *position
	if q.Cursor != "" {
		p, err := decodeCursor(q.Cursor, scope)
		if err != nil {
			return lifecycle.SessionPage{}, err
		}
		after = &p
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var all []*lifecycle.Session
	for _, s := range st.sessions {
		if s.AccountID == q.AccountID && q.Filter.Match(s) {
			all = append(all, s)
		}
	}
	pos := func(s *lifecycle.Session) position { return position{s.CreatedAt, s.ID} }
	slices.SortFunc(all, func(a, b *lifecycle.Session) int { return sign * pos(a).compare(pos(b)) })
	return page(all, q.Limit, scope, pos, func(s *lifecycle.Session) bool { return after == nil || sign*pos(s).compare(*after) > 0 })
}
