package bench

import (
	"strings"
	"testing"
)

// TestRunOpenOnFakes runs the open figure on two fake models with short
// delays and checks what it reports happened: every round ends at the
// app's answer no sooner than the provider allows, and the open answers the
// browser before the provider's resume is done (the resume runs in the
// background).
func TestRunOpenOnFakes(t *testing.T) {
	env := &Env{}
	const rounds = 3
	fakes := []ReadinessProfile{
		{Name: "keeps", ResumeMS: 150, BootMS: 100, Keeps: true},
		{Name: "cold", ResumeMS: 150, BootMS: 100},
	}
	res, err := RunOpen(t.Context(), env, OpenConfig{Rounds: rounds, Fakes: fakes, NoLocal: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Profiles) != len(fakes) {
		t.Fatalf("%d rows, want %d", len(res.Profiles), len(fakes))
	}
	for _, p := range res.Profiles {
		t.Run(p.Name, func(t *testing.T) {
			if p.Failed != 0 || p.FirstByte.N != rounds {
				t.Errorf("failed %d, samples %d; want 0 and %d", p.Failed, p.FirstByte.N, rounds)
			}
			if min := p.FirstByte.P50MS; min < p.FloorMS {
				t.Errorf("first byte p50 %.0f ms under the floor %.0f ms", min, p.FloorMS)
			}
			if p.Answer.MaxMS >= p.ResumeMS {
				t.Errorf("the open answered after %.0f ms, not before the provider's %.0f ms resume", p.Answer.MaxMS, p.ResumeMS)
			}
		})
	}
	var b strings.Builder
	(&Report{}).openSection(&b, &res)
	if !strings.Contains(b.String(), "| cold | 250 |") {
		t.Errorf("the section lacks the cold row with its floor:\n%s", b.String())
	}
}
