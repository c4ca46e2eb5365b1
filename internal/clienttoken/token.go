package clienttoken

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// DefaultTTL is a token's lifetime when Mint is given 0 (docs/DESIGN.md, "Client
// channel": default 15 min).
const DefaultTTL = 15 * time.Minute

// MaxTTL is the longest lifetime Mint accepts (docs/DESIGN.md: at most 24 h).
const MaxTTL = 24 * time.Hour

// Length limits of the payload's strings, in bytes.
const (
	maxKeyIDLen = 64
	maxIDLen    = 128
)

const (
	payloadVersion = 1
	macDomain      = "sandman-client-token\x00"
)

// The errors Verify and VerifyFor return; compare with errors.Is. The first
// three mean 401 unauthorized, ErrWrongSession means 403 forbidden.
var (
	// ErrMalformed: not a token of this format (bad base64, wrong version,
	// truncated or over-long payload).
	ErrMalformed = errors.New("client token is malformed")
	// ErrBadSignature: the mac does not match, or the key id is not in the
	// key set (rotated out).
	ErrBadSignature = errors.New("client token signature is not valid")
	// ErrExpired: the token verified but now >= its expires_at.
	ErrExpired = errors.New("client token has expired")
	// ErrWrongSession: a valid token scoped to another session.
	ErrWrongSession = errors.New("client token is for another session")
)

// ErrInvalid is wrapped by Mint and the key loaders for bad arguments (an
// empty or over-long id, a TTL out of range, a short secret).
var ErrInvalid = errors.New("invalid client token request")

var b64 = base64.RawURLEncoding.Strict()

// Claims is what a token says: the one session it is scoped to, the account
// that owns it, when it was issued and when it expires (whole seconds, UTC),
// and the id of the key that signed it.
type Claims struct {
	SessionID string
	AccountID string
	IssuedAt  time.Time
	ExpiresAt time.Time
	KeyID     string
}

// Tokens mints and verifies client tokens with one key set and one clock.
// It is safe for concurrent use.
type Tokens struct {
	keys  KeySet
	clock lifecycle.Clock
}

// New returns a Tokens for keys (see KeySet.Validate) reading time from
// clock. It returns an error wrapping ErrInvalid when the key set is not
// valid.
func New(keys KeySet, clock lifecycle.Clock) (*Tokens, error) {
	if err := keys.Validate(); err != nil {
		return nil, err
	}
	if clock == nil {
		return nil, fmt.Errorf("%w: nil clock", ErrInvalid)
	}
	return &Tokens{keys: keys.clone(), clock: clock}, nil
}

// Mint returns a token scoped to sessionID, owned by accountID, valid for
// ttl from now (0 means DefaultTTL; 1 s..MaxTTL, whole seconds, rounded
// down), signed with the signing key, and its claims. It returns an error
// wrapping ErrInvalid for an empty or over-long id (more than 128 bytes) or
// a TTL out of range.
func (t *Tokens) Mint(sessionID, accountID string, ttl time.Duration) (string, Claims, error) {
	if ttl == 0 {
		ttl = DefaultTTL
	}
	if ttl < time.Second || ttl > MaxTTL {
		return "", Claims{}, fmt.Errorf("%w: ttl %s is outside 1s..%s", ErrInvalid, ttl, MaxTTL)
	}
	if err := checkID("session id", sessionID, maxIDLen); err != nil {
		return "", Claims{}, err
	}
	if err := checkID("account id", accountID, maxIDLen); err != nil {
		return "", Claims{}, err
	}
	now := t.clock.Now().UTC().Truncate(time.Second)
	c := Claims{
		SessionID: sessionID,
		AccountID: accountID,
		IssuedAt:  now,
		ExpiresAt: now.Add(ttl.Truncate(time.Second)),
		KeyID:     t.keys.Signing.ID,
	}
	payload := b64.EncodeToString(encodePayload(c))
	return payload + "." + b64.EncodeToString(sign(t.keys.Signing.Secret, payload)), c, nil
}

