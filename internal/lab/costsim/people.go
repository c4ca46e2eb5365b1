package costsim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Behaviour is how one kind of user works in a session: bursts of activity
// (an agent's turns, or a person's edits) separated by idle gaps, until
// the user leaves (docs/COST.md "The trace of people"). Durations are
// time.Duration; medians are of log-normal distributions and a Sigma is
// the standard deviation of the underlying normal.
type Behaviour struct {
	// Name labels the behaviour in reports: "agent", "human", "clockwork",
	// "never".
	Name string
	// Share is this behaviour's share of users, before each account's own
	// mix (PeopleParams.AccountMixSigma).
	Share float64
	// BurstMedian and BurstSigma give a burst's length (log-normal);
	// BurstTailShare of bursts instead come from a Pareto tail with scale
	// BurstTailMin and shape BurstTailAlpha (an agent's long turns). Every
	// burst is clamped to 1 s..BurstMax.
	BurstMedian    time.Duration
	BurstSigma     float64
	BurstTailShare float64
	BurstTailMin   time.Duration
	BurstTailAlpha float64
	BurstMax       time.Duration
	// Agent says the bursts are an agent's turns: the sandbox is busy
	// through them and nothing may pause it (docs/DESIGN.md "Client
	// channel", busy hold). The replay counts any pause inside a burst
	// (Result.Interrupted).
	Agent bool
	// GapMedian is the median over users of a user's own median gap; a
	// user's median is GapMedian × exp(GapUserSigma × N(0, 1)), and each
	// short gap is log-normal around it with GapSigma.
	GapMedian    time.Duration
	GapUserSigma float64
	GapSigma     float64
	// LongGapShare of gaps are long instead: Pareto with scale LongGapMin
	// and shape LongGapAlpha (a meeting, lunch), clamped to
	// PeopleParams.GapMax.
	LongGapShare float64
	LongGapMin   time.Duration
	LongGapAlpha float64
	// PeriodMin and PeriodMax, when PeriodMax is positive, make the user a
	// clockwork returner: the user's period is log-uniform in
	// [PeriodMin, PeriodMax] and every gap is period × (1 + PeriodJitter ×
	// N(0, 1)); the gap fields above are then unused.
	PeriodMin, PeriodMax time.Duration
	PeriodJitter         float64
	// LeaveProbability is the chance, after each burst, that the user
	// leaves: the work block ends (geometric, mean 1/LeaveProbability
	// bursts).
	LeaveProbability float64
	// OneSession users never return: one session, one work block.
	OneSession bool
}

// PeopleParams is the shape of a trace of people (GeneratePeople): users
// in accounts, each with a behaviour, a time zone and a daily rhythm of
// work blocks, the blocks opening sessions or continuing the last one.
type PeopleParams struct {
	// Accounts and Users: how many. Users are spread over accounts by a
	// Zipf law of exponent AccountSkew (the first account largest), at
	// least one each.
	Accounts    int
	Users       int
	AccountSkew float64
	// AccountMixSigma perturbs each account's behaviour mix: an account's
	// share of behaviour b is Share_b × exp(AccountMixSigma × N(0, 1)),
	// normalised, so accounts differ as customers do.
	AccountMixSigma float64
	// Behaviours are the kinds of user; their Shares need not sum to 1.
	Behaviours []Behaviour
	// TimeZones are the users' UTC offsets in hours, drawn uniformly.
	TimeZones []float64
	// WorkStartHour is the median local hour a user's work day starts;
	// a user's own start is WorkStartHour + WorkStartSpread × N(0, 1) and
	// each day's is that + HabitJitter × N(0, 1).
	WorkStartHour   float64
	WorkStartSpread time.Duration
	HabitJitter     time.Duration
	// DayShare is the median chance that a user works on a given weekday
	// (a user's own is drawn around it, clamped to 0.1..1); on Saturday
	// and Sunday it is multiplied by WeekendFactor.
	DayShare      float64
	WeekendFactor float64
	// SecondBlockShare is the chance a work day has an afternoon block,
	// starting AfternoonAfter (± HabitJitter) after the morning one.
	SecondBlockShare float64
	AfternoonAfter   time.Duration
	// ContinueShare is the chance a block continues the user's last
	// session (a return after hours) instead of opening a new one.
	ContinueShare float64
	// GapMax clamps every gap within a block.
	GapMax time.Duration
}

