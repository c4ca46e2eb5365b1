package clienttoken

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

func newClock() *lifecycle.ManualClock {
	return lifecycle.NewManualClock(time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC))
}

func key(id string, fill byte) Key {
	return Key{ID: id, Secret: bytes.Repeat([]byte{fill}, MinSecretLen)}
}

// MustTokens returns a Tokens for set and clock, failing the test on error.
func MustTokens(tb testing.TB, set KeySet, clock lifecycle.Clock) *Tokens {
	tb.Helper()
	tk, err := New(set, clock)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return tk
}

func TestMintVerifyRoundTrip(t *testing.T) {
	clock := newClock()
	tk := MustTokens(t, KeySet{Signing: key("k1", 1)}, clock)
	token, claims, err := tk.Mint("ses_a", "acct_1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := claims.ExpiresAt, clock.Now().Add(DefaultTTL); !got.Equal(want) {
		t.Errorf("ExpiresAt = %v, want %v (default TTL)", got, want)
	}
	got, err := tk.VerifyFor(token, "ses_a")
	if err != nil {
		t.Fatalf("VerifyFor: %v", err)
	}
	if got != claims {
		t.Errorf("claims = %+v, want %+v", got, claims)
	}
	if got.AccountID != "acct_1" || got.KeyID != "k1" {
		t.Errorf("claims = %+v", got)
	}
}

func TestScope(t *testing.T) {
	tk := MustTokens(t, KeySet{Signing: key("k1", 1)}, newClock())
	token, _, err := tk.Mint("ses_a", "acct_1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("OK", func(t *testing.T) {
		if _, err := tk.VerifyFor(token, "ses_a"); err != nil {
			t.Errorf("VerifyFor(ses_a) = %v", err)
		}
	})
	t.Run("ErrWrongSession", func(t *testing.T) {
		for _, other := range []string{"ses_b", "ses_", "ses_aa", "", "SES_A"} {
			if _, err := tk.VerifyFor(token, other); !errors.Is(err, ErrWrongSession) {
				t.Errorf("VerifyFor(%q) = %v, want ErrWrongSession", other, err)
			}
		}
	})
	t.Run("BadTokenIs401First", func(t *testing.T) {
		if _, err := tk.VerifyFor(token+"x", "ses_b"); !errors.Is(err, ErrMalformed) {
			t.Errorf("VerifyFor(bad, other) = %v, want ErrMalformed", err)
		}
	})
}

func TestExpiry(t *testing.T) {
	clock := newClock()
	tk := MustTokens(t, KeySet{Signing: key("k1", 1)}, clock)
	token, _, err := tk.Mint("ses_a", "acct_1", 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(10*time.Minute - time.Nanosecond)
	if _, err := tk.Verify(token); err != nil {
		t.Fatalf("1 ns before expiry: %v", err)
	}
	clock.Advance(time.Nanosecond)
	if _, err := tk.Verify(token); !errors.Is(err, ErrExpired) {
		t.Fatalf("at expiry: %v, want ErrExpired", err)
	}
	clock.Advance(time.Hour)
	if _, err := tk.VerifyFor(token, "ses_a"); !errors.Is(err, ErrExpired) {
		t.Fatalf("after expiry: %v, want ErrExpired", err)
	}
}

func TestMintTTLBounds(t *testing.T) {
	clock := newClock()
	tk := MustTokens(t, KeySet{Signing: key("k1", 1)}, clock)
	_, c, err := tk.Mint("ses_a", "acct_1", MaxTTL)
	if err != nil {
		t.Fatalf("MaxTTL: %v", err)
	}
	if got, want := c.ExpiresAt.Sub(c.IssuedAt), MaxTTL; got != want {
		t.Errorf("lifetime = %v, want %v", got, want)
	}
	for _, ttl := range []time.Duration{MaxTTL + time.Second, -time.Second, time.Millisecond} {
		if _, _, err := tk.Mint("ses_a", "acct_1", ttl); !errors.Is(err, ErrInvalid) {
			t.Errorf("Mint(ttl %v) = %v, want ErrInvalid", ttl, err)
		}
	}
	for _, id := range []string{"", strings.Repeat("x", maxIDLen+1)} {
		if _, _, err := tk.Mint(id, "acct_1", 0); !errors.Is(err, ErrInvalid) {
			t.Errorf("Mint(session %q) = %v, want ErrInvalid", id, err)
		}
		if _, _, err := tk.Mint("ses_a", id, 0); !errors.Is(err, ErrInvalid) {
			t.Errorf("Mint(account %q) = %v, want ErrInvalid", id, err)
		}
	}
}

// TestTamper flips every byte of a valid token in two ways (lowest bit, all
// bits) and checks that no altered token verifies.
func TestTamper(t *testing.T) {
	tk := MustTokens(t, KeySet{Signing: key("k1", 1)}, newClock())
	token, _, err := tk.Mint("ses_a", "acct_1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for i := range len(token) {
		for _, mask := range []byte{0x01, 0x02, 0x20, 0xff} {
			b := []byte(token)
			b[i] ^= mask
			if _, err := tk.Verify(string(b)); err == nil {
				t.Fatalf("byte %d ^ %#x: altered token %q verified", i, mask, b)
			} else if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrBadSignature) {
				t.Fatalf("byte %d ^ %#x: %v, want ErrMalformed or ErrBadSignature", i, mask, err)
			}
		}
	}
	for _, bad := range []string{"", ".", token + ".", "." + token, token[:len(token)-1], token + "A", strings.Replace(token, ".", "..", 1)} {
		if _, err := tk.Verify(bad); err == nil {
			t.Errorf("Verify(%q) accepted", bad)
		}
	}
	// A different secret under the same key id is a bad signature.
	other := MustTokens(t, KeySet{Signing: key("k1", 2)}, newClock())
	if _, err := other.Verify(token); !errors.Is(err, ErrBadSignature) {
		t.Errorf("other secret: %v, want ErrBadSignature", err)
	}
}

