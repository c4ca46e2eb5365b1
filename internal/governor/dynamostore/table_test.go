package dynamostore_test

import (
	"testing"

	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/governor"
	"github.com/sandmanhq/sandman/internal/governor/dynamostore"
	"github.com/sandmanhq/sandman/internal/governor/governortest"
)

func TestTableContract(t *testing.T) {
	client := dynamotest.MustClient(t)
	governortest.RunTableContract(t, func(t *testing.T) governor.Table {
		return dynamostore.New(client, dynamotest.MustTable(t))
	})
}