// DefaultPeople returns the default shape of the trace of people. Sources
// and assumptions are in docs/COST.md "The trace of people".
func DefaultPeople() PeopleParams {
	return PeopleParams{
		Accounts: 16, Users: 600, AccountSkew: 0.8, AccountMixSigma: 0.5,
		Behaviours: []Behaviour{
			{Name: "agent", Share: 0.5, Agent: true,
				BurstMedian: 45 * time.Second, BurstSigma: 0.9,
				BurstTailShare: 0.04, BurstTailMin: 5 * time.Minute, BurstTailAlpha: 0.9, BurstMax: 2 * time.Hour,
				GapMedian: 50 * time.Second, GapUserSigma: 0.6, GapSigma: 0.7,
				LongGapShare: 0.06, LongGapMin: 15 * time.Minute, LongGapAlpha: 1.2,
				LeaveProbability: 0.45},
			{Name: "human", Share: 0.25,
				BurstMedian: 6 * time.Minute, BurstSigma: 1.0, BurstMax: 4 * time.Hour,
				GapMedian: 90 * time.Second, GapUserSigma: 0.7, GapSigma: 0.9,
				LongGapShare: 0.25, LongGapMin: 20 * time.Minute, LongGapAlpha: 1.1,
				LeaveProbability: 0.15},
			{Name: "clockwork", Share: 0.1,
				BurstMedian: 2 * time.Minute, BurstSigma: 0.6, BurstMax: time.Hour,
				PeriodMin: 15 * time.Minute, PeriodMax: time.Hour, PeriodJitter: 0.03,
				LeaveProbability: 0.12},
			{Name: "never", Share: 0.15, OneSession: true, Agent: true,
				BurstMedian: 45 * time.Second, BurstSigma: 0.9, BurstMax: 2 * time.Hour,
				GapMedian: 50 * time.Second, GapUserSigma: 0.6, GapSigma: 0.7,
				LeaveProbability: 0.5},
		},
		TimeZones:     []float64{-8, -5, 0, 1, 5.5, 8},
		WorkStartHour: 9.5, WorkStartSpread: 75 * time.Minute, HabitJitter: 20 * time.Minute,
		DayShare: 0.6, WeekendFactor: 0.25,
		SecondBlockShare: 0.4, AfternoonAfter: 4*time.Hour + 30*time.Minute,
		ContinueShare: 0.3,
		GapMax:        36 * time.Hour,
	}
}

// The PCG streams of the trace of people: user u draws from userStream|u
// and the accounts' sizes and mixes from accountStream. Both stay below
// leadStream (2^61), so they collide with no stream of Generate.
const (
	userStream    = 1 << 59
	accountStream = 1 << 60
)

// Validate returns nil when p can generate a trace, or an error listing
// every field out of range.
func (p PeopleParams) Validate() error {
	var errs []string
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Sprintf(format, args...))
		}
	}
	check(p.Accounts > 0 && p.Users >= p.Accounts, "accounts must be positive and at most users")
	check(p.AccountSkew >= 0 && p.AccountMixSigma >= 0, "account skew and mix sigma must not be negative")
	check(len(p.TimeZones) > 0, "at least one time zone")
	check(p.DayShare > 0 && p.DayShare <= 1 && p.WeekendFactor >= 0 && p.WeekendFactor <= 1, "day share in (0, 1], weekend factor in [0, 1]")
	check(p.SecondBlockShare >= 0 && p.SecondBlockShare <= 1 && p.ContinueShare >= 0 && p.ContinueShare <= 1,
		"second block and continue shares in [0, 1]")
	check(p.GapMax >= time.Second, "gap max at least 1s")
	total := 0.0
	for i, b := range p.Behaviours {
		total += b.Share
		check(b.Name != "" && b.Share >= 0, "behaviour %d: a name and a share not negative", i)
		check(b.BurstMedian > 0 && b.BurstSigma >= 0 && b.BurstMax >= time.Second, "behaviour %q: burst median, sigma, max", b.Name)
		check(b.BurstTailShare >= 0 && b.BurstTailShare <= 1 && (b.BurstTailShare == 0 || (b.BurstTailMin > 0 && b.BurstTailAlpha > 0)),
			"behaviour %q: burst tail share in [0, 1] with a positive min and alpha", b.Name)
		check(b.LeaveProbability > 0 && b.LeaveProbability <= 1, "behaviour %q: leave probability in (0, 1]", b.Name)
		if b.PeriodMax > 0 {
			check(b.PeriodMin > 0 && b.PeriodMin <= b.PeriodMax && b.PeriodJitter >= 0, "behaviour %q: period min..max and jitter", b.Name)
		} else {
			check(b.GapMedian > 0 && b.GapSigma >= 0 && b.GapUserSigma >= 0, "behaviour %q: gap median and sigmas", b.Name)
			check(b.LongGapShare >= 0 && b.LongGapShare <= 1 && (b.LongGapShare == 0 || (b.LongGapMin > 0 && b.LongGapAlpha > 0)),
				"behaviour %q: long gap share in [0, 1] with a positive min and alpha", b.Name)
		}
	}
	check(total > 0, "behaviour shares must not all be zero")
	if len(errs) > 0 {
		return fmt.Errorf("invalid people: %v", errs)
	}
	return nil
}

