// Command serve runs a consoletest.Stack on loopback for the console's
// browser test (internal/localstack/testdata/console.test.mjs starts it):
// the console over the real API handlers on memstore and the fake
// provider, seeded with -sessions sessions of which -live are live (the
// newest paused one with -checkpoints checkpoints of every state), plus
// the test's /control/ routes. It prints the base URL
// ("http://127.0.0.1:PORT") on its first stdout line and serves until stdin
// closes or it is signalled.
//
// Usage: go run ./internal/localstack/consoletest/serve [-addr 127.0.0.1:0] [-sessions 500] [-live 20] [-checkpoints 25]
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/localstack/consoletest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	sessions := flag.Int("sessions", 500, "sessions to seed")
	live := flag.Int("live", 20, "of which live (the rest killed)")
	checkpoints := flag.Int("checkpoints", 25, "checkpoints of the newest paused session")
	flag.Parse()
	stack, err := consoletest.New(nil)
	var seeded []*lifecycle.Session
	if err == nil {
		seeded, err = stack.Seed(*sessions, *live, time.Now().Add(-24*time.Hour))
	}
	for i := len(seeded) - 1; err == nil && i >= 0 && *checkpoints > 0; i-- {
		if seeded[i].State == lifecycle.StatePaused {
			_, err = stack.SeedCheckpoints(seeded[i], *checkpoints, time.Now().Add(-23*time.Hour))
			break
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
	stack.Feed.KeepAlive = 2 * time.Second
	fmt.Printf("http://%s\n", ln.Addr())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	if err := http.Serve(ln, stack.Control()); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
}
