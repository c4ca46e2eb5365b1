package memstore_test

import (
	"testing"

	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/delivery/deliverytest"
	"github.com/sandmanhq/sandman/internal/delivery/memstore"
)

func TestStoreContract(t *testing.T) {
	deliverytest.RunStoreContract(t, func(*testing.T) delivery.Store { return memstore.New() })
}