// GeneratePeople draws a trace of people over cfg.Days from cfg.Epoch
// (a Monday 00:00 UTC) with cfg.Seed: every user draws from a stream of
// its own, so user u's sessions do not depend on how many users there
// are. Sessions carry their user, account and template ("agent" for an
// agent's sessions, "web" otherwise). Presence draws and return leads are
// drawn as Generate draws them (cfg.Trace). Errors: p fails Validate, cfg
// fails Validate, or no user worked at all.
func GeneratePeople(cfg Config, p PeopleParams) (Trace, error) {
	if err := p.Validate(); err != nil {
		return Trace{}, err
	}
	if err := cfg.Validate(); err != nil {
		return Trace{}, err
	}
	accounts := p.accounts(rand.New(rand.NewPCG(cfg.Seed, accountStream)))
	var tr Trace
	for u := range p.Users {
		rng := rand.New(rand.NewPCG(cfg.Seed, userStream|uint64(u)))
		acct := accounts.of[u]
		b := p.Behaviours[pick(rng, accounts.mix[acct])]
		tr.Sessions = append(tr.Sessions, p.user(rng, b, cfg, fmt.Sprintf("u%04d", u), fmt.Sprintf("a%02d", acct))...)
	}
	if len(tr.Sessions) == 0 {
		return Trace{}, fmt.Errorf("invalid people: no user worked in %d days", cfg.Days)
	}
	for i := range tr.Sessions {
		drawPresence(cfg, uint64(i), &tr.Sessions[i])
	}
	return tr, nil
}

// drawPresence fills st's presence draws and return leads from the
// streams of session index i, as Generate does.
func drawPresence(cfg Config, i uint64, st *SessionTrace) {
	away := rand.New(rand.NewPCG(cfg.Seed, presenceStream|i))
	lead := rand.New(rand.NewPCG(cfg.Seed, leadStream|i))
	st.Away = make([]float64, len(st.Bursts)-1)
	st.Lead = make([]time.Duration, len(st.Bursts)-1)
	p := cfg.Trace
	for j := range st.Away {
		st.Away[j] = away.Float64()
		st.Lead[j] = clamp(logNormal(lead, p.ReturnLeadMedian, p.ReturnLeadSigma), p.ReturnLeadMin, p.ReturnLeadMax)
	}
}

// accountPlan is which account each user is in and each account's mix.
type accountPlan struct {
	of  []int       // account of user u
	mix [][]float64 // behaviour weights of account a
}

