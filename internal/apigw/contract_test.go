package apigw_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/openapi"
	"github.com/sandmanhq/sandman/internal/openapi/contract"
)

// apiContract validates every answer the tests see against
// docs/openapi.json (checkContract).
var apiContract = sync.OnceValues(func() (*contract.Validator, error) {
	return contract.NewValidator(context.Background())
})

// TestMain runs the tests, then reports how many handler answers were
// validated against the OpenAPI document (visible with go test -v).
func TestMain(m *testing.M) {
	code := m.Run()
	if v, err := apiContract(); err == nil {
		fmt.Printf("openapi contract: %d apigw handler answers validated against docs/openapi.json\n", v.Count())
		if os.Getenv("SANDMAN_CONTRACT_SUMMARY") != "" {
			fmt.Println(strings.Join(v.Summary(), "\n"))
		}
	}
	os.Exit(code)
}

// checkContract fails the test unless the request ev and its answer resp
// match the OpenAPI document (contract.Validator.Validate). invoke and the
// fuzz target call it on every answer.
func checkContract(tb testing.TB, ev events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse) {
	tb.Helper()
	v, err := apiContract()
	if err != nil {
		tb.Fatalf("load the OpenAPI document: %v", err)
	}
	if err := v.Validate(context.Background(), contract.FromAPIGateway(ev, resp)); err != nil {
		tb.Errorf("contract: %v\nbody: %s", err, resp.Body)
	}
}

// TestOpenAPIDocument: GET /v1/openapi.json answers the embedded document to
// anyone, no API key needed, from the sessions function.
func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)
	for name, patch := range map[string]func(*events.APIGatewayV2HTTPRequest){
		"NoKey":  func(*events.APIGatewayV2HTTPRequest) {},
		"BadKey": withKey("sk_not_a_key"),
	} {
		t.Run(name, func(t *testing.T) {
			r := h.invoke(t, MustEvent(t, "openapi.json", patch))
			wantStatus(t, r, 200)
			var got, want any
			if err := json.Unmarshal([]byte(r.body), &got); err != nil {
				t.Fatalf("body is not JSON: %v", err)
			}
			if err := json.Unmarshal(openapi.Document(), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Error("the served document differs from internal/openapi's")
			}
			if got, want := r.headers["Content-Type"], "application/json; charset=utf-8"; got != want {
				t.Errorf("Content-Type = %q, want %q", got, want)
			}
			if got, want := r.headers["Access-Control-Allow-Origin"], "*"; got != want {
				t.Errorf("Access-Control-Allow-Origin = %q, want %q", got, want)
			}
		})
	}
	if got := h.providerCalls(); got != 0 {
		t.Errorf("provider calls = %d, want 0", got)
	}
}
