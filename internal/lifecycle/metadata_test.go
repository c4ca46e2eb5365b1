package lifecycle_test

import (
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// TestReservedMetadataPrefixFoldsCase: keys starting with the reserved
// prefix are refused in any letter case, compared by Unicode case folding:
// "ſ" (U+017F, long s) folds to "s", so "ſandman_x" is the reserved prefix
// too, while a key that only resembles it is accepted.
func TestReservedMetadataPrefixFoldsCase(t *testing.T) {
	e := newEnv(t)
	for _, key := range []string{"sandman_x", "SANDMAN_X", "ſandman_x", "Sandman_", "ſANDMAN_session_id"} {
		_, _, err := e.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base", Metadata: map[string]string{key: "1"}})
		if !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
			t.Errorf("metadata key %q: err %v, want invalid (reserved)", key, err)
		}
	}
	for _, key := range []string{"sandman", "sandmanx", "xsandman_", "ſandman"} {
		if _, _, err := e.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base", Metadata: map[string]string{key: "1"}}); err != nil {
			t.Errorf("metadata key %q: %v, want accepted", key, err)
		}
	}
}
