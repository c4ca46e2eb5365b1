package apigw_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// countingKeys is a KeyStore over a map that counts its lookups.
type countingKeys struct {
	mu    sync.Mutex
	keys  map[string]lifecycle.APIKey
	calls int
}

func (c *countingKeys) GetAPIKey(_ context.Context, hash string) (lifecycle.APIKey, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	k, ok := c.keys[hash]
	if !ok {
		return lifecycle.APIKey{}, lifecycle.Errorf(lifecycle.CodeNotFound, "no key")
	}
	return k, nil
}

func TestKeyCache(t *testing.T) {
	clock := lifecycle.NewManualClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	store := &countingKeys{keys: map[string]lifecycle.APIKey{"h1": {Hash: "h1", AccountID: "acct"}}}
	cache := apigw.NewKeyCache(store, time.Minute, clock)

	t.Run("HitWithinTTL", func(t *testing.T) {
		for range 3 {
			k, err := cache.GetAPIKey(t.Context(), "h1")
			if err != nil || k.AccountID != "acct" {
				t.Fatalf("GetAPIKey = %+v, %v", k, err)
			}
		}
		if got, want := store.calls, 1; got != want {
			t.Fatalf("store lookups = %d, want %d", got, want)
		}
	})
	t.Run("RefreshedAfterTTL", func(t *testing.T) {
		clock.Advance(time.Minute)
		delete(store.keys, "h1") // revoked
		if _, err := cache.GetAPIKey(t.Context(), "h1"); !lifecycle.IsCode(err, lifecycle.CodeNotFound) {
			t.Fatalf("err = %v, want not_found once the TTL ran out", err)
		}
	})
	t.Run("ErrNotFoundIsNotCached", func(t *testing.T) {
		before := store.calls
		_, _ = cache.GetAPIKey(t.Context(), "h2")
		store.keys["h2"] = lifecycle.APIKey{Hash: "h2", AccountID: "new"}
		k, err := cache.GetAPIKey(t.Context(), "h2")
		if err != nil || k.AccountID != "new" {
			t.Fatalf("a key minted after a miss: %+v, %v", k, err)
		}
		if got, want := store.calls-before, 2; got != want {
			t.Fatalf("store lookups = %d, want %d", got, want)
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 50 {
					if _, err := cache.GetAPIKey(context.Background(), "h2"); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
	})
}
