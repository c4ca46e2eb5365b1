package costsim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Burst is one stretch of user activity, as offsets from Config.Epoch. The
// user's first heartbeat of the burst is at Start and the last at End.
type Burst struct {
	Start, End time.Duration
}

// SessionTrace is what one user does: bursts of activity separated by idle
// gaps, then leaving for good after the last burst. Heartbeats are the
// requests the client sends, as offsets from Config.Epoch, ascending; each
// burst's first and last heartbeat fall on its Start and End.
type SessionTrace struct {
	// User, Account and Template name who worked in the session (a trace
	// of people, GeneratePeople, or a recorded one, LoadTrace); empty in
	// Generate's i.i.d. trace, where every session is a user of its own.
	User, Account, Template string
	Bursts                  []Burst
	Heartbeats              []time.Duration
	// Away holds one presence draw per idle gap, uniform in [0, 1): Away[j]
	// is for the gap after burst j, and the client is gone or hidden for
	// that gap when Away[j] < Scenario.AwayProbability. Nil (hand-written
	// traces) means the client stays visible through every gap; otherwise
	// it holds len(Bursts)-1 draws.
	Away []float64
	// Lead holds one return lead per idle gap: Lead[j] is how long before
	// burst j+1's first request its client became visible again (after an
	// away gap; TraceParams.ReturnLeadMedian). Nil (hand-written traces)
	// means no lead: the client is seen again with its first request.
	Lead []time.Duration
}

// Trace is the input of a replay: every session's activity.
type Trace struct {
	Sessions []SessionTrace
}

// NewSessionTrace returns a session made of bursts (ascending, not
// overlapping) whose heartbeats come exactly every interval from each burst's
// Start, plus one at its End (a non-positive interval gives only those
// two). It builds hand-written traces for Replay.
func NewSessionTrace(interval time.Duration, bursts ...Burst) SessionTrace {
	st := SessionTrace{Bursts: bursts}
	for _, b := range bursts {
		step := interval
		if step <= 0 {
			step = b.End - b.Start + 1
		}
		for h := b.Start; h < b.End; h += step {
			st.Heartbeats = append(st.Heartbeats, h)
		}
		st.Heartbeats = append(st.Heartbeats, b.End)
	}
	return st
}

// Generate draws the synthetic trace of cfg (package comment, "Trace"). Each
// session has its own random stream, seeded by (cfg.Seed, session index), so
// the trace of session i does not depend on how many sessions there are.
// Errors: cfg fails Validate.
func Generate(cfg Config) (Trace, error) {
	if err := cfg.Validate(); err != nil {
		return Trace{}, err
	}
	tr := Trace{Sessions: make([]SessionTrace, cfg.Sessions)}
	for i := range tr.Sessions {
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(i)))
		st := cfg.Trace.session(rng, cfg.Days)
		// Presence draws come from a stream of their own, so adding them
		// changed no other draw, and the same gaps are away at every
		// probability above their draw (away_prob 1 ⊇ 0.5 ⊇ 0).
		away := rand.New(rand.NewPCG(cfg.Seed, presenceStream|uint64(i)))
		st.Away = make([]float64, len(st.Bursts)-1)
		for j := range st.Away {
			st.Away[j] = away.Float64()
		}
		// Leads too come from a stream of their own, so adding them changed
		// no earlier draw.
		lead := rand.New(rand.NewPCG(cfg.Seed, leadStream|uint64(i)))
		st.Lead = make([]time.Duration, len(st.Bursts)-1)
		for j := range st.Lead {
			p := cfg.Trace
			st.Lead[j] = clamp(logNormal(lead, p.ReturnLeadMedian, p.ReturnLeadSigma), p.ReturnLeadMin, p.ReturnLeadMax)
		}
		tr.Sessions[i] = st
	}
	return tr, nil
}

// leadStream marks the PCG streams of the return leads: session i draws
// from leadStream|i, which collides with no session stream (below 2^61),
// presenceStream nor sweepStream.
const leadStream = 1 << 61

// presenceStream marks the PCG streams of the presence draws: session i
// draws from presenceStream|i, which collides neither with the session
// streams (their index, below 2^62) nor with sweepStream (2^63).
const presenceStream = 1 << 62

