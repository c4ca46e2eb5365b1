package infra

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/routes"
)

// TestStackRefusesLeaseShorterThanRequest: a lease in the provider settings
// shorter than a request (20 s against 29 s) fails synthesis with an error
// naming the variable; the default and a long enough lease pass.
func TestStackRefusesLeaseShorterThanRequest(t *testing.T) {
	least := lifecycle.MinLeaseDuration(0)
	for _, tc := range []struct {
		settings map[string]string
		refused  bool
	}{
		{settings: nil},
		{settings: map[string]string{envnames.LeaseDuration: least.String()}},
		{settings: map[string]string{envnames.LeaseDuration: "20s"}, refused: true},
		{settings: map[string]string{envnames.LeaseDuration: least.String(), envnames.ProviderCallTimeout: "2m"}, refused: true},
		{settings: map[string]string{envnames.LeaseDuration: "soon"}, refused: true},
	} {
		err := checkLease(tc.settings)
		if (err != nil) != tc.refused {
			t.Errorf("settings %v: %v, want refused %v", tc.settings, err, tc.refused)
		}
		if err != nil && !strings.Contains(err.Error(), envnames.LeaseDuration) {
			t.Errorf("settings %v: error %q does not name %s", tc.settings, err, envnames.LeaseDuration)
		}
	}

	s := MustSynth(t, &SandmanStackProps{ProviderSettings: map[string]string{envnames.LeaseDuration: "20s"}})
	found := mustAnnotations(t, assertions.Annotations_FromStack(s.stack).FindError(jsii.String("*"),
		assertions.Match_StringLikeRegexp(jsii.String(".*"+envnames.LeaseDuration+".*"))))
	if len(found) == 0 {
		t.Errorf("a stack with %s=20s synthesized without an error annotation", envnames.LeaseDuration)
	}
}

// TestRequestFunctionsFitTheLease: every function that answers a request
// (HTTP or WebSocket) stops within lifecycle.MaxRequestDuration, the
// request the least lease is measured against.
func TestRequestFunctionsFitTheLease(t *testing.T) {
	requests := []string{routes.Sessions, routes.Status, routes.Resume, routes.Pause, routes.Reconnect, routes.Webhook, routes.Channel}
	for _, spec := range functionSpecs {
		for _, name := range requests {
			if spec.name == name && spec.timeout > lifecycle.MaxRequestDuration {
				t.Errorf("%s: timeout %v, longer than a request's %v", spec.name, spec.timeout, lifecycle.MaxRequestDuration)
			}
		}
	}
}
