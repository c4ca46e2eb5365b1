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
type Gateway struct {
	// Functions maps a function name (routes.Sessions, ...) to its handler.
	Functions map[string]HTTPHandler
	// CORSOrigin is sent on preflight answers (API Gateway answers OPTIONS
	// itself when CORS is configured); default "*".
	CORSOrigin string
	Log        *slog.Logger
	// Now returns the request time (default time.Now).
	Now func() time.Time
}

var _ http.Handler = (*Gateway)(nil)

// ServeHTTP routes one request.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodOptions {
		g.preflight(w)
		return
	}
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
	if err := WriteResponse(w, resp); err != nil {
		g.log().Error("write response", "function", route.Function, "err", err)
	}
}

func (g *Gateway) log() *slog.Logger {
	if g.Log == nil {
		return slog.Default()
	}
	return g.Log
}

func (g *Gateway) preflight(w http.ResponseWriter) {
	origin := g.CORSOrigin
	if origin == "" {
		origin = "*"
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Idempotency-Key, X-Api-Key")
	h.Set("Access-Control-Max-Age", "3600")
	w.WriteHeader(http.StatusNoContent)
}

// Match finds the route for method and path in routes.Table and returns its
// path parameters.
func Match(method, path string) (routes.Route, map[string]string, bool) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for _, rt := range routes.Table {
		if rt.Method != method {
			continue
		}
		tmpl := strings.Split(strings.Trim(rt.Path, "/"), "/")
		if len(tmpl) != len(segs) {
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
