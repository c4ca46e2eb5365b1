package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/linkpage"
)

// TestConfigRefusesLeaseShorterThanRequest: a lease the sweep could take
// back while a request still holds it (20 s against a 29 s request) is
// refused at start with an error naming the variable and the least lease
// accepted; the least lease itself is accepted, and a longer provider call
// timeout raises it.
func TestConfigRefusesLeaseShorterThanRequest(t *testing.T) {
	read := func(vars map[string]string) (app.Config, error) {
		vars[app.EnvTable] = "sandman-test"
		return app.ConfigFromEnv(env(vars))
	}
	least := lifecycle.MinLeaseDuration(0)
	if least <= lifecycle.MaxRequestDuration {
		t.Fatalf("MinLeaseDuration(0) = %v, want more than a request's %v", least, lifecycle.MaxRequestDuration)
	}
	_, err := read(map[string]string{app.EnvLeaseDuration: "20s"})
	if err == nil || !strings.Contains(err.Error(), app.EnvLeaseDuration) || !strings.Contains(err.Error(), least.String()) {
		t.Errorf("lease 20s: error %v, want one naming %s and %v", err, app.EnvLeaseDuration, least)
	}
	c, err := read(map[string]string{app.EnvLeaseDuration: least.String()})
	if err != nil || c.Policy.LeaseDuration != least {
		t.Errorf("lease %v: %+v, %v; want it accepted", least, c.Policy.LeaseDuration, err)
	}
	// A 2 min provider call holds a sweep's lease 2 min plus the settle write.
	_, err = read(map[string]string{app.EnvLeaseDuration: least.String(), app.EnvProviderCallTimeout: "2m"})
	if err == nil {
		t.Errorf("lease %v with a 2m provider call timeout accepted, want refused (least %v)", least, lifecycle.MinLeaseDuration(2*time.Minute))
	}
	if _, err := read(map[string]string{}); err != nil {
		t.Errorf("the default lease (%v): %v", lifecycle.DefaultPolicy().LeaseDuration, err)
	}
}

// TestConfigReadsTheBrand: the stable link's pages take the deployment's
// name, accent and logo from SANDMAN_BRAND_*; a bad value is refused at
// start with an error naming its variable.
func TestConfigReadsTheBrand(t *testing.T) {
	read := func(vars map[string]string) (app.Config, error) {
		vars[app.EnvTable] = "sandman-test"
		return app.ConfigFromEnv(env(vars))
	}
	c, err := read(map[string]string{app.EnvBrandName: "Acme", app.EnvBrandAccent: "#0F766E", app.EnvBrandLogoURL: "https://acme.test/l.svg"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (linkpage.Brand{Name: "Acme", Accent: "#0f766e", LogoURL: "https://acme.test/l.svg"}); c.Brand != want {
		t.Errorf("Brand = %+v, want %+v", c.Brand, want)
	}
	if c, err := read(map[string]string{}); err != nil || c.Brand != (linkpage.Brand{}) {
		t.Errorf("no brand set: %+v, %v; want the default look", c.Brand, err)
	}
	for name, value := range map[string]string{app.EnvBrandName: strings.Repeat("x", 61), app.EnvBrandAccent: "teal", app.EnvBrandLogoURL: "/logo.svg"} {
		if _, err := read(map[string]string{name: value}); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%q: error %v, want one naming %s", name, value, err, name)
		}
	}
}

// TestConfigReadsTheTiers: SANDMAN_ARCHIVE_AFTER and SANDMAN_DELETE_AFTER
// are Go durations, 0 or off for never, unset for the next level; a bad
// value is refused naming its variable.
func TestConfigReadsTheTiers(t *testing.T) {
	read := func(vars map[string]string) (app.Config, error) {
		vars[app.EnvTable] = "sandman-test"
		return app.ConfigFromEnv(env(vars))
	}
	c, err := read(map[string]string{app.EnvArchiveAfter: "240h", app.EnvDeleteAfter: "off"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Tiers.ArchiveAfter == nil || *c.Tiers.ArchiveAfter != 240*time.Hour || c.Tiers.DeleteAfter == nil || *c.Tiers.DeleteAfter != 0 {
		t.Errorf("Tiers = %v/%v, want 240h/never", c.Tiers.ArchiveAfter, c.Tiers.DeleteAfter)
	}
	if c, err := read(map[string]string{}); err != nil || c.Tiers.ArchiveAfter != nil || c.Tiers.DeleteAfter != nil {
		t.Errorf("unset: %+v, %v; want nothing set", c.Tiers, err)
	}
	for name, value := range map[string]string{app.EnvArchiveAfter: "30d", app.EnvDeleteAfter: "1s"} {
		if _, err := read(map[string]string{name: value}); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%q: error %v, want one naming %s", name, value, err, name)
		}
	}
}
