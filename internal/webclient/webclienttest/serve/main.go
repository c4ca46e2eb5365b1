// Command serve runs a webclienttest.Server on loopback for the browser
// test (internal/webclient/webclienttest/testdata/client.test.mjs starts it).
// It prints the base URL ("http://127.0.0.1:PORT") on its first stdout line
// and serves until stdin closes or it is signalled.
//
// Usage: go run ./internal/webclient/webclienttest/serve [-addr 127.0.0.1:0] [-tokens t1,t2]
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/sandmanhq/sandman/internal/webclient/webclienttest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	tokens := flag.String("tokens", "tok-1", "comma-separated valid tokens")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
	var srv http.Handler = webclienttest.New([]byte(`{"state":"running","sandbox_paused":false,"preview_url":"http://127.0.0.1:1/"}`), strings.Split(*tokens, ",")...)
	fmt.Printf("http://%s\n", ln.Addr())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	if err := http.Serve(ln, srv); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
}