// Verify checks token's format, signature and expiry and returns its
// claims. Errors: ErrMalformed, ErrBadSignature, ErrExpired (see the
// package doc). Use it where the token itself names the session (the
// WebSocket connect); use VerifyFor on a session's route.
func (t *Tokens) Verify(token string) (Claims, error) {
	payload, macText, ok := strings.Cut(token, ".")
	if !ok || strings.Contains(macText, ".") {
		return Claims{}, ErrMalformed
	}
	raw, err := b64.DecodeString(payload)
	if err != nil {
		return Claims{}, ErrMalformed
	}
	mac, err := b64.DecodeString(macText)
	if err != nil || len(mac) != sha256.Size {
		return Claims{}, ErrMalformed
	}
	c, err := decodePayload(raw)
	if err != nil {
		return Claims{}, err
	}
	key, found := t.keys.lookup(c.KeyID)
	if !found {
		return Claims{}, ErrBadSignature
	}
	if !hmac.Equal(mac, sign(key.Secret, payload)) {
		return Claims{}, ErrBadSignature
	}
	if !t.clock.Now().Before(c.ExpiresAt) {
		return Claims{}, ErrExpired
	}
	return c, nil
}

// VerifyFor is Verify plus the scope check: a valid token for any session
// other than sessionID is ErrWrongSession (403). A token that fails Verify
// returns Verify's error (401) first.
func (t *Tokens) VerifyFor(token, sessionID string) (Claims, error) {
	c, err := t.Verify(token)
	if err != nil {
		return Claims{}, err
	}
	if !hmac.Equal([]byte(c.SessionID), []byte(sessionID)) {
		return Claims{}, ErrWrongSession
	}
	return c, nil
}

func sign(secret []byte, payload string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(macDomain))
	m.Write([]byte(payload))
	return m.Sum(nil)
}

func checkID(what, v string, max int) error {
	if v == "" || len(v) > max {
		return fmt.Errorf("%w: %s must be 1..%d bytes", ErrInvalid, what, max)
	}
	return nil
}

func encodePayload(c Claims) []byte {
	var b bytes.Buffer
	b.WriteByte(payloadVersion)
	for _, s := range []string{c.KeyID, c.SessionID, c.AccountID} {
		b.WriteByte(byte(len(s)))
		b.WriteString(s)
	}
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(c.IssuedAt.Unix()))
	b.Write(n[:])
	binary.BigEndian.PutUint64(n[:], uint64(c.ExpiresAt.Unix()))
	b.Write(n[:])
	return b.Bytes()
}

// decodePayload reads the record encodePayload writes; anything else,
// including trailing bytes, is ErrMalformed.
func decodePayload(raw []byte) (Claims, error) {
	if len(raw) < 1 || raw[0] != payloadVersion {
		return Claims{}, ErrMalformed
	}
	rest := raw[1:]
	var strs [3]string
	limits := [3]int{maxKeyIDLen, maxIDLen, maxIDLen}
	for i := range strs {
		if len(rest) < 1 {
			return Claims{}, ErrMalformed
		}
		n := int(rest[0])
		rest = rest[1:]
		if n == 0 || n > limits[i] || len(rest) < n {
			return Claims{}, ErrMalformed
		}
		strs[i] = string(rest[:n])
		rest = rest[n:]
	}
	if len(rest) != 16 {
		return Claims{}, ErrMalformed
	}
	iat := int64(binary.BigEndian.Uint64(rest[:8]))
	exp := int64(binary.BigEndian.Uint64(rest[8:]))
	return Claims{
		KeyID:     strs[0],
		SessionID: strs[1],
		AccountID: strs[2],
		IssuedAt:  time.Unix(iat, 0).UTC(),
		ExpiresAt: time.Unix(exp, 0).UTC(),
	}, nil
}

// HTTPStatus maps a Verify or VerifyFor error to its HTTP status (docs/DESIGN.md
// "Client channel": refused with 401/403): 403 for ErrWrongSession, 401 for
// ErrMalformed, ErrBadSignature and ErrExpired, and 0 for nil or any other
// error (which is not the caller's fault and maps to 500).
func HTTPStatus(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrWrongSession):
		return http.StatusForbidden
	case errors.Is(err, ErrMalformed), errors.Is(err, ErrBadSignature), errors.Is(err, ErrExpired):
		return http.StatusUnauthorized
	default:
		return 0
	}
}
