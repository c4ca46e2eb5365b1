package dynamo_test

import (
	"testing"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/storetest"
)

// TestStoreContract runs the lifecycle.Store contract on DynamoDB Local.
func TestStoreContract(t *testing.T) {
	storetest.Run(t, func(tb testing.TB) lifecycle.Store {
		return dynamo.New(dynamo.Config{Client: dynamotest.MustClient(tb), Table: dynamotest.MustTable(tb)})
	})
}
