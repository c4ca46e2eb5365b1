package cli_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/cli"
)

// TestGetTableShowsEveryField: the table `sandman sessions get` prints has
// a row for every field of the API's session (durations without their
// _seconds suffix; a deprecated field under the name that replaces it), so
// a field the API adds cannot be silently left out.
func TestGetTableShowsEveryField(t *testing.T) {
	t.Parallel()
	a := MustAPI(t)
	s := mustJSON[cli.Session](t, a.url, apigw.DevAPIKey, "create", "--template", "base")
	code, out, errOut := run(t, a.url, apigw.DevAPIKey, "get", s.ID)
	if code != 0 {
		t.Fatalf("get: exit %d, stderr %s", code, errOut)
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = true
		}
	}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[cli.Session]()) {
		if f.Anonymous {
			continue // its fields are visited too
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if next := f.Tag.Get("deprecated"); next != "" {
			name = next // a deprecated field is shown under the name that replaces it
		}
		name = strings.TrimSuffix(name, "_seconds")
		if !rows[name] {
			t.Errorf("get's table has no row %q:\n%s", name, out)
		}
	}
}
