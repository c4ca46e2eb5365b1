package dynamostore_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/delivery/dynamostore"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// TestAForgedCursorIsInvalid: the delivery log's cursor comes back from
// the caller, who may forge it. One that names no delivery id must answer
// invalid (400) before it reaches DynamoDB: AWS refuses a sort key over
// 1024 bytes with a ValidationException, which came back to the caller as
// an internal error (DynamoDB Local does not check that limit, so here the
// forged cursor simply went through).
func TestAForgedCursorIsInvalid(t *testing.T) {
	store := dynamostore.New(dynamotest.MustClient(t), dynamotest.MustTable(t))
	ep := delivery.NewEndpointID()
	for name, last := range map[string]string{
		"TooLongForASortKey": "dlv_" + strings.Repeat("a", 2000),
		"NotHex":             "dlv_zzzzzzzzzzzzzzzzzzzzzzzzzzzz",
		"Short":              "dlv_0",
	} {
		t.Run(name, func(t *testing.T) {
			cursor := base64.RawURLEncoding.EncodeToString([]byte(`{"l":"` + last + `"}`))
			_, _, err := store.ListDeliveries(t.Context(), ep, 10, cursor)
			if got := lifecycle.ErrorCode(err); got != lifecycle.CodeInvalid {
				t.Errorf("ListDeliveries with a cursor naming %.40q…: %v (code %q), want invalid", last, err, got)
			}
		})
	}
}
