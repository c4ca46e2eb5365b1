package infra

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/sandmanhq/sandman/internal/envnames"
)

// TestTheBrandReachesThePageServers: SandmanStackProps' brand reaches the
// functions that serve the stable link's pages (pageServers) as
// SANDMAN_BRAND_*, and no other; the default stack sets none.
func TestTheBrandReachesThePageServers(t *testing.T) {
	s := optionsStack(t)
	names := []string{envnames.BrandName, envnames.BrandAccent, envnames.BrandLogoURL}
	for _, spec := range functionSpecs {
		fn := s.resource(t, s.functionID(t, spec.name), "AWS::Lambda::Function")
		vars, _ := prop(fn, "Environment").(map[string]any)["Variables"].(map[string]any)
		for i, name := range names {
			got, ok := vars[name]
			if slices.Contains(pageServers, spec.name) && got != optionsBrand[i] {
				t.Errorf("%s: %s = %v, want %q", spec.name, name, got, optionsBrand[i])
			}
			if !slices.Contains(pageServers, spec.name) && ok {
				t.Errorf("%s serves no page but gets %s", spec.name, name)
			}
		}
	}
	for id, fn := range MustDefaultStack(t).ofType("AWS::Lambda::Function") {
		vars, _ := prop(fn, "Environment").(map[string]any)["Variables"].(map[string]any)
		for _, name := range names {
			if v, ok := vars[name]; ok {
				t.Errorf("default stack: %s sets %s = %v, want it unset", id, name, v)
			}
		}
	}
}

// TestBrandFromContext: sandman:brandName, sandman:brandAccent and
// sandman:brandLogoUrl are read as strings, and a value the pages would
// refuse fails synthesis naming its key.
func TestBrandFromContext(t *testing.T) {
	newApp := func(t *testing.T, ctx map[string]any) awscdk.App {
		return awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(t.TempDir())})
	}
	_, props, err := PropsFromContext(newApp(t, map[string]any{ContextBrandName: "Acme", ContextBrandAccent: "#abc",
		ContextBrandLogoURL: "https://acme.test/l.png"}))
	if err != nil || props.BrandName != "Acme" || props.BrandAccent != "#abc" || props.BrandLogoURL != "https://acme.test/l.png" {
		t.Fatalf("PropsFromContext = %+v, %v", props, err)
	}
	for key, bad := range map[string]string{ContextBrandName: strings.Repeat("x", 61), ContextBrandAccent: "teal", ContextBrandLogoURL: "logo.png"} {
		p := SandmanStackProps{}
		switch key {
		case ContextBrandName:
			p.BrandName = bad
		case ContextBrandAccent:
			p.BrandAccent = bad
		case ContextBrandLogoURL:
			p.BrandLogoURL = bad
		}
		if _, err := brand(p); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%q: %v, want an error naming %s", key, bad, err, key)
		}
	}
}