func TestRotation(t *testing.T) {
	clock := newClock()
	oldKey, newKey := key("k1", 1), key("k2", 2)
	before := MustTokens(t, KeySet{Signing: oldKey}, clock)
	oldToken, _, err := before.Mint("ses_a", "acct_1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	during := MustTokens(t, KeySet{Signing: newKey, Verifying: []Key{oldKey}}, clock)
	if _, err := during.VerifyFor(oldToken, "ses_a"); err != nil {
		t.Fatalf("old token during rotation: %v", err)
	}
	newToken, c, err := during.Mint("ses_a", "acct_1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.KeyID, "k2"; got != want {
		t.Errorf("signed by %q, want %q", got, want)
	}
	if _, err := before.Verify(newToken); !errors.Is(err, ErrBadSignature) {
		t.Errorf("new token on a deployment without k2: %v, want ErrBadSignature", err)
	}

	after := MustTokens(t, KeySet{Signing: newKey}, clock)
	if _, err := after.Verify(oldToken); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("old token after rotation: %v, want ErrBadSignature", err)
	}
	if _, err := after.Verify(newToken); err != nil {
		t.Fatalf("new token after rotation: %v", err)
	}
}

func TestKeySetValidate(t *testing.T) {
	cases := map[string]KeySet{
		"ShortSecret":    {Signing: Key{ID: "k1", Secret: make([]byte, MinSecretLen-1)}},
		"EmptyID":        {Signing: key("", 1)},
		"RepeatedID":     {Signing: key("k1", 1), Verifying: []Key{key("k1", 2)}},
		"ThreeVerifying": {Signing: key("k1", 1), Verifying: []Key{key("k2", 1), key("k3", 1), key("k4", 1)}},
		"LongID":         {Signing: key(strings.Repeat("k", maxKeyIDLen+1), 1)},
	}
	for name, set := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := New(set, newClock()); !errors.Is(err, ErrInvalid) {
				t.Errorf("New = %v, want ErrInvalid", err)
			}
		})
	}
	t.Run("OK", func(t *testing.T) {
		set := KeySet{Signing: key("k1", 1), Verifying: []Key{key("k2", 1), key("k3", 1)}}
		if err := set.Validate(); err != nil {
			t.Errorf("Validate = %v", err)
		}
	})
}

