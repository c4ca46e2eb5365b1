package providerhook_test

import (
	"slices"
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/e2bhook"
	"github.com/sandmanhq/sandman/internal/provider/registry"
	"github.com/sandmanhq/sandman/internal/providerhook"
)

// TestFormats: the enabled providers' declarations pick the formats, one per
// format in enabled order, the E2B format stamped with the first provider
// that speaks it; a provider that sends none adds no route.
func TestFormats(t *testing.T) {
	daytonaHook := &registry.Webhook{Format: providerhook.DaytonaName}
	adapters := registry.Set{
		{Name: "e2b", Webhook: &e2bhook.Webhook},
		{Name: "local", Webhook: &e2bhook.Webhook},
		{Name: "daytona", Webhook: daytonaHook},
		{Name: "vercel"},
		{Name: "odd", Webhook: &registry.Webhook{Format: "odd"}},
	}
	secrets := map[string]string{"e2b": "e2b-secret", "local": "local-secret", "daytona": DaytonaTestSecret}
	clock := lifecycle.SystemClock{}
	for _, tc := range []struct {
		name      string
		enabled   []string
		wantNames []string
		wantE2B   string // the provider E2B-format events are stamped with
		wantErr   bool
	}{
		{"SharedFormatStampsTheFirst", []string{"local", "e2b", "daytona", "vercel"}, []string{"e2b", "daytona"}, "local", false},
		{"E2BAlone", []string{"vercel", "e2b"}, []string{"e2b"}, "e2b", false},
		{"NoneSendsWebhooks", []string{"vercel"}, nil, "", false},
		{"UnknownProviderAddsNothing", []string{"nope", "daytona"}, []string{"daytona"}, "", false},
		{"ErrUnknownFormat", []string{"e2b", "odd"}, nil, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			formats, err := providerhook.Formats(tc.enabled, adapters, secrets, clock)
			if got, want := err != nil, tc.wantErr; got != want {
				t.Fatalf("Formats: err = %v, want an error: %v", err, want)
			}
			var names []string
			stamped := ""
			for _, f := range formats {
				names = append(names, f.Name())
				if e, ok := f.(*providerhook.E2B); ok {
					stamped = e.Provider()
				}
			}
			if !slices.Equal(names, tc.wantNames) {
				t.Errorf("format names = %q, want %q", names, tc.wantNames)
			}
			if got, want := stamped, tc.wantE2B; got != want {
				t.Errorf("E2B format stamps %q, want %q", got, want)
			}
		})
	}
	t.Run("ErrEmptySecret", func(t *testing.T) {
		if _, err := providerhook.Formats([]string{"e2b"}, adapters, map[string]string{}, clock); err == nil {
			t.Fatal("Formats with no E2B secret: err = nil, want an error")
		}
	})
}
