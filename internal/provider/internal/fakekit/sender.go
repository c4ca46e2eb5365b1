package fakekit

import (
	"bytes"
	"crypto/rand"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Sender posts a fake's webhooks to one URL as its provider would: one at
// a time, in order, each signed (Sign). A delivery answered 5xx (the
// receiver is busy) or not answered is retried twice, a second apart; one
// that still fails is logged and dropped (providers lose events too: the
// sweep reconciles). A full queue (256) drops what is sent (logged).
type Sender struct {
	url     string
	sign    func(msgID string, at time.Time, body []byte) (http.Header, error)
	log     *slog.Logger
	client  *http.Client
	ch      chan []byte
	done    chan struct{}
	closing atomic.Bool // no retries once the fake stops
}

// NewSender starts a Sender posting to url. sign returns the headers that
// sign body as message msgID (msg_<random>) sent at at, such as Svix's.
func NewSender(url string, sign func(msgID string, at time.Time, body []byte) (http.Header, error), log *slog.Logger) *Sender {
	s := &Sender{url: url, sign: sign, log: log, client: &http.Client{Timeout: 10 * time.Second},
		ch: make(chan []byte, 256), done: make(chan struct{})}
	go s.run()
	return s
}

// Send queues body; attrs (slog pairs) describe it in the log lines.
func (s *Sender) Send(body []byte, attrs ...any) {
	select {
	case s.ch <- body:
	default:
		s.log.Warn("webhook queue full; event dropped", attrs...)
	}
}

// Close stops the Sender once the queue is delivered (without retries).
func (s *Sender) Close() {
	s.closing.Store(true)
	close(s.ch)
	<-s.done
}

func (s *Sender) run() {
	defer close(s.done)
	for body := range s.ch {
		msgID := "msg_" + strings.ToLower(rand.Text())
		for attempt := 0; attempt < 3; attempt++ {
			if attempt > 0 {
				time.Sleep(time.Second)
			}
			status, err := s.post(msgID, body)
			if (err == nil && status < 500) || s.closing.Load() {
				break
			}
			s.log.Debug("webhook delivery failed", "msg_id", msgID, "status", status, "err", err, "attempt", attempt+1)
		}
	}
}

// post delivers one signed message and returns the answer's status.
func (s *Sender) post(msgID string, body []byte) (int, error) {
	h, err := s.sign(msgID, time.Now(), body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(body))
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
