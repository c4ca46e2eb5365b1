package costsim_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lab/costsim"
)

// MustPeople returns the trace of people of cfg and p.
func MustPeople(tb testing.TB, cfg costsim.Config, p costsim.PeopleParams) costsim.Trace {
	tb.Helper()
	tr, err := costsim.GeneratePeople(cfg, p)
	if err != nil {
		tb.Fatalf("generate people: %v", err)
	}
	return tr
}

func TestGeneratePeopleIsDeterministic(t *testing.T) {
	cfg := costsim.DefaultConfig()
	a, b := MustPeople(t, cfg, costsim.DefaultPeople()), MustPeople(t, cfg, costsim.DefaultPeople())
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two traces of the same seed differ")
	}
	cfg.Seed = 2
	if c := MustPeople(t, cfg, costsim.DefaultPeople()); reflect.DeepEqual(a.Sessions[0], c.Sessions[0]) {
		t.Fatal("seed 2 gave seed 1's first session")
	}
}

func TestGeneratePeopleCarriesPeople(t *testing.T) {
	cfg := costsim.DefaultConfig()
	p := costsim.DefaultPeople()
	tr := MustPeople(t, cfg, p)
	sessionsOf := map[string]int{}
	accounts := map[string]bool{}
	for i, s := range tr.Sessions {
		if s.User == "" || s.Account == "" || s.Template == "" {
			t.Fatalf("session %d has no user, account or template: %q %q %q", i, s.User, s.Account, s.Template)
		}
		sessionsOf[s.User]++
		accounts[s.Account] = true
		if got, want := len(s.Away), len(s.Bursts)-1; got != want {
			t.Fatalf("session %d: %d presence draws for %d gaps", i, got, want)
		}
	}
	if got, want := len(accounts), p.Accounts; got != want {
		t.Errorf("%d accounts worked, want %d", got, want)
	}
	several := 0
	for _, n := range sessionsOf {
		if n >= 3 {
			several++
		}
	}
	if several < len(sessionsOf)/3 {
		t.Errorf("only %d of %d users have 3 sessions or more", several, len(sessionsOf))
	}
	// The i.i.d. trace's sessions still carry no one.
	old, err := costsim.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if old.Sessions[0].User != "" {
		t.Errorf("Generate's session has user %q", old.Sessions[0].User)
	}
}

func TestClockworkUsersReturnOnTheirPeriod(t *testing.T) {
	cfg := costsim.DefaultConfig()
	p := costsim.DefaultPeople()
	for i := range p.Behaviours {
		if p.Behaviours[i].Name != "clockwork" {
			p.Behaviours[i].Share = 0
		}
	}
	p.ContinueShare = 0
	tr := MustPeople(t, cfg, p)
	for _, s := range tr.Sessions {
		for j := 2; j < len(s.Bursts); j++ {
			a := s.Bursts[j-1].Start - s.Bursts[j-2].End
			b := s.Bursts[j].Start - s.Bursts[j-1].End
			if r := float64(b) / float64(a); r < 0.7 || r > 1.4 {
				t.Fatalf("user %s: gaps %v then %v, not one period", s.User, a, b)
			}
		}
	}
}

func TestNeverReturnersHaveOneSession(t *testing.T) {
	cfg := costsim.DefaultConfig()
	p := costsim.DefaultPeople()
	for i := range p.Behaviours {
		if p.Behaviours[i].Name != "never" {
			p.Behaviours[i].Share = 0
		}
	}
	tr := MustPeople(t, cfg, p)
	seen := map[string]bool{}
	for _, s := range tr.Sessions {
		if seen[s.User] {
			t.Fatalf("never-returner %s has two sessions", s.User)
		}
		seen[s.User] = true
	}
	if len(seen) != p.Users {
		t.Errorf("%d never-returners worked, want %d", len(seen), p.Users)
	}
}

func TestAgentTurnsHaveALongTail(t *testing.T) {
	cfg := costsim.DefaultConfig()
	p := costsim.DefaultPeople()
	for i := range p.Behaviours {
		if p.Behaviours[i].Name != "agent" {
			p.Behaviours[i].Share = 0
		}
	}
	tr := MustPeople(t, cfg, p)
	var turns []time.Duration
	long := 0
	for _, s := range tr.Sessions {
		for _, b := range s.Bursts {
			turns = append(turns, b.End-b.Start)
			if b.End-b.Start > 45*time.Minute {
				long++
			}
		}
	}
	below := 0
	for _, d := range turns {
		if d < 45*time.Second {
			below++
		}
	}
	if share := float64(below) / float64(len(turns)); share < 0.4 || share > 0.6 {
		t.Errorf("%.2f of turns are under 45 s, want about half (median 45 s)", share)
	}
	if long == 0 {
		t.Errorf("no turn of %d lasts past 45 min", len(turns))
	}
}

func TestInvalidPeople(t *testing.T) {
	cfg := costsim.DefaultConfig()
	p := costsim.DefaultPeople()
	p.Accounts = 0
	if _, err := costsim.GeneratePeople(cfg, p); err == nil {
		t.Error("no accounts: want an error")
	}
	p = costsim.DefaultPeople()
	p.Behaviours[0].LeaveProbability = 0
	if _, err := costsim.GeneratePeople(cfg, p); err == nil {
		t.Error("leave probability 0: want an error")
	}
}
