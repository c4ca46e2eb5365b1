package providerhook_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/openapi/contract"
)

// apiContract validates every answer the tests see against
// docs/openapi.json (checkContract).
var apiContract = sync.OnceValues(func() (*contract.Validator, error) {
	return contract.NewValidator(context.Background())
})

// TestMain runs the tests, then reports how many webhook answers were
// validated against the OpenAPI document (visible with go test -v).
func TestMain(m *testing.M) {
	code := m.Run()
	if v, err := apiContract(); err == nil {
		fmt.Printf("openapi contract: %d webhook handler answers validated against docs/openapi.json\n", v.Count())
	}
	os.Exit(code)
}

// checkContract fails the test unless the delivery req and its answer resp
// match the OpenAPI document (contract.Validator.Validate).
func checkContract(tb testing.TB, req events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse) {
	tb.Helper()
	v, err := apiContract()
	if err != nil {
		tb.Fatalf("load the OpenAPI document: %v", err)
	}
	if err := v.Validate(context.Background(), contract.FromAPIGateway(req, resp)); err != nil {
		tb.Errorf("contract: %v\nbody: %s", err, resp.Body)
	}
}
