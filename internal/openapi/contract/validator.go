package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

// Exchange is one request to the API and its answer, as a handler test saw
// it. Header names may be in any case.
type Exchange struct {
	// Method is the HTTP method ("GET").
	Method string
	// Path is the route's path template as routes.Table and the document
	// write it ("/v1/sessions/{id}"), not the request's path.
	Path string
	// PathParams fill the template's {name}s.
	PathParams map[string]string
	// Query is the request's query string parameters.
	Query map[string]string
	// RequestHeaders and RequestBody are the request's (the body decoded,
	// when it travelled base64-encoded).
	RequestHeaders map[string]string
	RequestBody    []byte
	// Status, Headers and Body are the answer's.
	Status  int
	Headers map[string]string
	Body    []byte
}

// Validator checks exchanges against the document with kin-openapi's
// openapi3filter. It is safe for concurrent use and counts what it checked.
type Validator struct {
	doc *openapi3.T
	// errorSchema is components.schemas.Error, for answers of routes the
	// document does not describe (unknown routes answer the envelope).
	errorSchema *openapi3.SchemaRef

	mu   sync.Mutex
	seen map[string]int // "METHOD /path STATUS" → answers validated
}

// The stable link's pages (docs/WAKE.md) answer text/html, and the client
// module (GET /v1/sandman.js) text/javascript: both are validated as plain
// strings.
func init() {
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("text/javascript", openapi3filter.PlainBodyDecoder)
}

// NewValidator loads and validates the embedded document (Load) and returns
// a Validator over it. Errors: Load's.
func NewValidator(ctx context.Context) (*Validator, error) {
	doc, err := Load(ctx)
	if err != nil {
		return nil, err
	}
	es, ok := doc.Components.Schemas["Error"]
	if !ok {
		return nil, fmt.Errorf("openapi document: no components.schemas.Error")
	}
	return &Validator{doc: doc, errorSchema: es, seen: map[string]int{}}, nil
}

// Operations returns every operation of the document as a route key,
// "METHOD /path", sorted.
func (v *Validator) Operations() []string {
	var keys []string
	for path, item := range v.doc.Paths.Map() {
		for method := range item.Operations() {
			keys = append(keys, strings.ToUpper(method)+" "+path)
		}
	}
	sort.Strings(keys)
	return keys
}

// Operation returns the operation of method and path, or nil.
func (v *Validator) Operation(method, path string) *openapi3.Operation {
	item := v.doc.Paths.Value(path)
	if item == nil {
		return nil
	}
	return item.GetOperation(strings.ToUpper(method))
}

// Security returns the security requirements in force for an operation:
// its own when it sets them (an empty list: no auth), else the document's.
func (v *Validator) Security(op *openapi3.Operation) openapi3.SecurityRequirements {
	if op.Security != nil {
		return *op.Security
	}
	return v.doc.Security
}

// Validate checks x against the document and counts it:
//   - an OPTIONS preflight must answer 204 with no body;
//   - a route the document does not describe may only answer an error
//     (status 400 or more) whose body is the error envelope;
//   - otherwise the status must be documented for the operation, the
//     answer's headers and body must match that response (a response
//     documented without content must have no body), and when the status is
//     2xx the request must match the operation too (parameters and body:
//     an accepted request the document calls invalid is drift as well).
//
// Errors: a sentence naming the exchange and what does not match.
func (v *Validator) Validate(ctx context.Context, x Exchange) error {
	method := strings.ToUpper(x.Method)
	name := fmt.Sprintf("%s %s %d", method, x.Path, x.Status)
	if err := v.validate(ctx, method, x); err != nil {
		return fmt.Errorf("%s does not match docs/openapi.json: %w", name, err)
	}
	v.mu.Lock()
	v.seen[name]++
	v.mu.Unlock()
	return nil
}

func (v *Validator) validate(ctx context.Context, method string, x Exchange) error {
	if method == http.MethodOptions {
		if x.Status != http.StatusNoContent || len(x.Body) > 0 {
			return fmt.Errorf("a preflight answers 204 with no body, not %d with %d bytes", x.Status, len(x.Body))
		}
		return nil
	}
	item := v.doc.Paths.Value(x.Path)
	var op *openapi3.Operation
	if item != nil {
		op = item.GetOperation(method)
	}
	if op == nil {
		if x.Status < 400 {
			return fmt.Errorf("the document has no operation %s %s, yet it answered %d", method, x.Path, x.Status)
		}
		return v.validateErrorBody(x.Body)
	}

	req, err := newHTTPRequest(method, x)
	if err != nil {
		return err
	}
	opts := &openapi3filter.Options{
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		IncludeResponseStatus: true,
	}
	in := &openapi3filter.RequestValidationInput{
		Request:    req,
		PathParams: x.PathParams,
		Route:      &routers.Route{Spec: v.doc, Path: x.Path, PathItem: item, Method: method, Operation: op},
		Options:    opts,
	}
	if x.Status >= 200 && x.Status < 300 {
		if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
			return fmt.Errorf("the accepted request: %w", err)
		}
	}
	documented := op.Responses.Status(x.Status)
	if documented == nil || documented.Value == nil {
		return fmt.Errorf("status %d is not documented for the operation", x.Status)
	}
	if len(documented.Value.Content) == 0 && len(x.Body) > 0 {
		return fmt.Errorf("the document gives status %d no body, yet it has %d bytes", x.Status, len(x.Body))
	}
	header := http.Header{}
	for k, val := range x.Headers {
		header.Set(k, val)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 x.Status,
		Header:                 header,
		Options:                opts,
	}
	out.SetBodyBytes(x.Body)
	return openapi3filter.ValidateResponse(ctx, out)
}

// validateErrorBody checks body against the error envelope's schema.
func (v *Validator) validateErrorBody(body []byte) error {
	var value any
	if err := json.Unmarshal(body, &value); err != nil {
		return fmt.Errorf("the error body is not JSON: %w", err)
	}
	return v.errorSchema.Value.VisitJSON(value, openapi3.EnableJSONSchema2020(), openapi3.VisitAsResponse())
}

// newHTTPRequest rebuilds the request for openapi3filter: the path template
// filled with the parameters, the query, the headers and the body.
func newHTTPRequest(method string, x Exchange) (*http.Request, error) {
	path := x.Path
	for k, val := range x.PathParams {
		path = strings.ReplaceAll(path, "{"+k+"}", url.PathEscape(val))
	}
	q := url.Values{}
	for k, val := range x.Query {
		q.Set(k, val)
	}
	u := &url.URL{Scheme: "https", Host: "sandman.test", Path: path, RawQuery: q.Encode()}
	var body io.Reader = http.NoBody
	if len(x.RequestBody) > 0 {
		body = bytes.NewReader(x.RequestBody)
	}
	req, err := http.NewRequest(method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("rebuild the request: %w", err)
	}
	for k, val := range x.RequestHeaders {
		req.Header.Set(k, val)
	}
	if len(x.RequestBody) > 0 && req.Header.Get("Content-Type") == "" {
		// The API reads a body as JSON whatever its Content-Type (the
		// document says so); so does the check.
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// Count returns how many exchanges validated.
func (v *Validator) Count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for _, c := range v.seen {
		n += c
	}
	return n
}

// Summary returns one line per "METHOD /path STATUS" validated, with its
// count, sorted, for a test's closing report.
func (v *Validator) Summary() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	lines := make([]string, 0, len(v.seen))
	for k, c := range v.seen {
		lines = append(lines, fmt.Sprintf("%s ×%d", k, c))
	}
	slices.Sort(lines)
	return lines
}
