// Package localstack runs Sandman on one machine: DynamoDB Local, the local
// process provider, and every Lambda handler served in-process behind a local
// API Gateway (HTTP API, payload v2) adapter and a local schedule.
package localstack

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/routes"
)

// HTTPHandler is a Lambda handler for API Gateway HTTP API (payload v2)
// events, as every HTTP function of Sandman exposes.
type HTTPHandler func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// maxBodyBytes is API Gateway's payload limit (10 MB).
const maxBodyBytes = 10 << 20

// Gateway is a local stand-in for API Gateway's HTTP API: it matches each
// request against routes.Table (the same table the CDK stack deploys), turns
// it into the payload v2 event API Gateway would send, calls the function's
// handler, and turns the handler's response back into HTTP.
//
// It applies CORS as API Gateway does once CORS is configured on the API
// ("Configure CORS for HTTP APIs in API Gateway", developer guide), with the
// configuration the CDK stack deploys (routes.CORSAllowHeaders,
// CORSAllowMethods, CORSExposeHeaders, CORSMaxAgeSeconds):
//   - it answers every OPTIONS request itself, 204 with no body, and calls no
//     function; the answer carries Access-Control-Allow-Origin, -Allow-Methods,
//     -Allow-Headers and -Max-Age when the request is a preflight (it has
//     Origin and Access-Control-Request-Method headers) from an allowed
//     origin;
//   - it drops every Access-Control-* header a function answers, and adds
//     Access-Control-Allow-Origin and -Expose-Headers when the request has an
//     Origin header from an allowed origin.
//
// So a header that works locally works in AWS, and one the functions send but
// the configuration lacks fails locally too.
type Gateway struct {
	// Functions maps a function name (routes.Sessions, ...) to its handler.
	Functions map[string]HTTPHandler
	// CORSOrigin is the one allowed origin, as the stack's
	// CORSAllowOrigins; "" or "*" (the default) allows every origin and
	// answers Access-Control-Allow-Origin: *. Any other value allows only a
	// request whose Origin header is exactly it.
	CORSOrigin string
	// Log receives integration failures. Default slog.Default().
	Log *slog.Logger
	// Now returns the request time (default time.Now).
	Now func() time.Time
}

var _ http.Handler = (*Gateway)(nil)

// CORS header values, from the API's one configuration in internal/routes.
var (
	corsAllowHeaders  = strings.Join(routes.CORSAllowHeaders, ", ")
	corsAllowMethods  = strings.Join(routes.CORSAllowMethods, ", ")
	corsExposeHeaders = strings.Join(routes.CORSExposeHeaders, ", ")
	corsMaxAge        = strconv.Itoa(routes.CORSMaxAgeSeconds)
)

// ServeHTTP routes one request.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodOptions {
		g.preflight(w, r)
		return
	}
	if origin, ok := g.allowedOrigin(r); ok {
		// Set before anything is written, so gateway errors carry them too;
		// a function's own Access-Control-* headers are dropped below.
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Set("Access-Control-Expose-Headers", corsExposeHeaders)
	}
	// API Gateway's HTTP API routes on, and sends, the decoded path: see
	// Event.
	route, params, ok := Match(r.Method, r.URL.Path)
	if !ok {
		writeGatewayError(w, http.StatusNotFound, "Not Found")
		return
	}
	h := g.Functions[route.Function]
	if h == nil {
		writeGatewayError(w, http.StatusNotFound, "Not Found")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		writeGatewayError(w, http.StatusBadRequest, "Bad Request")
		return
	}
	if len(body) > maxBodyBytes {
		writeGatewayError(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
		return
	}
	ev := g.Event(r, route, params, body)
	resp, err := h(r.Context(), ev)
	if err != nil {
		// API Gateway answers 500 when the integration fails.
		g.log().Error("lambda handler failed", "function", route.Function, "request_id", ev.RequestContext.RequestID, "err", err)
		writeGatewayError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	if err := WriteResponse(w, withoutCORS(resp)); err != nil {
		g.log().Error("write response", "function", route.Function, "err", err)
	}
}

func (g *Gateway) log() *slog.Logger {
	if g.Log == nil {
		return slog.Default()
	}
	return g.Log
}

// allowedOrigin returns the Access-Control-Allow-Origin to answer r with, and
// false when r is not a CORS request (no Origin header) or its origin is not
// allowed: then API Gateway adds no CORS header.
func (g *Gateway) allowedOrigin(r *http.Request) (string, bool) {
	origin := r.Header.Get("Origin")
	switch {
	case origin == "":
		return "", false
	case g.CORSOrigin == "" || g.CORSOrigin == routes.CORSAnyOrigin:
		return routes.CORSAnyOrigin, true
	case origin == g.CORSOrigin:
		return origin, true
	}
	return "", false
}

// preflight answers an OPTIONS request as API Gateway does when CORS is
// configured: 204, with the preflight headers when r is a preflight from an
// allowed origin.
func (g *Gateway) preflight(w http.ResponseWriter, r *http.Request) {
	if origin, ok := g.allowedOrigin(r); ok && r.Header.Get("Access-Control-Request-Method") != "" {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Methods", corsAllowMethods)
		h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
		h.Set("Access-Control-Max-Age", corsMaxAge)
	}
	w.WriteHeader(http.StatusNoContent)
}

// withoutCORS returns resp without its Access-Control-* headers (any case),
// which API Gateway ignores once CORS is configured on the API. resp's maps
// are not modified.
func withoutCORS(resp events.APIGatewayV2HTTPResponse) events.APIGatewayV2HTTPResponse {
	isCORS := func(name string) bool { return strings.HasPrefix(strings.ToLower(name), "access-control-") }
	if resp.Headers != nil {
		resp.Headers = maps.Clone(resp.Headers)
		maps.DeleteFunc(resp.Headers, func(k, _ string) bool { return isCORS(k) })
	}
	if resp.MultiValueHeaders != nil {
		resp.MultiValueHeaders = maps.Clone(resp.MultiValueHeaders)
		maps.DeleteFunc(resp.MultiValueHeaders, func(k string, _ []string) bool { return isCORS(k) })
	}
	return resp
}

// Match finds the route for method and path in routes.Table and returns its
// path parameters.
func Match(method, path string) (routes.Route, map[string]string, bool) {
	all := strings.Split(strings.Trim(path, "/"), "/")
	for _, rt := range routes.Table {
		if rt.Method != method {
			continue
		}
		segs := all
		tmpl := strings.Split(strings.Trim(rt.Path, "/"), "/")
		if last := tmpl[len(tmpl)-1]; strings.HasSuffix(last, "+}") {
			// A greedy {name+} takes the rest of the path, as in API
			// Gateway: at least one segment.
			if len(segs) < len(tmpl) {
				continue
			}
			rest := strings.Join(segs[len(tmpl)-1:], "/")
			segs = append(segs[:len(tmpl)-1:len(tmpl)-1], rest)
			tmpl = append(tmpl[:len(tmpl)-1:len(tmpl)-1], "{"+last[1:len(last)-2]+"}")
		} else if len(tmpl) != len(segs) {
			continue
		}
		params := map[string]string{}
		ok := true
		for i, t := range tmpl {
			if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
				if segs[i] == "" {
					ok = false
					break
				}
				params[t[1:len(t)-1]] = segs[i]
				continue
			}
			if t != segs[i] {
				ok = false
				break
			}
		}
		if ok {
			return rt, params, true
		}
	}
	return routes.Route{}, nil, false
}

