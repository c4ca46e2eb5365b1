package provider_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/provider"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/provider/local"
	"github.com/sandmanhq/sandman/internal/provider/registry"
)

// registered are every adapter Sandman links somewhere: the Lambda
// functions' and the local stack's own two.
func registered() registry.Set {
	return append(provider.Lambda(), local.Adapter, fake.Adapter)
}

// readDoc reads a file of docs/ at the module root.
func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", name))
	if err != nil {
		t.Fatalf("docs/%s: %v", name, err)
	}
	return string(b)
}

// TestEveryProviderIsDocumented: every registered adapter's variables and
// secret context keys have their row in docs/CONFIGURATION.md, and every
// adapter but the in-memory fake (a test double) has its facts page
// docs/providers/<name>.md naming its variables, so adding a provider
// without its documentation fails here.
func TestEveryProviderIsDocumented(t *testing.T) {
	config := readDoc(t, "CONFIGURATION.md")
	for _, a := range registered() {
		if a.Name == "" || a.Read == nil || a.New == nil {
			t.Errorf("adapter %q lacks its name, Read or New", a.Name)
		}
		for _, v := range a.Vars() {
			if !strings.Contains(config, "`"+v+"`") {
				t.Errorf("%s: docs/CONFIGURATION.md has no row for %s", a.Name, v)
			}
		}
		for _, s := range a.Secrets() {
			if a.Deployable && !strings.Contains(config, "`"+s.ContextKey+"`") {
				t.Errorf("%s: docs/CONFIGURATION.md has no row for the context key %s", a.Name, s.ContextKey)
			}
		}
		if a.Name == fake.DefaultName {
			continue
		}
		page := readDoc(t, filepath.Join("providers", a.Name+".md"))
		for _, v := range a.Env {
			if !strings.Contains(page, v) {
				t.Errorf("%s: docs/providers/%s.md does not name its setting %s", a.Name, a.Name, v)
			}
		}
	}
}

// TestAdaptersAreConsistent: names are unique; a deployable adapter has
// a call budget its variable overrides and secrets the stack can name;
// no two secrets share a construct id or context key unless they are one
// secret (the E2B webhook format's, shared).
func TestAdaptersAreConsistent(t *testing.T) {
	names := map[string]bool{}
	bySecretEnv := map[string]registry.Secret{}
	for _, a := range registered() {
		if names[a.Name] {
			t.Errorf("two adapters are named %s", a.Name)
		}
		names[a.Name] = true
		if a.Deployable && (a.Calls.Off() || a.CallsEnv == "") {
			t.Errorf("%s: a deployable adapter needs a call budget and its variable", a.Name)
		}
		for _, s := range a.Secrets() {
			if s.Env == "" || s.SecretEnv == "" || s.DefaultName == "" || s.ContextKey == "" || s.ConstructID == "" || s.What == "" {
				t.Errorf("%s: secret %+v lacks a field", a.Name, s)
			}
			if prev, ok := bySecretEnv[s.SecretEnv]; ok && prev != s {
				t.Errorf("%s: two secrets named by %s", a.Name, s.SecretEnv)
			}
			bySecretEnv[s.SecretEnv] = s
		}
	}
	ids, keys := map[string]string{}, map[string]string{}
	for env, s := range bySecretEnv {
		if other, ok := ids[s.ConstructID]; ok {
			t.Errorf("%s and %s share the construct id %s", env, other, s.ConstructID)
		}
		if other, ok := keys[s.ContextKey]; ok {
			t.Errorf("%s and %s share the context key %s", env, other, s.ContextKey)
		}
		ids[s.ConstructID], keys[s.ContextKey] = env, env
	}
}
