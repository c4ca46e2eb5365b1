package memstore

import (
	"cmp"
	"context"
	"encoding/base64"
	"slices"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// usageState is the in-memory form of internal/dynamo's usage items: rows
// keyed by account and sort key ("D#<day>#<provider>", "S#<day>#<session>"),
// each session's last applied version, and its recorded events.
type usageState struct {
	rows    map[string]map[string]*lifecycle.UsageRow // account → sort key → row
	applied map[string]int64                          // session id → last applied version
	events  map[string][]keptEvent                    // session id → events, oldest first
	// retention is how long an event is kept (SetEventRetention).
	retention time.Duration
}

// keptEvent is a recorded event and when its retention ends (whole
// seconds, as DynamoDB's TTL).
type keptEvent struct {
	ev      lifecycle.Event
	expires time.Time
}

func newUsageState() usageState {
	return usageState{rows: map[string]map[string]*lifecycle.UsageRow{}, applied: map[string]int64{},
		events: map[string][]keptEvent{}, retention: lifecycle.DefaultEventRetention}
}

// SetEventRetention sets how long events recorded from now on are kept
// (d > 0; internal/dynamo's Config.EventRetention).
func (st *Store) SetEventRetention(d time.Duration) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if d > 0 {
		st.usage.retention = d
	}
}

var _ lifecycle.UsageStore = (*Store)(nil)

// RecordTransition applies ev's usage deltas and keeps ev, under the lock,
// unless a version at or past ev's was applied for its session (a
// redelivery). Errors: invalid (lifecycle.ValidRecordedEvent).
func (st *Store) RecordTransition(_ context.Context, ev lifecycle.Event) error {
	if err := lifecycle.ValidRecordedEvent(ev); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	u := &st.usage
	if ev.Version <= u.applied[ev.SessionID] {
		return nil
	}
	u.applied[ev.SessionID] = ev.Version
	rows := u.rows[ev.AccountID]
	if rows == nil {
		rows = map[string]*lifecycle.UsageRow{}
		u.rows[ev.AccountID] = rows
	}
	add := func(key, session string, d lifecycle.UsageDelta) {
		r := rows[key]
		if r == nil {
			r = &lifecycle.UsageRow{Day: d.Day, SessionID: session}
			rows[key] = r
		}
		r.Provider = ev.Provider
		r.RunningMS += d.RunningMS
		r.PausedMS += d.PausedMS
		r.Pauses += d.Pauses
		r.Resumes += d.Resumes
		r.CheckpointMBMS += d.CheckpointMBMS
		r.ArchivedMBMS += d.ArchivedMBMS
	}
	for _, d := range lifecycle.UsageDeltas(ev) {
		add("D#"+d.Day+"#"+ev.Provider, "", d)
		add("S#"+d.Day+"#"+ev.SessionID, ev.SessionID, d)
	}
	e := ev
	e.Provider = "" // not kept, as in internal/dynamo
	expires := time.Unix(ev.Time.Add(u.retention).Unix(), 0).UTC()
	u.events[ev.SessionID] = append(u.events[ev.SessionID], keptEvent{ev: e, expires: expires})
	return nil
}

// UsageRows returns q's rows in sort-key order, as DynamoDB's Query would.
// Errors: invalid (no account, a limit out of range, a foreign cursor).
func (st *Store) UsageRows(_ context.Context, q lifecycle.UsageQuery) (lifecycle.UsagePage, error) {
	if q.AccountID == "" {
		return lifecycle.UsagePage{}, lifecycle.Errorf(lifecycle.CodeInvalid, "account id is required")
	}
	prefix := "D#"
	if q.BySession {
		prefix = "S#"
		if q.Limit < 1 || q.Limit > 1000 {
			return lifecycle.UsagePage{}, lifecycle.Errorf(lifecycle.CodeInvalid, "limit must be between 1 and 1000")
		}
	}
	lo, hi := prefix+q.From, prefix+q.To+"~"
	after := ""
	if q.BySession && q.Cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(q.Cursor)
		if after = string(b); err != nil || !strings.HasPrefix(after, "S#") || after < lo || after > hi {
			return lifecycle.UsagePage{}, lifecycle.Errorf(lifecycle.CodeInvalid, "cursor is not valid")
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var keys []string
	for k := range st.usage.rows[q.AccountID] {
		if k >= lo && k <= hi && k > after {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, cmp.Compare)
	var page lifecycle.UsagePage
	for i, k := range keys {
		if q.BySession && i == q.Limit {
			page.Cursor = base64.RawURLEncoding.EncodeToString([]byte(keys[i-1]))
			break
		}
		page.Rows = append(page.Rows, *st.usage.rows[q.AccountID][k])
	}
	return page, nil
}

// SessionEvents returns one page of sessionID's recorded events, newest
// first, those kept at q.Now. Errors: invalid (lifecycle.ValidEventQuery, a
// foreign cursor).
func (st *Store) SessionEvents(_ context.Context, q lifecycle.EventQuery) (lifecycle.EventPage, error) {
	if err := lifecycle.ValidEventQuery(q); err != nil {
		return lifecycle.EventPage{}, err
	}
	before := int64(-1)
	if q.Cursor != "" {
		v, err := lifecycle.ParseEventCursor(q.Cursor, q.SessionID)
		if err != nil {
			return lifecycle.EventPage{}, err
		}
		before = v
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	all := st.usage.events[q.SessionID]
	page := lifecycle.EventPage{Events: []lifecycle.Event{}}
	for i := len(all) - 1; i >= 0; i-- {
		k := all[i]
		if before >= 0 && k.ev.Version >= before || !q.Now.IsZero() && !k.expires.After(q.Now) {
			continue
		}
		if len(page.Events) == q.Limit {
			page.Cursor = lifecycle.EventCursor(q.SessionID, page.Events[q.Limit-1].Version)
			break
		}
		page.Events = append(page.Events, k.ev)
	}
	return page, nil
}
