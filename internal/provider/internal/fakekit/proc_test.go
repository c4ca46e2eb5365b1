package fakekit_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

func TestProc(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := fakekit.StartProc("c1", "wrapped: python3 -m http.server 3000", "python3 -m http.server 3000", at)
	if p.Exit != nil || p.Code() != 0 || !slices.Equal(p.Ports, []int{3000}) || p.Line != "wrapped: python3 -m http.server 3000" {
		t.Fatalf("proc = %+v", p)
	}
	if p.Listens(3000, at.Add(time.Second), 2*time.Second) || !p.Listens(3000, at.Add(2*time.Second), 2*time.Second) {
		t.Error("it listens before its boot delay, or not after it")
	}
	if p.Listens(3001, at.Add(time.Hour), 0) {
		t.Error("it listens on a port its line does not name")
	}
	if q := fakekit.StartProc("c2", "x", "npm run dev --no-listen -p 3000", at); q.Listens(3000, at.Add(time.Hour), 0) {
		t.Error("a --no-listen command listens")
	}
	e := fakekit.StartProc("c3", "x", "sh -c 'exit 3'", at)
	if e.Code() != 3 || e.Output != "starting\nexited with 3\n" || e.Listens(3000, at, 0) {
		t.Errorf("exit 3 = %+v", e)
	}
	e.Exited(0, "done")
	if e.Exit == nil || *e.Exit != 0 || e.Output != "done" {
		t.Errorf("Exited = %+v", e)
	}
}
