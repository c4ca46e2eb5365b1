package lifecycle

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Usage (docs/DESIGN.md "Operators"): per account, per UTC day and per session,
// the running and paused time, the pauses and resumes, and an estimated
// cost, summed from the committed transitions.
//
// The publisher (internal/outbox, the table's stream) hands every
// transition event to a UsageStore (RecordTransition), which applies its
// UsageDeltas as atomic counters. A transition carries, besides its own time
// (Event.Time, when the session entered To), the time the session entered
// From (Event.Since, the old image's state_changed_at), so each transition
// accrues the time spent in From on its own, with no state kept between
// events:
//
//   - running time: the time spent in a state that holds a running slot
//     (provisioning, running, pausing, resuming; HoldsRunningSlot): from the
//     moment a sandbox is asked for until it is known paused or gone, which
//     is what the providers bill as running, and what the quota counts;
//   - paused time: the time spent in paused;
//   - a pause: a transition to paused; a resume: resuming → running;
//   - stored checkpoint bytes (docs/API.md "stored_gb_hours"): the time in
//     From times the session's ready checkpoint bytes then
//     (Event.CheckpointBytes), as archived bytes when From is archived,
//     else as checkpoint bytes (a session that is not ended); in
//     megabyte-milliseconds (10^6 bytes × ms, rounded). The paused tier
//     needs no counter of its own: it is the paused time times the
//     provider's declared paused size (Price.PausedGB), applied when read.
//
// Durations are whole milliseconds (times are truncated to the millisecond)
// and are split at UTC midnight, each part counted on its own day; counts
// are on the day of the transition. A store applies a transition at most
// once per session version (idempotent per event_id: a redelivered stream
// record is skipped).

// UsageDelta is one UTC day's share of one transition's usage.
type UsageDelta struct {
	Day       string // UTC day, "2006-01-02"
	RunningMS int64  // milliseconds in a running-slot state
	PausedMS  int64  // milliseconds paused
	Pauses    int64  // transitions to paused
	Resumes   int64  // resuming → running transitions
	// CheckpointMBMS and ArchivedMBMS are stored checkpoint bytes times
	// time, in megabyte-milliseconds: of a session not archived, and of an
	// archived one.
	CheckpointMBMS int64
	ArchivedMBMS   int64
}

// DayLayout is the layout of a usage day ("2006-01-02", UTC).
const DayLayout = time.DateOnly

