package daytonatest

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/daytona/daytonahook"
)

// svixSender posts the fake's state changes to a webhook URL as
// Daytona does through Svix (daytonahook's body and signature), one at a
// time, in order. A delivery answered 5xx (the session is changing state)
// is retried twice, a second apart; one that still fails is logged and
// dropped (Daytona can lose events too: the sweep reconciles).
type svixSender struct {
	url, secret string
	log         *slog.Logger
	client      *http.Client
	ch          chan StateChange
	done        chan struct{}
	closing     atomic.Bool // no retries once the stack stops
}

func newSvixSender(url, secret string, log *slog.Logger) *svixSender {
	s := &svixSender{url: url, secret: secret, log: log, client: &http.Client{Timeout: 10 * time.Second},
		ch: make(chan StateChange, 256), done: make(chan struct{})}
	go s.run()
	return s
}

// send queues one change; a full queue drops it (logged).
func (s *svixSender) send(c StateChange) {
	select {
	case s.ch <- c:
	default:
		s.log.Warn("webhook queue full; event dropped", "sandbox_id", c.SandboxID, "new_state", c.NewState)
	}
}

// close stops the sender once the queue is delivered.
func (s *svixSender) close() {
	s.closing.Store(true)
	close(s.ch)
	<-s.done
}

func (s *svixSender) run() {
	defer close(s.done)
	for c := range s.ch {
		body := daytonahook.NewStateBody(c.SandboxID, DefaultOrganizationID, c.OldState, c.NewState, c.At)
		if c.OldState == "" {
			at := c.At.UTC().Format(time.RFC3339Nano)
			body = daytonahook.Body{Event: daytonahook.TypeSandboxCreated, Timestamp: at, ID: c.SandboxID,
				OrganizationID: DefaultOrganizationID, State: c.NewState, CreatedAt: at}
		}
		raw, err := json.Marshal(body)
		if err != nil {
			continue // a struct of strings always encodes
		}
		msgID := "msg_" + strings.ToLower(rand.Text())
		for attempt := 0; attempt < 3; attempt++ {
			if attempt > 0 {
				time.Sleep(time.Second)
			}
			status, err := s.post(msgID, raw)
			if (err == nil && status < 500) || s.closing.Load() {
				break
			}
			s.log.Debug("webhook delivery failed", "sandbox_id", c.SandboxID, "status", status, "err", err, "attempt", attempt+1)
		}
	}
}

// post delivers one signed message and returns the answer's status.
func (s *svixSender) post(msgID string, raw []byte) (int, error) {
	h, err := daytonahook.Header(s.secret, msgID, time.Now(), raw)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(raw))
	if err != nil {
		return 0, err
	}
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}
