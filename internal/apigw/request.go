package apigw

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// MaxBodyBytes is the largest request body accepted, in bytes after base64
// decoding: 64 KiB (ours; a create with 32 metadata keys of the largest size
// fits with room to spare). A larger body answers 413 too_large.
const MaxBodyBytes = 64 << 10

// sessionIDPattern is the shape of lifecycle.NewSessionID: "ses_" and 26
// lowercase base32 characters.
var sessionIDPattern = regexp.MustCompile(`^ses_[a-z2-7]{26}$`)

// request is one API Gateway v2 event with its headers indexed by lowercase
// name (API Gateway v2 lower-cases them, the local adapter may not).
type request struct {
	event     *events.APIGatewayV2HTTPRequest
	headers   map[string]string
	requestID string
	accountID string // set once authenticated
	// clientToken: the request was authenticated by a client token, not an
	// API key; routes refuse the body fields only an API key may set.
	clientToken bool
}

func newRequest(ev *events.APIGatewayV2HTTPRequest) *request {
	h := make(map[string]string, len(ev.Headers))
	for k, v := range ev.Headers {
		h[strings.ToLower(k)] = v
	}
	return &request{event: ev, headers: h, requestID: ev.RequestContext.RequestID}
}

// method returns the HTTP method, from the request context or else the route
// key.
func (r *request) method() string {
	if m := r.event.RequestContext.HTTP.Method; m != "" {
		return strings.ToUpper(m)
	}
	m, _, _ := strings.Cut(r.event.RouteKey, " ")
	return strings.ToUpper(m)
}

// path returns the raw request path.
func (r *request) path() string {
	if r.event.RawPath != "" {
		return r.event.RawPath
	}
	return r.event.RequestContext.HTTP.Path
}

// header returns the value of the header called name (any case) and whether
// it was sent.
func (r *request) header(name string) (string, bool) {
	v, ok := r.headers[strings.ToLower(name)]
	return v, ok
}

// sessionID returns the {id} path parameter. Errors: not_found when it
// cannot be a session id.
func (r *request) sessionID() (string, error) {
	id := r.event.PathParameters["id"]
	if !sessionIDPattern.MatchString(id) {
		return "", lifecycle.Errorf(lifecycle.CodeNotFound,
			"no session with id %q: session ids are \"ses_\" followed by 26 lowercase base32 characters", truncate(id, 64))
	}
	return id, nil
}

// queryInt returns the query parameter name as an integer in [lo, hi], or
// def when it is absent. Errors: invalid naming the parameter.
func (r *request) queryInt(name string, def, lo, hi int) (int, error) {
	v, ok := r.event.QueryStringParameters[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, invalidf("query parameter %s must be a whole number between %d and %d", name, lo, hi)
	}
	return n, nil
}

// body returns the request body, base64-decoded when API Gateway encoded it.
// Errors: too_large over MaxBodyBytes, invalid for bad base64.
func (r *request) body() ([]byte, error) {
	raw := r.event.Body
	if !r.event.IsBase64Encoded {
		if len(raw) > MaxBodyBytes {
			return nil, tooLarge()
		}
		return []byte(raw), nil
	}
	if base64.StdEncoding.DecodedLen(len(raw)) > MaxBodyBytes+2 {
		return nil, tooLarge()
	}
	b, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return nil, invalidf("the request body is not valid base64")
	}
	if len(b) > MaxBodyBytes {
		return nil, tooLarge()
	}
	return b, nil
}

func tooLarge() error {
	return lifecycle.Errorf(lifecycle.CodeTooLarge, "the request body is larger than %d bytes", MaxBodyBytes)
}

// decodeJSON decodes the body, which must be one JSON object whose fields
// all name a json tag of dst (a pointer to a struct), exactly. An empty body
// is an error unless allowEmpty. Errors: invalid (naming the field),
// too_large.
func (r *request) decodeJSON(dst any, allowEmpty bool) error {
	b, err := r.body()
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		if allowEmpty {
			return nil
		}
		return invalidf("the request body must be a JSON object")
	}
	// First pass: one object, no trailing data, only known field names. Go's
	// decoder matches field names case-insensitively; this check does not.
	var fields map[string]json.RawMessage
	if err := decodeOne(b, &fields); err != nil {
		return err
	}
	allowed := jsonFieldNames(dst)
	for name := range fields {
		if !allowed[name] {
			return invalidf("unknown field %q in the request body", truncate(name, 64))
		}
	}
	// Second pass: types.
	return decodeOne(b, dst)
}

// decodeOne decodes exactly one JSON value from b into dst, rejecting
// unknown fields and trailing data, and words any error for a caller.
func decodeOne(b []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err, dst)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return invalidf("the request body must hold exactly one JSON object")
	}
	return nil
}

// jsonError turns a decoding error into a 400 that names the field of dst
// at fault.
func jsonError(err error, dst any) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var app *lifecycle.Error
	switch {
	case errors.As(err, &app): // from a field's own UnmarshalJSON
		return app
	case errors.As(err, &syntax):
		return invalidf("the request body is not valid JSON (at byte %d)", syntax.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return invalidf("the request body is not valid JSON (it ends too early)")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return invalidf("the request body must be a JSON object")
		}
		want := typ.Type
		if ft, ok := jsonFieldType(dst, typ.Field); ok {
			// For a map or slice field the error names the element's type:
			// describe the field as a whole instead.
			want = ft
		}
		return invalidf("%s must be %s", typ.Field, describeType(want))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return invalidf("unknown field %s in the request body", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return invalidf("the request body is not valid: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// describeType names a Go type the way a JSON caller thinks of it.
func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Map:
		if t.Elem().Kind() == reflect.String {
			return "an object of string values"
		}
		return "an object"
	case reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "a value of another JSON type"
}

// jsonFieldType returns the type of the top-level field of the struct dst
// points to whose json name is name.
func jsonFieldType(dst any, name string) (reflect.Type, bool) {
	t := reflect.TypeOf(dst)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag == name {
			return f.Type, true
		}
	}
	return nil, false
}

// jsonFieldNames returns the json names of the fields of the struct dst
// points to.
func jsonFieldNames(dst any) map[string]bool {
	t := reflect.TypeOf(dst)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	names := make(map[string]bool, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case name == "":
			names[f.Name] = true
		default:
			names[name] = true
		}
	}
	return names
}

// truncate shortens s for an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// invalidf returns a CodeInvalid *lifecycle.Error; the message names the
// field at fault.
func invalidf(format string, args ...any) error {
	return lifecycle.Errorf(lifecycle.CodeInvalid, format, args...)
}

// unauthorizedf returns a CodeUnauthorized *lifecycle.Error.
func unauthorizedf(format string, args ...any) error {
	return lifecycle.Errorf(lifecycle.CodeUnauthorized, format, args...)
}