// UsageDeltas returns the usage of transition ev, one delta per UTC day it
// touches, oldest first (nil when it accrues nothing). The time in ev.From
// runs from ev.Since to ev.Time; a zero Since (a create, or an event built
// without it) or a Since after Time accrues no time. A readiness event
// (IsReadiness) moves no time between states and accrues nothing.
func UsageDeltas(ev Event) []UsageDelta {
	if ev.IsReadiness() {
		return nil
	}
	byDay := map[string]*UsageDelta{}
	var days []string
	at := func(day string) *UsageDelta {
		d, ok := byDay[day]
		if !ok {
			d = &UsageDelta{Day: day}
			byDay[day] = d
			days = append(days, day)
		}
		return d
	}
	start, end := ev.Since.UTC().Truncate(time.Millisecond), ev.Time.UTC().Truncate(time.Millisecond)
	running, paused := ev.From != "" && ev.From.HoldsRunningSlot(), ev.From == StatePaused
	stored := ev.CheckpointBytes > 0 && ev.From != "" && !ev.From.Final()
	if (running || paused || stored) && !ev.Since.IsZero() && start.Before(end) {
		for t := start; t.Before(end); {
			next := time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
			stop := next
			if end.Before(next) {
				stop = end
			}
			ms := stop.Sub(t).Milliseconds()
			d := at(t.Format(DayLayout))
			switch {
			case running:
				d.RunningMS += ms
			case paused:
				d.PausedMS += ms
			}
			if stored {
				mbms := int64(math.Round(float64(ev.CheckpointBytes) / 1e6 * float64(ms)))
				if ev.From == StateArchived {
					d.ArchivedMBMS += mbms
				} else {
					d.CheckpointMBMS += mbms
				}
			}
			t = stop
		}
	}
	day := end.Format(DayLayout)
	if ev.To == StatePaused {
		at(day).Pauses++
	}
	if ev.From == StateResuming && ev.To == StateRunning {
		at(day).Resumes++
	}
	out := make([]UsageDelta, 0, len(days))
	slices.Sort(days)
	for _, d := range days {
		out = append(out, *byDay[d])
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// UsageRow is a stored usage counter: one account's usage on one UTC day,
// per provider (SessionID "") or per session (SessionID set).
type UsageRow struct {
	Day       string // "2006-01-02"
	SessionID string // "" for an account-day row
	Provider  string // the provider whose prices apply
	RunningMS int64  // milliseconds
	PausedMS  int64  // milliseconds
	Pauses    int64
	Resumes   int64
	// CheckpointMBMS, ArchivedMBMS: UsageDelta's, summed.
	CheckpointMBMS int64
	ArchivedMBMS   int64
}

// UsageQuery asks a UsageStore for rows of one account between two UTC
// days, both included.
type UsageQuery struct {
	AccountID string
	From, To  string // "2006-01-02", From <= To
	// BySession: per-session rows (ordered by day, then session id, and
	// paginated by Limit and Cursor); otherwise every account-day row of
	// the range (ordered by day, then provider; Limit and Cursor unused).
	BySession bool
	Limit     int    // 1..1000 with BySession
	Cursor    string // "" for the first page
}

// UsagePage is one page of usage rows; Cursor is "" on the last page.
type UsagePage struct {
	Rows   []UsageRow
	Cursor string
}

// UsageStore keeps usage counters and each session's recent lifecycle
// events (internal/dynamo, internal/lifecycle/memstore). It is separate from Store
// so that wrappers of a Store need not forward it.
type UsageStore interface {
	// RecordTransition applies the UsageDeltas of ev to its account's
	// day rows and its session's day rows, and keeps ev among its
	// session's recent events, atomically and at most once per session
	// version: an event whose version is not newer than the last one
	// applied for its session is skipped (a redelivery). Events of one
	// session must be recorded in version order (the stream's order).
	// Errors: invalid (an event without session, account or version), the
	// store's.
	RecordTransition(ctx context.Context, ev Event) error
	// UsageRows returns the rows q asks for. Errors: invalid for a cursor
	// this store did not issue, the store's.
	UsageRows(ctx context.Context, q UsageQuery) (UsagePage, error)
	// SessionEvents returns one page of a session's recorded events,
	// newest first (by version), each with its Since and Actor, leaving
	// out those whose retention ended at or before q.Now (a store keeps
	// an event for its retention from the event's time; the default is
	// DefaultEventRetention). Errors: invalid (a limit out of range, a
	// cursor not issued for q.SessionID), the store's.
	SessionEvents(ctx context.Context, q EventQuery) (EventPage, error)
}

// DefaultEventRetention is how long a store keeps a session's recorded
// events unless configured otherwise (their TTL, from the event's time;
// SANDMAN_EVENT_RETENTION_DAYS).
const DefaultEventRetention = 30 * 24 * time.Hour

// MaxEventRetention is the longest event retention a store accepts: a
// year (ours: the timeline is for operators, usage keeps the totals).
const MaxEventRetention = 366 * 24 * time.Hour

// EventQuery asks a UsageStore for one page of a session's recorded events.
type EventQuery struct {
	SessionID string
	Limit     int       // 1..MaxEventPage
	Cursor    string    // "" for the first page, else the last page's Cursor
	Now       time.Time // events whose retention ended at or before Now are left out; zero: none are
}

// EventPage is one page of a session's events, newest first; Cursor is ""
// on the last page.
type EventPage struct {
	Events []Event
	Cursor string
}

// EventCursor returns the cursor of an events page that ended at version
// of sessionID: the stores share it, so a cursor is valid for its session
// whichever store issued it.
func EventCursor(sessionID string, version int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("events\n" + sessionID + "\n" + strconv.FormatInt(version, 10)))
}

// ParseEventCursor returns the version an events page of sessionID ended
// at. Errors: invalid ("cursor is not valid") for a cursor EventCursor did
// not write for sessionID.
func ParseEventCursor(cursor, sessionID string) (int64, error) {
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	parts := strings.Split(string(raw), "\n")
	if err != nil || len(parts) != 3 || parts[0] != "events" || parts[1] != sessionID {
		return 0, Errorf(CodeInvalid, "cursor is not valid")
	}
	v, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || v < 1 {
		return 0, Errorf(CodeInvalid, "cursor is not valid")
	}
	return v, nil
}

// ValidEventQuery checks what every UsageStore needs of q. Errors: invalid.
func ValidEventQuery(q EventQuery) error {
	if q.SessionID == "" {
		return Errorf(CodeInvalid, "session id is required")
	}
	if q.Limit < 1 || q.Limit > MaxEventPage {
		return Errorf(CodeInvalid, "limit must be between 1 and %d", MaxEventPage)
	}
	return nil
}

// SessionEvents returns one page of the timeline of accountID's session id:
// its recorded transitions, newest first, limit per page (1..MaxEventPage),
// after cursor (docs/API.md GET /v1/sessions/{id}/events). Reading it is
// not activity. Errors: not_found, forbidden, invalid (limit, cursor),
// internal when the store keeps no events, the store's.
func (s *Service) SessionEvents(ctx context.Context, accountID, id string, limit int, cursor string) (EventPage, error) {
	us, ok := s.cfg.Store.(UsageStore)
	if !ok {
		return EventPage{}, fmt.Errorf("events of session %s: the store %T keeps no events", id, s.cfg.Store)
	}
	if _, err := s.owned(ctx, accountID, id); err != nil {
		return EventPage{}, err
	}
	q := EventQuery{SessionID: id, Limit: limit, Cursor: cursor, Now: s.now()}
	if err := ValidEventQuery(q); err != nil {
		return EventPage{}, err
	}
	return us.SessionEvents(ctx, q)
}

// DiagnoseEvents is how many recent events diagnose shows.
const DiagnoseEvents = 10

// ValidRecordedEvent checks what every UsageStore needs to record ev.
// Errors: invalid naming what is missing.
func ValidRecordedEvent(ev Event) error {
	switch {
	case ev.SessionID == "":
		return Errorf(CodeInvalid, "event %s has no session id", ev.EventID)
	case ev.AccountID == "":
		return Errorf(CodeInvalid, "event %s has no account id", ev.EventID)
	case ev.Version < 1:
		return Errorf(CodeInvalid, "event %s has no version", ev.EventID)
	}
	return nil
}

// Price is what one provider charges, in US dollars per hour of a sandbox
// (of the size Sandman creates), running and paused. Used only for
// estimates (UsageReport).
type Price struct {
	RunningPerHour float64 `json:"running_per_hour"`
	PausedPerHour  float64 `json:"paused_per_hour"`
	// PausedGB is how many gigabytes (10^9 bytes) a paused sandbox keeps
	// at the provider, as declared (the provider's default disk, from its
	// sheet in docs/providers; not measured per sandbox): the paused tier
	// of UsageTotals.Stored. 0: unknown, and no paused GB-hours.
	PausedGB float64 `json:"paused_gb,omitempty"`
}

// StoredGBHours are stored gigabyte-hours (10^9 bytes × hours) per
// retention tier: Paused, the paused sandboxes the provider keeps
// (paused time × Price.PausedGB); Archived, the checkpoints an archived
// session keeps; Checkpoints, the checkpoints kept alongside sessions
// that are not archived (running, paused, ...).
type StoredGBHours struct {
	Paused      float64
	Archived    float64
	Checkpoints float64
}

// UsageTotals are summed usage figures: seconds (with milliseconds as
// fractions), counts, and the estimated cost in US dollars.
type UsageTotals struct {
	RunningSeconds   float64
	PausedSeconds    float64
	Pauses           int64
	Resumes          int64
	EstimatedCostUSD float64
	Stored           StoredGBHours
}

// UsageLine is one line of a UsageReport: a day (SessionID "") or a
// session on a day.
type UsageLine struct {
	Day       string
	SessionID string
	Provider  string // set on session lines
	UsageTotals
}

// UsageReport answers Service.Usage.
type UsageReport struct {
	From, To string // the days asked, "2006-01-02"
	GroupBy  string // UsageByDay or UsageBySession
	Lines    []UsageLine
	// Total sums every line of the range (by day) or of this page (by
	// session).
	Total  UsageTotals
	Cursor string // by session: the next page's cursor, "" on the last
}

// Usage groupings (GET /v1/usage?group_by=).
const (
	UsageByDay     = "day"
	UsageBySession = "session"
)

// MaxUsageDays is the longest range Usage accepts, in days (both ends
// included): a year, so a by-day answer stays one bounded page.
const MaxUsageDays = 366

var dayPattern = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// UsageRequest asks Service.Usage for one account's usage.
type UsageRequest struct {
	From, To string // UTC days "2006-01-02"; "" is today (From: To)
	GroupBy  string // UsageByDay (default) or UsageBySession
	Limit    int    // by session: page size 1..1000 (0: 100)
	Cursor   string // by session: "" for the first page
}

// Usage returns accountID's usage between two UTC days, by day (one line
// per day with usage) or by session (one line per session and day, a page
// at a time), with estimated costs from Config.Prices.
// Errors: invalid (a day not "YYYY-MM-DD", from after to, a range over
// MaxUsageDays, an unknown group_by, a limit out of range, a foreign
// cursor), internal when the store keeps no usage (not a UsageStore), the
// store's.
func (s *Service) Usage(ctx context.Context, accountID string, req UsageRequest) (*UsageReport, error) {
	us, ok := s.cfg.Store.(UsageStore)
	if !ok {
		return nil, fmt.Errorf("usage of account %s: the store %T keeps no usage", accountID, s.cfg.Store)
	}
	today := s.now().UTC().Format(DayLayout)
	if req.To == "" {
		req.To = today
	}
	if req.From == "" {
		req.From = req.To
	}
	from, err := parseDay("from", req.From)
	if err != nil {
		return nil, err
	}
	to, err := parseDay("to", req.To)
	if err != nil {
		return nil, err
	}
	if to.Before(from) {
		return nil, Errorf(CodeInvalid, "from (%s) must not be after to (%s)", req.From, req.To)
	}
	if days := int(to.Sub(from)/(24*time.Hour)) + 1; days > MaxUsageDays {
		return nil, Errorf(CodeInvalid, "the range from %s to %s is %d days; at most %d are allowed", req.From, req.To, days, MaxUsageDays)
	}
	if req.GroupBy == "" {
		req.GroupBy = UsageByDay
	}
	q := UsageQuery{AccountID: accountID, From: req.From, To: req.To}
	switch req.GroupBy {
	case UsageByDay:
	case UsageBySession:
		q.BySession, q.Limit, q.Cursor = true, req.Limit, req.Cursor
		if q.Limit == 0 {
			q.Limit = 100
		}
		if q.Limit < 1 || q.Limit > 1000 {
			return nil, Errorf(CodeInvalid, "limit must be between 1 and 1000, not %d", req.Limit)
		}
	default:
		return nil, Errorf(CodeInvalid, "group_by must be day or session, not %q", req.GroupBy)
	}
	page, err := us.UsageRows(ctx, q)
	if err != nil {
		return nil, err
	}
	rep := &UsageReport{From: req.From, To: req.To, GroupBy: req.GroupBy, Cursor: page.Cursor}
	for _, r := range page.Rows {
		t := s.totals(r)
		rep.Total.add(t)
		if !q.BySession && len(rep.Lines) > 0 && rep.Lines[len(rep.Lines)-1].Day == r.Day {
			rep.Lines[len(rep.Lines)-1].add(t) // another provider's row of the same day
			continue
		}
		line := UsageLine{Day: r.Day, UsageTotals: t}
		if q.BySession {
			line.SessionID, line.Provider = r.SessionID, r.Provider
		}
		rep.Lines = append(rep.Lines, line)
	}
	return rep, nil
}

// totals converts a stored row to seconds and its estimated cost.
func (s *Service) totals(r UsageRow) UsageTotals {
	p := s.cfg.Prices[r.Provider] // unpriced: no cost
	run, paused := float64(r.RunningMS)/1000, float64(r.PausedMS)/1000
	return UsageTotals{
		RunningSeconds: run, PausedSeconds: paused, Pauses: r.Pauses, Resumes: r.Resumes,
		EstimatedCostUSD: roundMicro(run/3600*p.RunningPerHour + paused/3600*p.PausedPerHour),
		Stored: StoredGBHours{
			Paused:      roundMicro(paused / 3600 * p.PausedGB),
			Archived:    roundMicro(float64(r.ArchivedMBMS) / mbmsPerGBHour),
			Checkpoints: roundMicro(float64(r.CheckpointMBMS) / mbmsPerGBHour),
		},
	}
}

// mbmsPerGBHour: megabyte-milliseconds in a gigabyte-hour.
const mbmsPerGBHour = 1e3 * 3600 * 1e3

func (t *UsageTotals) add(o UsageTotals) {
	t.RunningSeconds = roundMilli(t.RunningSeconds + o.RunningSeconds)
	t.PausedSeconds = roundMilli(t.PausedSeconds + o.PausedSeconds)
	t.Pauses += o.Pauses
	t.Resumes += o.Resumes
	t.EstimatedCostUSD = roundMicro(t.EstimatedCostUSD + o.EstimatedCostUSD)
	t.Stored.Paused = roundMicro(t.Stored.Paused + o.Stored.Paused)
	t.Stored.Archived = roundMicro(t.Stored.Archived + o.Stored.Archived)
	t.Stored.Checkpoints = roundMicro(t.Stored.Checkpoints + o.Stored.Checkpoints)
}

func roundMilli(v float64) float64 { return math.Round(v*1000) / 1000 }

// roundMicro rounds a dollar amount to a millionth of a dollar.
func roundMicro(v float64) float64 { return math.Round(v*1e6) / 1e6 }

func parseDay(name, v string) (time.Time, error) {
	if !dayPattern.MatchString(v) {
		return time.Time{}, Errorf(CodeInvalid, "%s must be a UTC day as YYYY-MM-DD, not %q", name, truncateText(v, 32))
	}
	t, err := time.Parse(DayLayout, v)
	if err != nil {
		return time.Time{}, Errorf(CodeInvalid, "%s is not a calendar day: %q", name, v)
	}
	return t, nil
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