// accounts spreads p.Users over p.Accounts by the Zipf law and draws each
// account's mix.
func (p PeopleParams) accounts(rng *rand.Rand) accountPlan {
	w := make([]float64, p.Accounts)
	total := 0.0
	for a := range w {
		w[a] = 1 / math.Pow(float64(a+1), p.AccountSkew)
		total += w[a]
	}
	size := make([]int, p.Accounts)
	left := p.Users - p.Accounts
	for a := range size {
		size[a] = 1 + int(float64(left)*w[a]/total)
	}
	for given := sum(size); given < p.Users; given++ {
		size[given%p.Accounts]++
	}
	plan := accountPlan{mix: make([][]float64, p.Accounts)}
	for a, n := range size {
		for range n {
			plan.of = append(plan.of, a)
		}
		plan.mix[a] = make([]float64, len(p.Behaviours))
		for i, b := range p.Behaviours {
			plan.mix[a][i] = b.Share * math.Exp(p.AccountMixSigma*rng.NormFloat64())
		}
	}
	return plan
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

// pick draws an index with probability proportional to w.
func pick(rng *rand.Rand, w []float64) int {
	total := 0.0
	for _, x := range w {
		total += x
	}
	r := rng.Float64() * total
	for i, x := range w {
		if r < x {
			return i
		}
		r -= x
	}
	return len(w) - 1
}

// person is one user's own draws: where their day starts, how often they
// work, their gap median or period.
type person struct {
	b        Behaviour
	start    time.Duration // the user's work start, UTC offset from midnight
	dayShare float64
	gap      time.Duration // the user's median short gap
	period   time.Duration // clockwork: the user's period
}

// user draws every session of one user over cfg.Days.
func (p PeopleParams) user(rng *rand.Rand, b Behaviour, cfg Config, user, account string) []SessionTrace {
	tz := p.TimeZones[rng.IntN(len(p.TimeZones))]
	local := time.Duration(p.WorkStartHour*float64(time.Hour)) + ms(float64(p.WorkStartSpread)*rng.NormFloat64())
	me := person{b: b, start: local - time.Duration(tz*float64(time.Hour)),
		dayShare: min(max(p.DayShare+0.2*rng.NormFloat64(), 0.1), 1)}
	if b.PeriodMax > 0 {
		lo, hi := math.Log(float64(b.PeriodMin)), math.Log(float64(b.PeriodMax))
		me.period = ms(math.Exp(lo + (hi-lo)*rng.Float64()))
	} else {
		me.gap = ms(float64(b.GapMedian) * math.Exp(b.GapUserSigma*rng.NormFloat64()))
	}
	template := "web"
	if b.Agent {
		template = "agent"
	}
	if b.OneSession {
		// One session on one day, then never again.
		day := rng.IntN(cfg.Days)
		at := time.Duration(day)*24*time.Hour + me.start + ms(float64(p.HabitJitter)*rng.NormFloat64())
		if at < 0 {
			at += 24 * time.Hour
		}
		st := SessionTrace{User: user, Account: account, Template: template}
		p.block(rng, me, at, &st)
		return []SessionTrace{st}
	}
	var out []SessionTrace
	open := -1 // index in out of the session a block may continue
	for day := range cfg.Days {
		share := me.dayShare
		if day%7 >= 5 {
			share *= p.WeekendFactor
		}
		if rng.Float64() >= share {
			continue
		}
		morning := time.Duration(day)*24*time.Hour + me.start + ms(float64(p.HabitJitter)*rng.NormFloat64())
		blocks := []time.Duration{morning}
		if rng.Float64() < p.SecondBlockShare {
			blocks = append(blocks, morning+p.AfternoonAfter+ms(float64(p.HabitJitter)*rng.NormFloat64()))
		}
		for _, at := range blocks {
			if open >= 0 {
				last := out[open].Bursts[len(out[open].Bursts)-1].End
				at = max(at, last+time.Minute) // a block never starts inside the last one
			}
			if at < 0 {
				continue
			}
			if open >= 0 && rng.Float64() < p.ContinueShare {
				p.block(rng, me, at, &out[open])
			} else {
				st := SessionTrace{User: user, Account: account, Template: template}
				p.block(rng, me, at, &st)
				out = append(out, st)
				open = len(out) - 1
			}
		}
	}
	return out
}

// block appends one work block starting at at to st: bursts and gaps until
// the user leaves.
func (p PeopleParams) block(rng *rand.Rand, me person, at time.Duration, st *SessionTrace) {
	b := me.b
	t := at
	for {
		burst := Burst{Start: t, End: t + me.burst(rng)}
		st.Bursts = append(st.Bursts, burst)
		for h := burst.Start; h < burst.End; h += heartbeatEvery(rng) {
			st.Heartbeats = append(st.Heartbeats, h)
		}
		st.Heartbeats = append(st.Heartbeats, burst.End)
		if rng.Float64() < b.LeaveProbability {
			return
		}
		t = burst.End + clamp(me.gapDraw(rng), time.Second, p.GapMax)
	}
}

// heartbeatEvery is the people's client heartbeat: every 30 s ± 5 s, as
// DefaultConfig's; during an agent's turn the agent's busy hold is
// renewed as often.
func heartbeatEvery(rng *rand.Rand) time.Duration {
	return ms(float64(30*time.Second) + (2*rng.Float64()-1)*float64(5*time.Second))
}

// burst draws one burst length.
func (me person) burst(rng *rand.Rand) time.Duration {
	b := me.b
	var d time.Duration
	if b.BurstTailShare > 0 && rng.Float64() < b.BurstTailShare {
		d = ms(float64(b.BurstTailMin) / math.Pow(1-rng.Float64(), 1/b.BurstTailAlpha))
	} else {
		d = logNormal(rng, b.BurstMedian, b.BurstSigma)
	}
	return clamp(d, time.Second, b.BurstMax)
}

// gapDraw draws one idle gap of the user.
func (me person) gapDraw(rng *rand.Rand) time.Duration {
	b := me.b
	switch {
	case me.period > 0:
		return ms(float64(me.period) * max(1+b.PeriodJitter*rng.NormFloat64(), 0.5))
	case b.LongGapShare > 0 && rng.Float64() < b.LongGapShare:
		return ms(float64(b.LongGapMin) / math.Pow(1-rng.Float64(), 1/b.LongGapAlpha))
	default:
		return logNormal(rng, me.gap, b.GapSigma)
	}
}
