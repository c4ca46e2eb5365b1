package contract_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/sandmanhq/sandman/internal/openapi"
	"github.com/sandmanhq/sandman/internal/openapi/contract"
	"github.com/sandmanhq/sandman/internal/routes"
)

// TestLint lints the document with kin-openapi's own OpenAPI 3.1
// validation, and shows the lint catches a broken document.
func TestLint(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		if _, err := contract.Load(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ErrDanglingRef", func(t *testing.T) {
		broken := bytes.Replace(openapi.Document(), []byte(`"#/components/schemas/Session"`), []byte(`"#/components/schemas/Sesion"`), 1)
		if _, err := contract.LoadData(t.Context(), broken); err == nil {
			t.Fatal("a $ref to a missing schema passed the lint")
		}
	})
	t.Run("ErrBadSchema", func(t *testing.T) {
		broken := bytes.Replace(openapi.Document(), []byte(`"minimum": 60`), []byte(`"minimum": "sixty"`), 1)
		if _, err := contract.LoadData(t.Context(), broken); err == nil {
			t.Fatal("a string minimum passed the lint")
		}
	})
}

// TestParity: every route of routes.Table is an operation of the document
// with the same authentication, and the document has no other operation.
func TestParity(t *testing.T) {
	v, err := contract.NewValidator(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var table []string
	for _, rt := range routes.Table {
		// API Gateway's greedy {name+} is {name} in OpenAPI.
		table = append(table, strings.ReplaceAll(rt.Key(), "+}", "}"))
		op := v.Operation(rt.Method, strings.ReplaceAll(rt.Path, "+}", "}"))
		if op == nil {
			t.Errorf("route %s is in internal/routes but not in docs/openapi.json", rt.Key())
			continue
		}
		sec := v.Security(op)
		var got string
		switch {
		case len(sec) == 0 && rt.Function == routes.Webhook:
			got = routes.AuthSignature // a signature is no OpenAPI security scheme
		case len(sec) == 0:
			got = routes.AuthNone
		default:
			var schemes []string
			for _, req := range sec {
				for name := range req {
					schemes = append(schemes, name)
				}
			}
			slices.Sort(schemes)
			want := []string{"bearerApiKey", "headerApiKey"}
			if rt.AcceptsClientToken() {
				want = []string{"bearerApiKey", "clientToken", "headerApiKey"}
			}
			if rt.AcceptsQueryToken() {
				want = []string{"bearerApiKey", "clientToken", "clientTokenQuery", "headerApiKey"}
			}
			if !slices.Equal(schemes, want) {
				t.Errorf("%s: security schemes %v, want either of %v", rt.Key(), schemes, want)
			}
			got = routes.AuthAPIKey
		}
		if want := rt.Auth(); got != want {
			t.Errorf("%s: the document says auth %s, internal/routes says %s", rt.Key(), got, want)
		}
		if op.OperationID == "" {
			t.Errorf("%s: no operationId (generators name methods after it)", rt.Key())
		}
	}
	slices.Sort(table)
	for _, key := range v.Operations() {
		if !slices.Contains(table, key) {
			t.Errorf("operation %s is in docs/openapi.json but not in internal/routes", key)
		}
	}
	if got, want := strings.Join(v.Operations(), "\n"), strings.Join(table, "\n"); got != want {
		t.Logf("document:\n%s\ntable:\n%s", got, want)
	}
}

// TestAliases: each route of routes.Aliases is documented as the alias of
// the route it names (x-alias-of: that operation's operationId) and takes
// and answers exactly what that route does; and an alias that drifts from
// its route fails the check.
func TestAliases(t *testing.T) {
	v, err := contract.NewValidator(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(routes.Aliases) == 0 {
		t.Fatal("routes.Aliases is empty")
	}
	for alias, target := range routes.Aliases {
		t.Run(alias, func(t *testing.T) {
			am, ap, _ := strings.Cut(alias, " ")
			tm, tp, _ := strings.Cut(target, " ")
			aop, top := v.Operation(am, ap), v.Operation(tm, tp)
			if aop == nil || top == nil {
				t.Fatalf("operations %s (%v) and %s (%v): want both in the document", alias, aop != nil, target, top != nil)
			}
			if got, want := aop.Extensions["x-alias-of"], top.OperationID; got != want {
				t.Errorf("%s: x-alias-of = %v, want %q", alias, got, want)
			}
			if problems := sameShape(aop, top); len(problems) > 0 {
				t.Errorf("%s answers other than %s: %v", alias, target, problems)
			}
			drifted := *aop
			drifted.RequestBody = nil
			if problems := sameShape(&drifted, top); len(problems) == 0 {
				t.Error("an alias without the request body passed the check")
			}
		})
	}
}

// sameShape lists how a differs from b in what a caller sends and gets:
// the request body, the responses and the security requirements.
func sameShape(a, b *openapi3.Operation) []string {
	var problems []string
	for name, pair := range map[string][2]any{
		"requestBody": {a.RequestBody, b.RequestBody},
		"responses":   {a.Responses, b.Responses},
		"security":    {a.Security, b.Security},
	} {
		x, errX := json.Marshal(pair[0])
		y, errY := json.Marshal(pair[1])
		if errX != nil || errY != nil || !bytes.Equal(x, y) {
			problems = append(problems, name)
		}
	}
	slices.Sort(problems)
	return problems
}
