package lifecycle

import (
	"context"
	"time"
)

// IdleHistogramItem is one key's idle histogram as stored (docs/COST.md
// "The learned idle policy"; keys from IdleKeys). Version starts at 1 on
// the first write and the store increments it on every write.
type IdleHistogramItem struct {
	Key       string
	Histogram IdleHistogram
	Version   int64
	UpdatedAt time.Time
}

// IdleHistogramStore keeps the learned idle policy's histograms, one item
// per key, beside the sessions (in DynamoDB one small item each). A Store
// that is one lets sessions run the learned idle policy; a session of a
// service whose store is not plans as if every histogram were thin.
type IdleHistogramStore interface {
	// GetIdleHistogram reads key's item; a key never written is an empty
	// histogram at version 0 (no error).
	GetIdleHistogram(ctx context.Context, key string) (IdleHistogramItem, error)
	// PutIdleHistogram writes it only if the stored item still has version
	// it.Version (0: none stored yet), then sets it.Version to the new
	// version. Errors: conflict (written meanwhile), invalid (no key).
	PutIdleHistogram(ctx context.Context, it *IdleHistogramItem) error
}
