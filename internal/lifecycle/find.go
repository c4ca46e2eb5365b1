package lifecycle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// SessionFilter narrows a list of an account's sessions (GET
// /v1/sessions's state, provider, template and metadata parameters). The
// zero value keeps every session.
type SessionFilter struct {
	// States keeps sessions in any of these states; empty: any state.
	States []State
	// Provider and Template keep sessions of that provider or template;
	// "": any.
	Provider string
	Template string
	// Metadata keeps sessions whose metadata holds every one of these
	// key/value pairs; empty: any.
	Metadata map[string]string
}

// MaxFilterMetadata is how many metadata pairs one filter may name (ours).
const MaxFilterMetadata = 8

// maxFilterText bounds a provider or template in a filter, in bytes (far
// above any provider name or template id).
const maxFilterText = 256

// LiveStates are the states of a session that is not final: what the
// console shows first (docs/CONSOLE.md).
var LiveStates = []State{StateProvisioning, StateRunning, StatePausing, StatePaused, StateResuming, StateRestoring, StateArchived}

// Empty reports whether f keeps every session.
func (f SessionFilter) Empty() bool {
	return len(f.States) == 0 && f.Provider == "" && f.Template == "" && len(f.Metadata) == 0
}

// Match reports whether s passes f.
func (f SessionFilter) Match(s *Session) bool {
	if len(f.States) > 0 && !slices.Contains(f.States, s.State) {
		return false
	}
	if f.Provider != "" && s.Provider != f.Provider || f.Template != "" && s.Template != f.Template {
		return false
	}
	for k, v := range f.Metadata {
		if got, ok := s.Metadata[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Normalize returns f checked, with its states deduplicated in lifecycle
// order. Errors: invalid (an unknown state, too many or malformed
// metadata pairs, an over-long provider or template).
func (f SessionFilter) Normalize() (SessionFilter, error) {
	out := SessionFilter{Provider: f.Provider, Template: f.Template}
	for _, st := range States {
		if slices.Contains(f.States, st) {
			out.States = append(out.States, st)
		}
	}
	for _, st := range f.States {
		if !st.Valid() {
			names := make([]string, len(States))
			for i, s := range States {
				names[i] = string(s)
			}
			return SessionFilter{}, Errorf(CodeInvalid, "state %q is not a session state (one of %s)", truncateText(string(st), 32), strings.Join(names, ", "))
		}
	}
	if len(f.Provider) > maxFilterText || len(f.Template) > maxFilterText {
		return SessionFilter{}, Errorf(CodeInvalid, "provider and template filters must be at most %d bytes", maxFilterText)
	}
	if len(f.Metadata) > MaxFilterMetadata {
		return SessionFilter{}, Errorf(CodeInvalid, "a list may filter on at most %d metadata pairs", MaxFilterMetadata)
	}
	if err := validateMetadata(f.Metadata); err != nil {
		return SessionFilter{}, err
	}
	if len(f.Metadata) > 0 {
		out.Metadata = maps.Clone(f.Metadata)
	}
	return out, nil
}

// Fingerprint returns a short digest of f (normalized), for a store to tie
// a page cursor to the filter it was issued for.
func (f SessionFilter) Fingerprint() string {
	var b strings.Builder
	for _, st := range f.States {
		b.WriteString(string(st) + ",")
	}
	b.WriteString("\x00" + f.Provider + "\x00" + f.Template)
	for _, k := range slices.Sorted(maps.Keys(f.Metadata)) {
		b.WriteString("\x00" + k + "\x00" + f.Metadata[k])
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}

// Order is the order of a list of sessions by creation (GET /v1/sessions's
// order parameter): OrderDesc, newest first (the default), or OrderAsc,
// oldest first; ties on created_at go by id the same way.
type Order string

// The orders of a list.
const (
	OrderDesc Order = "desc"
	OrderAsc  Order = "asc"
)

// ParseOrder reads an order parameter: "" is OrderDesc. Errors: invalid.
func ParseOrder(v string) (Order, error) {
	switch Order(v) {
	case "", OrderDesc:
		return OrderDesc, nil
	case OrderAsc:
		return OrderAsc, nil
	}
	return "", Errorf(CodeInvalid, "order must be asc or desc, not %q", truncateText(v, 16))
}

// SessionQuery asks a SessionFinder for one page of an account's sessions
// that pass Filter, in Order.
type SessionQuery struct {
	AccountID string
	// Filter may be Empty only with Order OrderAsc: newest first without
	// a filter is Store.ListSessions, which reads one index partition.
	Filter SessionFilter
	Order  Order  // "" is OrderDesc
	Limit  int    // 1..MaxListLimit
	Cursor string // "" for the first page
}

// SessionFinder lists an account's sessions by filter without reading the
// ones it leaves out (internal/dynamo through its by_owner_state index;
// internal/lifecycle/memstore). It is separate from Store so that wrappers of
// a Store need not forward it.
type SessionFinder interface {
	// FindSessions returns one page of q.AccountID's sessions that pass
	// q.Filter, in q.Order (by created_at, then id). A page may hold
	// fewer than q.Limit sessions, none even, and still name a Cursor: a
	// filter on provider, template or metadata that skips many sessions
	// ends the page where the store's read budget ran out. Cursor is "" on
	// the last page. Errors: invalid (a limit out of range, an empty
	// filter newest first, a cursor this store did not issue for this
	// account, filter and order), the store's.
	FindSessions(ctx context.Context, q SessionQuery) (SessionPage, error)
}

// Find returns one page of accountID's sessions that pass f, in order
// (OrderDesc: newest first, OrderAsc: oldest first), limit per page
// (1..MaxListLimit), after cursor; an empty filter newest first lists
// every session (List). Reading is not activity. Errors: invalid (the
// filter, order, limit or cursor), internal when the store cannot filter,
// the store's.
func (s *Service) Find(ctx context.Context, accountID string, f SessionFilter, order Order, cursor string, limit int) (SessionPage, error) {
	f, err := f.Normalize()
	if err != nil {
		return SessionPage{}, err
	}
	if order, err = ParseOrder(string(order)); err != nil {
		return SessionPage{}, err
	}
	if f.Empty() && order == OrderDesc {
		return s.List(ctx, accountID, cursor, limit)
	}
	if limit < 1 || limit > MaxListLimit {
		return SessionPage{}, Errorf(CodeInvalid, "limit must be between 1 and %d", MaxListLimit)
	}
	finder, ok := s.cfg.Store.(SessionFinder)
	if !ok {
		return SessionPage{}, fmt.Errorf("find sessions of account %s: the store %T cannot filter", accountID, s.cfg.Store)
	}
	return finder.FindSessions(ctx, SessionQuery{AccountID: accountID, Filter: f, Order: order, Limit: limit, Cursor: cursor})
}
