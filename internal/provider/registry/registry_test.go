package registry_test

import (
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/calllimit"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/registry"
)

// TestReadCalls: the adapter's budget by default, the variable's rate
// (one second deep) when set, no limit for "0" or "off", and an error
// naming the variable for anything else.
func TestReadCalls(t *testing.T) {
	a := registry.Adapter{Name: "p", Calls: calllimit.Limit{PerSecond: 50, Burst: 7}, CallsEnv: "SANDMAN_P_CALLS_PER_SECOND"}
	for _, tc := range []struct {
		value string
		want  calllimit.Limit
		err   bool
	}{
		{"", calllimit.Limit{PerSecond: 50, Burst: 7}, false},
		{" 12.5 ", calllimit.Limit{PerSecond: 12.5}, false},
		{"0", calllimit.Limit{}, false},
		{"OFF", calllimit.Limit{}, false},
		{"-3", calllimit.Limit{}, true},
		{"fast", calllimit.Limit{}, true},
	} {
		got, err := registry.ReadCalls(a, func(string) string { return tc.value })
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%q: %+v, %v; want %+v, error %v", tc.value, got, err, tc.want, tc.err)
		}
		if err != nil && !strings.Contains(err.Error(), a.CallsEnv) {
			t.Errorf("%q: error %q does not name %s", tc.value, err, a.CallsEnv)
		}
	}
	if got, _ := registry.ReadCalls(registry.Adapter{}, func(string) string { return "9" }); !got.Off() {
		t.Errorf("an adapter without a budget variable got %v", got)
	}
}

// TestAdapterVars: an adapter's variables are its settings, its budget's
// and both variables of each secret.
func TestAdapterVars(t *testing.T) {
	a := registry.Adapter{Env: []string{"S1"}, CallsEnv: "C", Key: &registry.Secret{Env: "K", SecretEnv: "KS"},
		Webhook: &registry.Webhook{Secret: registry.Secret{Env: "W", SecretEnv: "WS"}}}
	if got := strings.Join(a.Vars(), ","); got != "S1,C,K,KS,W,WS" {
		t.Errorf("Vars = %s", got)
	}
	set := registry.Set{{Name: "a", Deployable: true, Price: lifecycle.Price{RunningPerHour: 1}}, {Name: "b"}}
	if d := set.Deployable(); len(d) != 1 || d[0].Name != "a" || len(set) != 2 {
		t.Errorf("Deployable = %v (set %v)", d.Names(), set.Names())
	}
	if _, ok := set.Find("b"); !ok {
		t.Error("Find(b) found nothing")
	}
	if p := set.Prices(); p["a"].RunningPerHour != 1 || len(p) != 2 {
		t.Errorf("Prices = %v", p)
	}
}
