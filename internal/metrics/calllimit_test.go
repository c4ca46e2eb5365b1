package metrics_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/metrics"
)

// TestCallLimiterSeries: the call limiter's reports become ProviderCalls
// and ProviderCallsRefused counts and ProviderCallWait seconds per provider
// and class, published with and without Function; a call that went at
// once counts but records no wait.
func TestCallLimiterSeries(t *testing.T) {
	e, b := newEmitter("sessions")
	e.CallGranted("e2b", lifecycle.PriorityUser, 0)
	e.CallGranted("e2b", lifecycle.PriorityUser, 0)
	e.CallGranted("e2b", lifecycle.PriorityRefresh, 1500*time.Millisecond)
	e.CallGranted("e2b", lifecycle.PriorityRefresh, 500*time.Millisecond)
	e.CallRefused("e2b", lifecycle.PriorityRefresh)
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	type key struct{ name, provider, class string }
	sums, counts := map[key]float64{}, map[key]int{}
	for _, d := range mustLines(t, b) {
		for _, name := range []string{metrics.ProviderCalls, metrics.ProviderCallsRefused, metrics.ProviderCallWait} {
			v, n := d.value(t, name)
			if n == 0 {
				continue
			}
			k := key{name, d.str(metrics.DimProvider), d.str(metrics.DimClass)}
			sums[k] += v
			counts[k] += n
			unit, dims := d.def(name)
			if want := map[string]string{metrics.ProviderCallWait: "Seconds"}[name]; unit != want && !(want == "" && unit == "Count") {
				t.Errorf("%s unit %q", name, unit)
			}
			if !slices.EqualFunc(dims, [][]string{{"Function", "Class", "Provider"}, {"Class", "Provider"}}, slices.Equal) {
				t.Errorf("%s dimension sets %v, want [[Function Class Provider] [Class Provider]]", name, dims)
			}
		}
	}
	want := map[key]float64{
		{metrics.ProviderCalls, "e2b", "user"}:           2,
		{metrics.ProviderCalls, "e2b", "refresh"}:        2,
		{metrics.ProviderCallsRefused, "e2b", "refresh"}: 1,
		{metrics.ProviderCallWait, "e2b", "refresh"}:     2,
	}
	if len(sums) != len(want) {
		t.Errorf("series %v, want %v", sums, want)
	}
	for k, v := range want {
		if sums[k] != v {
			t.Errorf("%v = %v, want %v (all: %v)", k, sums[k], v, sums)
		}
	}
	if n := counts[key{metrics.ProviderCallWait, "e2b", "refresh"}]; n != 2 {
		t.Errorf("ProviderCallWait holds %d values, want one per call that waited (2)", n)
	}
}
