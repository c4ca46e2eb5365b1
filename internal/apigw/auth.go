package apigw

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// KeyStore looks API keys up by the SHA-256 hash of their secret;
// lifecycle.Store (internal/dynamo) implements it.
type KeyStore interface {
	// GetAPIKey returns the key whose hash is hash. Errors: not_found.
	GetAPIKey(ctx context.Context, hash string) (lifecycle.APIKey, error)
}

// KeyWriter stores API keys; lifecycle.Store implements it.
type KeyWriter interface {
	// PutAPIKey stores k. Errors: conflict when the hash exists.
	PutAPIKey(ctx context.Context, k lifecycle.APIKey) error
}

// APIKeyPrefix starts every secret NewAPIKey mints.
const APIKeyPrefix = "sk_"

// maxKeyLen bounds the secret a caller may send (longer ones are refused
// before hashing; minted ones are 35 characters).
const maxKeyLen = 256

// The development key of the fixtures in events/api (events/api/README.md).
// It is valid only where someone stored it: the handler tests and the local
// stack seed it for DevAccountID; nothing in AWS does.
const (
	DevAPIKey    = "sk_testkeytestkeytestkeytestkey2345"
	DevAccountID = "acct_dev"
)

var keyEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewAPIKey mints an API key: secret is "sk_" followed by 32 lowercase
// base32 characters (160 random bits), to be shown to its owner once; hash
// is HashAPIKey(secret), the only form that is stored.
func NewAPIKey() (secret, hash string) {
	var b [20]byte
	rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	secret = APIKeyPrefix + strings.ToLower(keyEncoding.EncodeToString(b[:]))
	return secret, HashAPIKey(secret)
}

// HashAPIKey returns the lowercase hex SHA-256 of secret, the form a key is
// stored and looked up by. A fast hash is enough: secrets carry 160 random
// bits, so there is nothing to brute-force.
func HashAPIKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// IssueAPIKey mints a key for accountID, stores its hash created at now, and
// returns the secret. It is what `make apikey` and the local stack use.
// Errors: from the store, wrapped.
func IssueAPIKey(ctx context.Context, keys KeyWriter, accountID string, now time.Time) (string, error) {
	return IssueLimitedAPIKey(ctx, keys, accountID, 0, now)
}

// IssueLimitedAPIKey is IssueAPIKey for a key whose creates and resumes
// have their own running limit, maxRunning sandboxes (lifecycle.APIKey.MaxRunning;
// 0: the deployment's SANDMAN_MAX_RUNNING). Errors: IssueAPIKeyWith's.
func IssueLimitedAPIKey(ctx context.Context, keys KeyWriter, accountID string, maxRunning int, now time.Time) (string, error) {
	return IssueAPIKeyWith(ctx, keys, lifecycle.APIKey{AccountID: accountID, CreatedAt: now, MaxRunning: maxRunning})
}

// IssueAPIKeyWith mints a key with k's account, creation time and
// settings (its running limit, MaxRunning, and the account's tiers as this
// key sets them, Tiers), stores its hash (k.Hash is ignored) and returns
// the secret. Errors: no account, a negative max_running, tiers out of
// range (lifecycle.ValidTiers), from the store, wrapped.
func IssueAPIKeyWith(ctx context.Context, keys KeyWriter, k lifecycle.APIKey) (string, error) {
	if k.AccountID == "" {
		return "", fmt.Errorf("issue api key: account id is required")
	}
	if k.MaxRunning < 0 {
		return "", fmt.Errorf("issue api key: max_running must not be negative, not %d", k.MaxRunning)
	}
	if err := lifecycle.ValidTiers(k.Tiers); err != nil {
		return "", fmt.Errorf("issue api key: %w", err)
	}
	secret, hash := NewAPIKey()
	k.Hash, k.CreatedAt = hash, k.CreatedAt.UTC()
	if err := keys.PutAPIKey(ctx, k); err != nil {
		return "", fmt.Errorf("store api key for %s: %w", k.AccountID, err)
	}
	return secret, nil
}

// apiKey returns the key the request carries: exactly one of
// "Authorization: Bearer <key>" or "x-api-key: <key>" (docs/DESIGN.md "HTTP API").
// Errors: unauthorized.
func apiKey(r *request) (string, error) {
	authz, hasAuthz := r.header("Authorization")
	xkey, hasX := r.header("x-api-key")
	switch {
	case hasAuthz && hasX:
		return "", unauthorizedf("send the API key in one header, Authorization: Bearer <key> or x-api-key, not both")
	case hasX:
		key := strings.TrimSpace(xkey)
		if key == "" || len(key) > maxKeyLen || strings.ContainsAny(key, " \t,") {
			return "", unauthorizedf("the x-api-key header must hold one API key")
		}
		return key, nil
	case hasAuthz:
		scheme, key, ok := strings.Cut(strings.TrimSpace(authz), " ")
		key = strings.TrimSpace(key)
		if !ok || !strings.EqualFold(scheme, "Bearer") || key == "" || len(key) > maxKeyLen || strings.ContainsAny(key, " \t,") {
			return "", unauthorizedf("the Authorization header must be \"Bearer <key>\"")
		}
		return key, nil
	}
	return "", unauthorizedf("an API key is required: send Authorization: Bearer <key> or x-api-key: <key>")
}

// authenticate returns the request's API key (its account, its running
// limit override). Errors: unauthorized; a store failure other than
// not_found is returned wrapped (a 500).
func authenticate(ctx context.Context, keys KeyStore, r *request) (lifecycle.APIKey, error) {
	secret, err := apiKey(r)
	if err != nil {
		return lifecycle.APIKey{}, err
	}
	k, err := keys.GetAPIKey(ctx, HashAPIKey(secret))
	switch {
	case lifecycle.IsCode(err, lifecycle.CodeNotFound):
		return lifecycle.APIKey{}, unauthorizedf("the API key is not valid")
	case err != nil:
		return lifecycle.APIKey{}, fmt.Errorf("look up api key: %w", err)
	case k.AccountID == "":
		return lifecycle.APIKey{}, fmt.Errorf("api key %s… has no account", HashAPIKey(secret)[:8])
	}
	return k, nil
}
