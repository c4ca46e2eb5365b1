package apigw

import (
	"context"
	"sync"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// DefaultKeyCacheTTL is how long a warm Lambda container trusts an API key
// it has looked up (ours). A key deleted from the table keeps working in a
// container for at most this long.
const DefaultKeyCacheTTL = time.Minute

// maxCachedKeys bounds the cache; when full it is emptied and refills.
const maxCachedKeys = 10000

// KeyCache is a KeyStore that remembers found keys for a TTL, so a warm
// function answers most requests with one DynamoDB read (the session)
// instead of two (the key, then the session). Unknown keys are not
// remembered: a key minted a moment ago works at once. Safe for concurrent
// use.
type KeyCache struct {
	keys  KeyStore
	ttl   time.Duration
	clock lifecycle.Clock

	mu      sync.Mutex
	entries map[string]cachedKey
}

type cachedKey struct {
	key     lifecycle.APIKey
	expires time.Time
}

var _ KeyStore = (*KeyCache)(nil)

// NewKeyCache wraps keys with a cache of ttl (DefaultKeyCacheTTL when 0 or
// less) on clock (lifecycle.SystemClock when nil).
func NewKeyCache(keys KeyStore, ttl time.Duration, clock lifecycle.Clock) *KeyCache {
	if ttl <= 0 {
		ttl = DefaultKeyCacheTTL
	}
	if clock == nil {
		clock = lifecycle.SystemClock{}
	}
	return &KeyCache{keys: keys, ttl: ttl, clock: clock, entries: map[string]cachedKey{}}
}

// GetAPIKey returns the cached key for hash while it is fresh, else asks the
// wrapped store and remembers a found key. Errors: the store's (not_found).
func (c *KeyCache) GetAPIKey(ctx context.Context, hash string) (lifecycle.APIKey, error) {
	now := c.clock.Now()
	c.mu.Lock()
	e, ok := c.entries[hash]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.key, nil
	}
	k, err := c.keys.GetAPIKey(ctx, hash)
	if err != nil {
		return lifecycle.APIKey{}, err
	}
	c.mu.Lock()
	if len(c.entries) >= maxCachedKeys {
		clear(c.entries)
	}
	c.entries[hash] = cachedKey{key: k, expires: now.Add(c.ttl)}
	c.mu.Unlock()
	return k, nil
}
