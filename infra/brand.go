package infra

import (
	"errors"
	"fmt"

	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/linkpage"
	"github.com/sandmanhq/sandman/internal/routes"
)

// pageServers are the functions that answer a browser with the stable
// link's pages (internal/linkpage): only they get the brand's variables.
var pageServers = []string{routes.Resume}

// brand checks the brand the props name (linkpage.ParseBrand). Errors name
// the context key of the part refused.
func brand(p SandmanStackProps) (linkpage.Brand, error) {
	b, err := linkpage.ParseBrand(p.BrandName, p.BrandAccent, p.BrandLogoURL)
	var be *linkpage.BrandError
	if errors.As(err, &be) {
		key := map[string]string{linkpage.PartName: ContextBrandName, linkpage.PartAccent: ContextBrandAccent,
			linkpage.PartLogoURL: ContextBrandLogoURL}[be.Part]
		return linkpage.Brand{}, fmt.Errorf("context %s: %s", key, be.Reason)
	}
	return b, err
}

// brandEnv returns the brand's variables as the page servers get them:
// only those set (a valid brand; an invalid one fails synthesis).
func brandEnv(p SandmanStackProps) map[string]string {
	b, err := brand(p)
	if err != nil {
		return nil
	}
	env := map[string]string{}
	for k, v := range map[string]string{envnames.BrandName: b.Name, envnames.BrandAccent: b.Accent, envnames.BrandLogoURL: b.LogoURL} {
		if v != "" {
			env[k] = v
		}
	}
	return env
}
