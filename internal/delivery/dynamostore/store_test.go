package dynamostore_test

import (
	"testing"

	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/delivery/deliverytest"
	"github.com/sandmanhq/sandman/internal/delivery/dynamostore"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
)

func TestStoreContract(t *testing.T) {
	client := dynamotest.MustClient(t)
	deliverytest.RunStoreContract(t, func(t *testing.T) delivery.Store {
		return dynamostore.New(client, dynamotest.MustTable(t))
	})
}