func TestParseKeySet(t *testing.T) {
	secret := "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=" // 32 bytes of 0x01
	t.Run("OK", func(t *testing.T) {
		set, err := ParseKeySet([]byte(`{"signing_key_id":"k2","keys":[{"id":"k1","secret":"` + secret + `"},{"id":"k2","secret":"` + secret + `"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := set.Signing.ID, "k2"; got != want {
			t.Errorf("signing = %q, want %q", got, want)
		}
		if got, want := len(set.Verifying), 1; got != want || set.Verifying[0].ID != "k1" {
			t.Errorf("verifying = %+v", set.Verifying)
		}
		data, err := MarshalKeySet(set)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseKeySet(data)
		if err != nil {
			t.Fatal(err)
		}
		if again.Signing.ID != "k2" || !bytes.Equal(again.Signing.Secret, set.Signing.Secret) || len(again.Verifying) != 1 {
			t.Errorf("round trip = %+v", again)
		}
	})
	// The stack's generated secret: signing_key_id from the template and a
	// generated 64-character alphanumeric secret (infra: excludePunctuation).
	generated := "Zx8kQ2mN7pR4tV1wY6bD3fH9jL0nP5sU2xA8cE4gI7kM1oQ6rT3vW9yB5dF0hJ2l"
	t.Run("OneKeyForm", func(t *testing.T) {
		set, err := ParseKeySet([]byte(`{"signing_key_id":"k1","secret":"` + generated + `"}`))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := set.Signing.ID, "k1"; got != want {
			t.Errorf("signing = %q, want %q", got, want)
		}
		if got, want := len(set.Signing.Secret), 48; got != want {
			t.Errorf("secret is %d bytes, want %d", got, want)
		}
		if len(set.Verifying) != 0 {
			t.Errorf("verifying = %+v, want none", set.Verifying)
		}
	})
	for name, doc := range map[string]string{
		"SecretAndKeys": `{"signing_key_id":"k1","secret":"` + generated + `","keys":[{"id":"k1","secret":"` + secret + `"}]}`,
		"ShortOneKey":   `{"signing_key_id":"k1","secret":"AQE="}`,
		"OneKeyNoID":    `{"secret":"` + generated + `"}`,
		"NotJSON":       `nope`,
		"NoSigningKey":  `{"signing_key_id":"k9","keys":[{"id":"k1","secret":"` + secret + `"}]}`,
		"BadBase64":     `{"signing_key_id":"k1","keys":[{"id":"k1","secret":"%%%"}]}`,
		"ShortSecret":   `{"signing_key_id":"k1","keys":[{"id":"k1","secret":"AQE="}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseKeySet([]byte(doc)); !errors.Is(err, ErrInvalid) {
				t.Errorf("ParseKeySet = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestLoadOrCreateFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".sandman", DefaultFileName)
	first, err := LoadOrCreateFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fi.Mode().Perm(), os.FileMode(0o600); got != want {
		t.Errorf("mode = %v, want %v", got, want)
	}
	if got := len(first.Signing.Secret); got != MinSecretLen {
		t.Errorf("secret length = %d", got)
	}
	second, err := LoadOrCreateFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Signing.Secret, second.Signing.Secret) {
		t.Error("second load generated a new key; want the file's key")
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".sandman", ".client_token_keys-*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}

	t.Run("Concurrent", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), DefaultFileName)
		var wg sync.WaitGroup
		sets := make([]KeySet, 8)
		errs := make([]error, 8)
		for i := range sets {
			wg.Go(func() { sets[i], errs[i] = LoadOrCreateFile(path) })
		}
		wg.Wait()
		for i := range sets {
			if errs[i] != nil {
				t.Fatalf("load %d: %v", i, errs[i])
			}
			if !bytes.Equal(sets[i].Signing.Secret, sets[0].Signing.Secret) {
				t.Fatalf("load %d got a different key", i)
			}
		}
	})
	t.Run("OpenModeRefused", func(t *testing.T) {
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadOrCreateFile(path); !errors.Is(err, ErrInvalid) {
			t.Errorf("LoadOrCreateFile(0644) = %v, want ErrInvalid", err)
		}
	})
}

// FuzzVerify checks that Verify never panics and accepts nothing but the
// tokens the key set minted (an accepted input must equal one of them).
func FuzzVerify(f *testing.F) {
	clock := newClock()
	tk := MustTokens(f, KeySet{Signing: key("k1", 1), Verifying: []Key{key("k0", 3)}}, clock)
	var minted []string
	for _, s := range []string{"ses_a", "ses_b"} {
		token, _, err := tk.Mint(s, "acct_1", time.Hour)
		if err != nil {
			f.Fatal(err)
		}
		minted = append(minted, token)
		f.Add(token)
	}
	f.Add("")
	f.Add(".")
	f.Add("AQ.AA")
	f.Fuzz(func(t *testing.T, token string) {
		c, err := tk.Verify(token)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrBadSignature) && !errors.Is(err, ErrExpired) {
				t.Fatalf("Verify error %v is none of the typed errors", err)
			}
			return
		}
		for _, m := range minted {
			if token == m {
				return
			}
		}
		t.Fatalf("Verify accepted %q (%+v), which was never minted", token, c)
	})
}

func TestHTTPStatus(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{ErrMalformed, 401},
		{ErrBadSignature, 401},
		{ErrExpired, 401},
		{ErrWrongSession, 403},
		{fmt.Errorf("status: %w", ErrWrongSession), 403},
		{errors.New("boom"), 0},
		{ErrInvalid, 0},
	}
	for _, c := range cases {
		if got := HTTPStatus(c.err); got != c.want {
			t.Errorf("HTTPStatus(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
