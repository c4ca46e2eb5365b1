package governor_test

import (
	"testing"

	"github.com/sandmanhq/sandman/internal/governor"
	"github.com/sandmanhq/sandman/internal/governor/governortest"
)

func TestMemTableContract(t *testing.T) {
	governortest.RunTableContract(t, func(*testing.T) governor.Table { return &governor.MemTable{} })
}
