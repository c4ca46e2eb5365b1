package delivery_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/testenv"
)

// npmReceiver is testdata/receiver.js running under
// scripts/standardwebhooks.sh: a receiver that verifies with the npm
// `standardwebhooks` library, the one customers use.
type npmReceiver struct {
	url     string
	secrets string // the file of secrets it verifies with
	lines   chan npmResult
}

type npmResult struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Verified []bool `json:"verified"`
}

func startNPMReceiver(t *testing.T) *npmReceiver {
	t.Helper()
	testenv.Tool(t, "node", "apt-get install nodejs npm")
	r := &npmReceiver{secrets: filepath.Join(t.TempDir(), "secrets"), lines: make(chan npmResult, 16)}
	if err := os.WriteFile(r.secrets, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "bash", "../../scripts/standardwebhooks.sh", "testdata/receiver.js")
	cmd.Env = append(os.Environ(), "SECRETS_FILE="+r.secrets)
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); cancel(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	ready := make(chan int, 1)
	go func() {
		first := true
		for sc.Scan() {
			if first {
				var p struct{ Port int }
				_ = json.Unmarshal(sc.Bytes(), &p)
				ready <- p.Port
				first = false
				continue
			}
			var res npmResult
			if json.Unmarshal(sc.Bytes(), &res) == nil {
				r.lines <- res
			}
		}
	}()
	select {
	case port := <-ready:
		r.url = fmt.Sprintf("http://127.0.0.1:%d/hooks", port)
	case <-time.After(5 * time.Minute): // the first run installs the package
		t.Fatal("the npm receiver did not start")
	}
	return r
}

func (r *npmReceiver) verifyWith(t *testing.T, secrets ...string) {
	t.Helper()
	if err := os.WriteFile(r.secrets, []byte(strings.Join(secrets, ",")), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (r *npmReceiver) next(t *testing.T) npmResult {
	t.Helper()
	select {
	case res := <-r.lines:
		return res
	case <-time.After(10 * time.Second):
		t.Fatal("the npm receiver got nothing")
		return npmResult{}
	}
}

// TestNPMVerifierAcceptsDeliveries: the npm standardwebhooks library
// verifies a delivery, and during a rotation's overlap verifies it with the
// old secret and with the new one.
func TestNPMVerifierAcceptsDeliveries(t *testing.T) {
	rcv := startNPMReceiver(t)
	r := newRig(t, "0s", private)
	ep := r.endpoint(t, "acct", rcv.url)
	ctx := context.Background()

	rcv.verifyWith(t, ep.Secret)
	ev := pausedEvent("acct", "ses_a", 3)
	if err := r.engine.Accept(ctx, ev); err != nil {
		t.Fatal(err)
	}
	r.local.Idle()
	got := rcv.next(t)
	if got.ID != ev.EventID || got.Type != "session.paused" || !slices.Equal(got.Verified, []bool{true}) {
		t.Fatalf("npm receiver: %+v, want %s verified", got, ev.EventID)
	}

	rotated, err := r.svc.RotateSecret(ctx, "acct", ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	rcv.verifyWith(t, ep.Secret, rotated.Secret)
	if err := r.engine.Accept(ctx, pausedEvent("acct", "ses_a", 4)); err != nil {
		t.Fatal(err)
	}
	r.local.Idle()
	if got := rcv.next(t); !slices.Equal(got.Verified, []bool{true, true}) {
		t.Errorf("during the overlap: verified %v with (old, new), want both", got.Verified)
	}

	rcv.verifyWith(t, "whsec_"+strings.Repeat("A", 44)) // a secret it was never given
	if err := r.engine.Accept(ctx, pausedEvent("acct", "ses_a", 5)); err != nil {
		t.Fatal(err)
	}
	r.local.Idle()
	if got := rcv.next(t); !slices.Equal(got.Verified, []bool{false}) {
		t.Errorf("with a wrong secret: verified %v, want refused", got.Verified)
	}
}
