package clienttoken

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// MinSecretLen is the shortest HMAC secret accepted, in bytes (the SHA-256
// block of entropy RFC 2104 recommends at least: the hash output length).
const MinSecretLen = 32

// MaxVerifyingKeys is how many keys besides the signing key a KeySet may
// hold (docs/DESIGN.md: two keys accepted during a rotation; one spare so a
// rotation can start before the previous one has finished).
const MaxVerifyingKeys = 2

// DefaultFileName is the local key file inside the state folder
// (.sandman/client_token_keys.json).
const DefaultFileName = "client_token_keys.json"

// Key is one HMAC key: its id (carried in every token it signs, 1..64
// bytes) and its secret (at least MinSecretLen bytes).
type Key struct {
	ID     string
	Secret []byte
}

// KeySet is the deployment's keys: Signing signs new tokens and verifies;
// Verifying (at most MaxVerifyingKeys) only verify. Ids are unique.
type KeySet struct {
	Signing   Key
	Verifying []Key
}

// Validate returns an error wrapping ErrInvalid when a key id is empty,
// over 64 bytes or repeated, a secret is shorter than MinSecretLen, or there
// are more than MaxVerifyingKeys verifying keys.
func (s KeySet) Validate() error {
	if len(s.Verifying) > MaxVerifyingKeys {
		return fmt.Errorf("%w: %d verifying keys, at most %d", ErrInvalid, len(s.Verifying), MaxVerifyingKeys)
	}
	seen := map[string]bool{}
	for _, k := range append([]Key{s.Signing}, s.Verifying...) {
		if err := checkID("key id", k.ID, maxKeyIDLen); err != nil {
			return err
		}
		if seen[k.ID] {
			return fmt.Errorf("%w: key id %q repeated", ErrInvalid, k.ID)
		}
		seen[k.ID] = true
		if len(k.Secret) < MinSecretLen {
			return fmt.Errorf("%w: key %q secret is %d bytes, at least %d", ErrInvalid, k.ID, len(k.Secret), MinSecretLen)
		}
	}
	return nil
}

func (s KeySet) lookup(id string) (Key, bool) {
	if s.Signing.ID == id {
		return s.Signing, true
	}
	for _, k := range s.Verifying {
		if k.ID == id {
			return k, true
		}
	}
	return Key{}, false
}

func (s KeySet) clone() KeySet {
	c := KeySet{Signing: cloneKey(s.Signing)}
	for _, k := range s.Verifying {
		c.Verifying = append(c.Verifying, cloneKey(k))
	}
	return c
}

func cloneKey(k Key) Key { return Key{ID: k.ID, Secret: append([]byte(nil), k.Secret...)} }

// keyFile is the JSON of a Secrets Manager secret string and of the local
// key file (see the package doc).
type keyFile struct {
	SigningKeyID string        `json:"signing_key_id"`
	Keys         []keyFileItem `json:"keys"`
	// Secret is the one-key form: the signing key's secret, with no keys
	// (see ParseKeySet).
	Secret string `json:"secret,omitempty"`
}

type keyFileItem struct {
	ID     string `json:"id"`
	Secret string `json:"secret"`
}

