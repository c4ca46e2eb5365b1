package archive

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

func TestKey(t *testing.T) {
	got, err := Key("acct_1", "ses_abc", "chk_0123")
	if want := "acct_1/ses_abc/chk_0123.tar.zst"; err != nil || got != want {
		t.Errorf("Key = %q, %v; want %q", got, err, want)
	}
	for _, parts := range [][3]string{
		{"", "s", "c"}, {"a", "s/t", "c"}, {"a", "..", "c"}, {"a", "s", ".hidden"}, {"a b", "s", "c"},
	} {
		if _, err := Key(parts[0], parts[1], parts[2]); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Key%q = %v, want ErrInvalidKey", parts, err)
		}
	}
}

func TestValidateKey(t *testing.T) {
	for _, k := range []string{"a", "a/b/c.tar.zst", "A-1/b_2/c.3"} {
		if err := ValidateKey(k); err != nil {
			t.Errorf("ValidateKey(%q) = %v, want nil", k, err)
		}
	}
	for _, k := range []string{"", "/a", "a/", "a//b", "a/../b", "a/./b", ".tmp-x", "a/.b", "a\\b", "a b", strings.Repeat("k", MaxKeyLength+1)} {
		if err := ValidateKey(k); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ValidateKey(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
}

// TestKeyIsTheCheckpointsArchiveKey: the key the checkpoint service asks
// for (lifecycle.ArchiveKey) is Key's.
func TestKeyIsTheCheckpointsArchiveKey(t *testing.T) {
	chk := lifecycle.NewCheckpointID(time.Now())
	k, err := Key("acct_1", "ses_abc", chk)
	if err != nil || k != lifecycle.ArchiveKey("acct_1", "ses_abc", chk) {
		t.Errorf("Key = %q, %v; lifecycle.ArchiveKey = %q", k, err, lifecycle.ArchiveKey("acct_1", "ses_abc", chk))
	}
}
