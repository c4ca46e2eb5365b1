package dynamostore

import (
	"slices"
	"strings"

	"github.com/sandmanhq/sandman/internal/delivery"
)

func sortByCreated(eps []*delivery.Endpoint) {
	slices.SortFunc(eps, func(a, b *delivery.Endpoint) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}