// Event builds the payload v2 event API Gateway sends for r on route.
//
// RawPath and RequestContext.HTTP.Path are both the decoded path
// (r.URL.Path), as an HTTP API sends them: the payload documentation only
// shows "/my/path" for both, and live captures show an HTTP API decoding the
// path before routing and sending it decoded in both fields ("/a%20b"
// arrives as "/a b"; "/a%2Fb" as "/a/b", so a %2F inside {id} makes two
// segments and no route matches), unlike REST APIs and function URLs, which
// keep the escapes (github.com/hotsock/voker, vokerhttp/testdata). params
// are decoded too, as Match takes them from the decoded path.
func (g *Gateway) Event(r *http.Request, route routes.Route, params map[string]string, body []byte) events.APIGatewayV2HTTPRequest {
	now := time.Now
	if g.Now != nil {
		now = g.Now
	}
	t := now().UTC()
	headers := map[string]string{}
	var cookies []string
	for k, vs := range r.Header {
		lk := strings.ToLower(k)
		if lk == "cookie" {
			for _, v := range vs {
				for _, c := range strings.Split(v, ";") {
					if c = strings.TrimSpace(c); c != "" {
						cookies = append(cookies, c)
					}
				}
			}
			continue
		}
		headers[lk] = strings.Join(vs, ",")
	}
	if r.Host != "" {
		headers["host"] = r.Host
	}
	var query map[string]string
	if q := r.URL.Query(); len(q) > 0 {
		query = make(map[string]string, len(q))
		for k, vs := range q {
			query[k] = strings.Join(vs, ",")
		}
	}
	if len(params) == 0 {
		params = nil
	}
	ev := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              route.Key(),
		RawPath:               r.URL.Path,
		RawQueryString:        r.URL.RawQuery,
		Cookies:               cookies,
		Headers:               headers,
		QueryStringParameters: query,
		PathParameters:        params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:   route.Key(),
			AccountID:  "000000000000",
			Stage:      "$default",
			RequestID:  newRequestID(),
			APIID:      "local",
			DomainName: r.Host,
			Time:       t.Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:  t.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.Path,
				Protocol:  r.Proto,
				SourceIP:  sourceIP(r),
				UserAgent: r.UserAgent(),
			},
		},
	}
	if len(body) > 0 {
		if isText(headers["content-type"], body) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	return ev
}

// isText reports whether API Gateway would pass the body as text: it
// base64-encodes anything that is not text by content type.
func isText(contentType string, body []byte) bool {
	ct := strings.ToLower(contentType)
	textual := ct == "" || strings.HasPrefix(ct, "text/") || strings.Contains(ct, "json") ||
		strings.Contains(ct, "xml") || strings.Contains(ct, "x-www-form-urlencoded")
	return textual && utf8.Valid(body)
}

func sourceIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return fmt.Sprintf("%s-%s-%s-%s-%s", h[:8], h[8:12], h[12:16], h[16:20], h[20:])
}

// WriteResponse writes a payload v2 Lambda response as HTTP, as API Gateway
// does: headers, multi-value headers, cookies, and a body decoded from
// base64 when IsBase64Encoded.
func WriteResponse(w http.ResponseWriter, resp events.APIGatewayV2HTTPResponse) error {
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(resp.Body)
		if err != nil {
			writeGatewayError(w, http.StatusInternalServerError, "Internal Server Error")
			return fmt.Errorf("decode base64 response body: %w", err)
		}
		body = b
	}
	h := w.Header()
	for k, v := range resp.Headers {
		h.Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		h.Add("Set-Cookie", c)
	}
	if h.Get("Content-Type") == "" && len(body) > 0 {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	status := resp.StatusCode
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, err := w.Write(body)
	return err
}

// writeGatewayError answers as API Gateway itself does when no function
// runs: {"message": "..."}.
func writeGatewayError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, "{\"message\":%q}", msg)
}