// session draws one session starting within days of the epoch.
func (p TraceParams) session(rng *rand.Rand, days int) SessionTrace {
	var st SessionTrace
	t := p.start(rng, days)
	for {
		b := Burst{Start: t, End: t + clamp(logNormal(rng, p.BurstMedian, p.BurstSigma), time.Second, p.BurstMax)}
		st.Bursts = append(st.Bursts, b)
		for h := b.Start; h < b.End; h += p.heartbeatInterval(rng) {
			st.Heartbeats = append(st.Heartbeats, h)
		}
		st.Heartbeats = append(st.Heartbeats, b.End)
		if rng.Float64() < p.LeaveProbability {
			return st
		}
		t = b.End + p.gap(rng)
	}
}

// start draws a session start by rejection from the diurnal, weekday-weighted
// rate: a raised cosine from DiurnalTrough at 03:00 UTC to 1 at 15:00 UTC,
// times WeekendFactor on days 6 and 7.
func (p TraceParams) start(rng *rand.Rand, days int) time.Duration {
	span := time.Duration(days) * 24 * time.Hour
	for {
		at := ms(rng.Float64() * float64(span))
		hour := float64(at%(24*time.Hour)) / float64(time.Hour)
		rate := p.DiurnalTrough + (1-p.DiurnalTrough)*(1-math.Cos(2*math.Pi*(hour-3)/24))/2
		if day := int(at / (24 * time.Hour)); day%7 >= 5 {
			rate *= p.WeekendFactor
		}
		if rng.Float64() < rate {
			return at
		}
	}
}

// heartbeatInterval draws the time to the client's next heartbeat.
func (p TraceParams) heartbeatInterval(rng *rand.Rand) time.Duration {
	j := (2*rng.Float64() - 1) * float64(p.HeartbeatJitter)
	return max(ms(float64(p.HeartbeatInterval)+j), time.Millisecond)
}

// gap draws one idle gap from the short/long mixture.
func (p TraceParams) gap(rng *rand.Rand) time.Duration {
	var g time.Duration
	if rng.Float64() < p.ShortGapShare {
		g = logNormal(rng, p.ShortGapMedian, p.ShortGapSigma)
	} else {
		// Pareto by inversion: x_m / U^(1/alpha), U in (0, 1].
		u := 1 - rng.Float64()
		g = ms(float64(p.LongGapMin) / math.Pow(u, 1/p.LongGapAlpha))
	}
	return clamp(g, time.Second, p.GapMax)
}

// logNormal draws exp(N(ln median, sigma²)), rounded to milliseconds.
func logNormal(rng *rand.Rand, median time.Duration, sigma float64) time.Duration {
	return ms(float64(median) * math.Exp(sigma*rng.NormFloat64()))
}

// ms converts nanoseconds to a Duration truncated to whole milliseconds, the
// resolution of every drawn time. Values beyond a Duration saturate.
func ms(ns float64) time.Duration {
	if ns >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(ns).Truncate(time.Millisecond)
}

func clamp(d, lo, hi time.Duration) time.Duration { return min(max(d, lo), hi) }

// validate checks the invariants the replay relies on.
func (t Trace) validate() error {
	if len(t.Sessions) == 0 {
		return fmt.Errorf("invalid trace: no sessions")
	}
	for i, s := range t.Sessions {
		if len(s.Bursts) == 0 || len(s.Heartbeats) == 0 {
			return fmt.Errorf("invalid trace: session %d has no bursts or no heartbeats", i)
		}
		for j := 1; j < len(s.Heartbeats); j++ {
			if s.Heartbeats[j] < s.Heartbeats[j-1] {
				return fmt.Errorf("invalid trace: session %d heartbeat %d goes back in time", i, j)
			}
		}
		for j, b := range s.Bursts {
			if b.End < b.Start || (j > 0 && b.Start < s.Bursts[j-1].End) {
				return fmt.Errorf("invalid trace: session %d burst %d is reversed or overlaps", i, j)
			}
		}
		if s.Away != nil && len(s.Away) != len(s.Bursts)-1 {
			return fmt.Errorf("invalid trace: session %d has %d presence draws for %d gaps", i, len(s.Away), len(s.Bursts)-1)
		}
		if s.Lead != nil && len(s.Lead) != len(s.Bursts)-1 {
			return fmt.Errorf("invalid trace: session %d has %d return leads for %d gaps", i, len(s.Lead), len(s.Bursts)-1)
		}
		for _, l := range s.Lead {
			if l < 0 {
				return fmt.Errorf("invalid trace: session %d has a negative return lead", i)
			}
		}
		for _, a := range s.Away {
			if a < 0 || a >= 1 {
				return fmt.Errorf("invalid trace: session %d has a presence draw outside [0, 1)", i)
			}
		}
		if s.Heartbeats[0] < 0 {
			return fmt.Errorf("invalid trace: session %d starts before the epoch", i)
		}
	}
	return nil
}
