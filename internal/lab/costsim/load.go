package costsim

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The event kinds of a recorded trace (LoadTrace).
const (
	// KindRequest is a request the control plane saw from the session's
	// user: a heartbeat, an API call, a page load.
	KindRequest = "request"
	// KindTurnStart and KindTurnEnd bound an agent's turn: the sandbox is
	// busy in between and nothing may pause it (a busy hold).
	KindTurnStart = "turn_start"
	KindTurnEnd   = "turn_end"
)

// LoadOptions say how LoadTrace turns events into bursts.
type LoadOptions struct {
	// BurstGap: requests less than this apart belong to one burst
	// (default 1 min, twice the browser client's 30 s heartbeat).
	BurstGap time.Duration
	// HoldEvery is how often a turn's busy hold is renewed, a heartbeat
	// the replay sees inside every turn (default 30 s).
	HoldEvery time.Duration
}

// LoadedTrace is a recorded trace ready to replay: its sessions as
// offsets from Epoch, the Monday 00:00 UTC on or before its first event
// (set Config.Epoch to it so the weekday pattern means what it says).
type LoadedTrace struct {
	Trace  Trace
	Epoch  time.Time
	Events int
}

// traceEvent is one row of a recorded trace.
type traceEvent struct {
	Session  string `json:"session"`
	User     string `json:"user"`
	Account  string `json:"account"`
	Template string `json:"template"`
	Time     string `json:"time"`
	Kind     string `json:"kind"`
	at       time.Time
}

// LoadTrace reads a recorded trace of events, one per line, in JSON lines
// ({"session":"s1","user":"ada","account":"acme","time":"2026-01-05T09:00:00Z","kind":"request"})
// or CSV with a header naming the columns session, user, account, time,
// kind (and optionally template), in any order. time is RFC 3339 or Unix
// seconds (a decimal fraction allowed); kind is request, turn_start or
// turn_end (KindRequest, ...). Events need not be sorted. Per session,
// requests closer than opts.BurstGap form a burst, a turn is a burst from
// its start to its end (merged with the requests it overlaps), and the
// replay's heartbeats are the requests, each turn's bounds and a hold
// renewal every opts.HoldEvery inside it. A user or account left empty is
// the session id or "-". Errors: a malformed line or field (naming its
// line), an unknown kind, a turn_end without its start, no events.
func LoadTrace(r io.Reader, opts LoadOptions) (LoadedTrace, error) {
	if opts.BurstGap <= 0 {
		opts.BurstGap = time.Minute
	}
	if opts.HoldEvery <= 0 {
		opts.HoldEvery = 30 * time.Second
	}
	br := bufio.NewReader(r)
	head, _ := br.Peek(512)
	var events []traceEvent
	var err error
	if t := bytes.TrimLeft(head, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '{' {
		events, err = readJSONLines(br)
	} else {
		events, err = readCSV(br)
	}
	if err != nil {
		return LoadedTrace{}, err
	}
	if len(events) == 0 {
		return LoadedTrace{}, fmt.Errorf("load trace: no events")
	}
	first := events[0].at
	for _, e := range events {
		if e.at.Before(first) {
			first = e.at
		}
	}
	day := first.UTC().Truncate(24 * time.Hour)
	epoch := day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7)) // back to Monday
	bySession := map[string][]traceEvent{}
	var order []string
	for _, e := range events {
		if _, ok := bySession[e.Session]; !ok {
			order = append(order, e.Session)
		}
		bySession[e.Session] = append(bySession[e.Session], e)
	}
	slices.Sort(order)
	out := LoadedTrace{Epoch: epoch, Events: len(events)}
	for _, id := range order {
		st, err := sessionOf(bySession[id], epoch, opts)
		if err != nil {
			return LoadedTrace{}, fmt.Errorf("load trace: session %s: %w", id, err)
		}
		out.Trace.Sessions = append(out.Trace.Sessions, st)
	}
	return out, out.Trace.validate()
}