// ParseKeySet reads a key set from its JSON (a Secrets Manager secret's
// SecretString or the local key file; shape in the package doc). Secrets
// are standard base64. It also reads the one-key form
// {"signing_key_id":"k1","secret":"<standard base64>"}: what the stack's
// generated Secrets Manager secret holds (infra: a template with
// signing_key_id and a generated 64-character alphanumeric "secret", which
// is standard base64 of 48 bytes; Secrets Manager can generate a top-level
// field only). A rotation rewrites it in the keys form. It returns an error
// wrapping ErrInvalid when the JSON is not one of those shapes (both
// secret and keys set included), signing_key_id names no key, or the set
// fails Validate.
func ParseKeySet(data []byte) (KeySet, error) {
	var f keyFile
	if err := json.Unmarshal(data, &f); err != nil {
		return KeySet{}, fmt.Errorf("%w: key set json: %v", ErrInvalid, err)
	}
	if f.Secret != "" {
		if len(f.Keys) > 0 {
			return KeySet{}, fmt.Errorf("%w: key set json has both secret and keys", ErrInvalid)
		}
		f.Keys = []keyFileItem{{ID: f.SigningKeyID, Secret: f.Secret}}
	}
	var set KeySet
	found := false
	for _, item := range f.Keys {
		secret, err := base64.StdEncoding.DecodeString(item.Secret)
		if err != nil {
			return KeySet{}, fmt.Errorf("%w: key %q secret is not standard base64", ErrInvalid, item.ID)
		}
		k := Key{ID: item.ID, Secret: secret}
		if item.ID == f.SigningKeyID && !found {
			set.Signing, found = k, true
			continue
		}
		set.Verifying = append(set.Verifying, k)
	}
	if !found {
		return KeySet{}, fmt.Errorf("%w: signing_key_id %q names no key", ErrInvalid, f.SigningKeyID)
	}
	if err := set.Validate(); err != nil {
		return KeySet{}, err
	}
	return set, nil
}

// MarshalKeySet is the JSON ParseKeySet reads, signing key first.
func MarshalKeySet(s KeySet) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	f := keyFile{SigningKeyID: s.Signing.ID}
	for _, k := range append([]Key{s.Signing}, s.Verifying...) {
		f.Keys = append(f.Keys, keyFileItem{ID: k.ID, Secret: base64.StdEncoding.EncodeToString(k.Secret)})
	}
	return json.MarshalIndent(f, "", "  ")
}

// GenerateKey returns a key with id and MinSecretLen bytes read from r
// (crypto/rand.Reader when nil).
func GenerateKey(id string, r io.Reader) (Key, error) {
	if r == nil {
		r = rand.Reader
	}
	secret := make([]byte, MinSecretLen)
	if _, err := io.ReadFull(r, secret); err != nil {
		return Key{}, fmt.Errorf("read random key: %w", err)
	}
	return Key{ID: id, Secret: secret}, nil
}

// LoadOrCreateFile returns the key set in the file at path, creating it
// first when it does not exist: one random key with id "local-1", written
// with mode 0600 (folders 0700) and published atomically, so concurrent
// starts agree on one key. An existing file readable by group or others is
// refused, as is one that ParseKeySet refuses.
func LoadOrCreateFile(path string) (KeySet, error) {
	set, err := readKeyFile(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return set, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return KeySet{}, fmt.Errorf("create key folder: %w", err)
	}
	key, err := GenerateKey("local-1", nil)
	if err != nil {
		return KeySet{}, err
	}
	data, err := MarshalKeySet(KeySet{Signing: key})
	if err != nil {
		return KeySet{}, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".client_token_keys-*")
	if err != nil {
		return KeySet{}, fmt.Errorf("create key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err == nil {
		_, err = tmp.Write(append(data, '\n'))
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return KeySet{}, fmt.Errorf("write key file: %w", err)
		}
	} else {
		tmp.Close()
		return KeySet{}, fmt.Errorf("chmod key file: %w", err)
	}
	// Link fails when another process published first; then its key wins.
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return KeySet{}, fmt.Errorf("publish key file: %w", err)
	}
	return readKeyFile(path)
}

func readKeyFile(path string) (KeySet, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return KeySet{}, fmt.Errorf("client token key file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return KeySet{}, fmt.Errorf("%w: key file %s has mode %v; it must be 0600", ErrInvalid, path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return KeySet{}, fmt.Errorf("read key file: %w", err)
	}
	set, err := ParseKeySet(data)
	if err != nil {
		return KeySet{}, fmt.Errorf("key file %s: %w", path, err)
	}
	return set, nil
}
