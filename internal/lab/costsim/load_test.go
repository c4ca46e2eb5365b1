package costsim_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lab/costsim"
)

func TestLoadTraceCSV(t *testing.T) {
	// Wednesday 2026-01-07: the epoch is Monday 2026-01-05.
	csv := "session,user,account,time,kind\n" +
		"s1,ada,acme,2026-01-07T09:00:00Z,request\n" +
		"s1,ada,acme,2026-01-07T09:00:30Z,request\n" +
		"s1,ada,acme,2026-01-07T09:01:00Z,turn_start\n" +
		"s1,ada,acme,2026-01-07T09:03:10Z,turn_end\n" +
		"s1,ada,acme,2026-01-07T09:20:00Z,request\n" +
		"s2,bob,acme,1767776400,request\n" // 2026-01-07T09:00:00Z
	lt, err := costsim.LoadTrace(strings.NewReader(csv), costsim.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := lt.Epoch, time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("epoch = %v, want %v", got, want)
	}
	if got, want := len(lt.Trace.Sessions), 2; got != want {
		t.Fatalf("%d sessions, want %d", got, want)
	}
	s1 := lt.Trace.Sessions[0]
	day := 2*24*time.Hour + 9*time.Hour
	wantBursts := []costsim.Burst{{Start: day, End: day + 3*time.Minute + 10*time.Second},
		{Start: day + 20*time.Minute, End: day + 20*time.Minute}}
	if got := s1.Bursts; len(got) != 2 || got[0] != wantBursts[0] || got[1] != wantBursts[1] {
		t.Fatalf("bursts = %v, want %v", got, wantBursts)
	}
	// The requests, the turn's bounds and a hold renewal every 30 s in it.
	if got, want := len(s1.Heartbeats), 2+1+5+1; got != want {
		t.Errorf("%d heartbeats, want %d: %v", got, want, s1.Heartbeats)
	}
	if s1.User != "ada" || s1.Account != "acme" {
		t.Errorf("user, account = %q, %q", s1.User, s1.Account)
	}
	if got, want := lt.Trace.Sessions[1].Bursts[0].Start, day; got != want {
		t.Errorf("Unix seconds: start %v, want %v", got, want)
	}
}

func TestLoadTraceJSONLines(t *testing.T) {
	jl := `{"session":"s1","user":"ada","account":"acme","time":"2026-01-05T10:00:00Z","kind":"request"}

{"session":"s1","user":"ada","account":"acme","time":"2026-01-05T10:30:00Z","kind":"request"}
`
	lt, err := costsim.LoadTrace(strings.NewReader(jl), costsim.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(lt.Trace.Sessions[0].Bursts), 2; got != want {
		t.Fatalf("%d bursts, want %d", got, want)
	}
	cfg := costsim.DefaultConfig()
	cfg.Epoch = lt.Epoch
	cfg.Scenarios = []costsim.Scenario{{Name: "sandman + timers", Policy: costsim.SandmanTimers}}
	r := MustReplay(t, cfg, lt.Trace)
	if got, want := r.Results[0].Resumes, 1; got != want {
		t.Errorf("a 30 min gap under a 10 min idle timeout: %d resumes, want %d", got, want)
	}
}

func TestLoadTraceErrors(t *testing.T) {
	for name, in := range map[string]string{
		"Empty":        "session,time,kind\n",
		"NoKindColumn": "session,time\ns1,2026-01-05T10:00:00Z\n",
		"BadKind":      "session,time,kind\ns1,2026-01-05T10:00:00Z,poke\n",
		"BadTime":      "session,time,kind\ns1,yesterday,request\n",
		"TurnEndAlone": "session,time,kind\ns1,2026-01-05T10:00:00Z,turn_end\n",
		"TurnOpen":     "session,time,kind\ns1,2026-01-05T10:00:00Z,turn_start\n",
		"BadJSON":      `{"session":"s1","time":"2026-01-05T10:00:00Z","kind":"request","extra":1}` + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := costsim.LoadTrace(strings.NewReader(in), costsim.LoadOptions{}); err == nil {
				t.Fatal("want an error")
			}
		})
	}
}