// sessionOf builds one session's bursts and heartbeats from its events.
func sessionOf(evs []traceEvent, epoch time.Time, opts LoadOptions) (SessionTrace, error) {
	slices.SortStableFunc(evs, func(a, b traceEvent) int { return a.at.Compare(b.at) })
	e0 := evs[0]
	st := SessionTrace{User: e0.User, Account: e0.Account, Template: e0.Template}
	if st.User == "" {
		st.User = e0.Session
	}
	if st.Account == "" {
		st.Account = "-"
	}
	var spans []Burst // requests as points, turns as spans
	var beats []time.Duration
	turn := time.Duration(-1)
	for _, e := range evs {
		at := e.at.Sub(epoch)
		switch e.Kind {
		case KindRequest:
			spans = append(spans, Burst{Start: at, End: at})
			beats = append(beats, at)
		case KindTurnStart:
			if turn < 0 {
				turn = at
			}
		case KindTurnEnd:
			if turn < 0 {
				return SessionTrace{}, fmt.Errorf("turn_end at %s without a turn_start", e.Time)
			}
			spans = append(spans, Burst{Start: turn, End: at})
			for h := turn; h < at; h += opts.HoldEvery {
				beats = append(beats, h)
			}
			beats = append(beats, at)
			turn = -1
		}
	}
	if turn >= 0 {
		return SessionTrace{}, fmt.Errorf("a turn_start without its turn_end")
	}
	slices.SortFunc(spans, func(a, b Burst) int { return int(a.Start - b.Start) })
	for _, sp := range spans {
		if n := len(st.Bursts); n > 0 && sp.Start-st.Bursts[n-1].End < opts.BurstGap {
			st.Bursts[n-1].End = max(st.Bursts[n-1].End, sp.End)
			continue
		}
		st.Bursts = append(st.Bursts, sp)
	}
	slices.Sort(beats)
	st.Heartbeats = slices.Compact(beats)
	return st, nil
}

// readJSONLines reads one event per non-empty line.
func readJSONLines(r io.Reader) ([]traceEvent, error) {
	var out []traceEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var e traceEvent
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("load trace: line %d: %w", line, err)
		}
		if err := e.parse(); err != nil {
			return nil, fmt.Errorf("load trace: line %d: %w", line, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("load trace: %w", err)
	}
	return out, nil
}

// readCSV reads a header line and one event per row.
func readCSV(r io.Reader) ([]traceEvent, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("load trace: header: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))] = i
	}
	for _, need := range []string{"session", "time", "kind"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("load trace: the header has no %s column", need)
		}
	}
	field := func(rec []string, name string) string {
		if i, ok := col[name]; ok && i < len(rec) {
			return strings.TrimSpace(rec[i])
		}
		return ""
	}
	var out []traceEvent
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("load trace: %w", err)
		}
		e := traceEvent{Session: field(rec, "session"), User: field(rec, "user"), Account: field(rec, "account"),
			Template: field(rec, "template"), Time: field(rec, "time"), Kind: field(rec, "kind")}
		if err := e.parse(); err != nil {
			return nil, fmt.Errorf("load trace: line %d: %w", line, err)
		}
		out = append(out, e)
	}
}

// parse checks e's fields and reads its time.
func (e *traceEvent) parse() error {
	if e.Session == "" {
		return fmt.Errorf("no session")
	}
	switch e.Kind {
	case KindRequest, KindTurnStart, KindTurnEnd:
	default:
		return fmt.Errorf("kind %q is not %s, %s or %s", e.Kind, KindRequest, KindTurnStart, KindTurnEnd)
	}
	if t, err := time.Parse(time.RFC3339Nano, e.Time); err == nil {
		e.at = t
		return nil
	}
	secs, err := strconv.ParseFloat(e.Time, 64)
	if err != nil || secs < 0 {
		return fmt.Errorf("time %q is neither RFC 3339 nor Unix seconds", e.Time)
	}
	e.at = time.Unix(0, int64(secs*1e9)).UTC().Truncate(time.Millisecond)
	return nil
}
