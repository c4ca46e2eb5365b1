package app_test

import (
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// TestConfigReadsPools: SANDMAN_POOLS is parsed at boot against the
// enabled providers and the templates' default apps, so a pool's id is the
// one a create of the same template resolves to; a bad pool stops the boot
// with the variable named.
func TestConfigReadsPools(t *testing.T) {
	read := func(vars map[string]string) (app.Config, error) {
		vars[app.EnvTable] = "sandman-test"
		vars[app.EnvProvider] = "local"
		return app.ConfigFromEnv(env(vars))
	}
	c, err := read(map[string]string{
		app.EnvTemplateApps: `{"web":{"port":3000,"start_command":"npm run dev"}}`,
		app.EnvPools:        `[{"template":"web","size":2}]`,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Pools) != 1 {
		t.Fatalf("pools = %v, want one", c.Pools)
	}
	p := c.Pools[0]
	spec, _ := lifecycle.ResolveApp(c.TemplateApps["web"], nil)
	if p.Provider != "local" || p.Size != 2 || p.Tier != lifecycle.TierPaused || p.ID != lifecycle.PoolID("local", "web", spec) {
		t.Errorf("pool = %+v, want the local web pool with the template's app", p)
	}
	for name, raw := range map[string]string{
		"NotJSON":     `nope`,
		"ProviderOff": `[{"provider":"e2b","template":"web","size":1}]`,
		"BadTier":     `[{"template":"web","size":1,"tier":"hot"}]`,
	} {
		if _, err := read(map[string]string{app.EnvPools: raw}); err == nil || !strings.Contains(err.Error(), app.EnvPools) {
			t.Errorf("%s: error %v, want one naming %s", name, err, app.EnvPools)
		}
	}
}
