package e2btest

import (
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

// EnvdPort is the port envd listens on in every sandbox.
const EnvdPort = 49983

// sandboxRoute finds the sandbox and port a request to the proxy is for,
// as E2B's proxy does (docs/providers/e2b.md "Running a command in the
// sandbox, and readiness"): from a Host of the form <port>-<id>.<domain>
// (what the SDK's getHost(port) builds), or, on a localhost, IP or
// sandbox.* host, from the E2b-Sandbox-Id and E2b-Sandbox-Port headers the
// SDK sends to envd. ok is false when the request names no sandbox.
func sandboxRoute(r *http.Request, domain string) (id string, port int, ok bool) {
	if n, sid, ok := fakekit.PortHost(r.Host, domain); ok && !strings.Contains(sid, ".") {
		return sid, n, true
	}
	host, sid := fakekit.Hostname(r.Host), r.Header.Get("E2b-Sandbox-Id")
	if sid == "" || !(host == "localhost" || net.ParseIP(host) != nil || strings.HasPrefix(host, "sandbox.")) {
		return "", 0, false
	}
	n, err := strconv.Atoi(r.Header.Get("E2b-Sandbox-Port"))
	if err != nil {
		return "", 0, false
	}
	return sid, n, true
}

// routed serves a request that names a sandbox (sandboxRoute) on the proxy:
// port 49983 is envd (<proxy>/<id>/…), any other port the preview
// (<proxy>/<id>/port/<port>/…). Other requests go to next.
func (s *Server) routed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, port, ok := sandboxRoute(r, Domain)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		r2 := r.Clone(r.Context())
		prefix := "/" + id
		if port != EnvdPort {
			prefix += "/port/" + strconv.Itoa(port)
		}
		r2.URL.Path = prefix + r.URL.Path
		r2.URL.RawPath = ""
		s.proxy.ServeHTTP(w, r2)
	})
}
