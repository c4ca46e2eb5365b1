package memstore_test

import (
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/lifecycle/storetest"
)

// TestStoreContract runs the lifecycle.Store contract in memory.
func TestStoreContract(t *testing.T) {
	storetest.Run(t, func(testing.TB) lifecycle.Store { return memstore.New() })
}
