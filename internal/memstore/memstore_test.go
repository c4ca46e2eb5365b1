package memstore_test

import (
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/memstore"
	"github.com/sandmanhq/sandman/internal/storetest"
)

// TestStoreContract runs the lifecycle.Store contract in memory.
func TestStoreContract(t *testing.T) {
	storetest.Run(t, func(testing.TB) lifecycle.Store { return memstore.New() })
}
