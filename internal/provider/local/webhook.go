package local

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/e2bhook"
)

// newEvent returns the webhook body of type typ for rec at now, in E2B's
// wire format (e2bhook.Body). killReason is used by killed events only: one
// of the e2bhook Kill constants. Paused and killed events carry the run that
// ended: the host's CPU count as vcpu_count (a local sandbox has no quota),
// memory_mb 0 (no memory quota) and execution_time in milliseconds.
func (p *Provider) newEvent(typ lifecycle.ProviderEventType, rec record, now time.Time, killReason string) e2bhook.Body {
	ev := e2bhook.NewBody(lifecycle.ProviderEvent{
		ID:         newUUID(),
		Type:       typ,
		SandboxID:  rec.ID,
		Timestamp:  now,
		KillReason: killReason,
	}, rec.Metadata)
	ev.SandboxExecutionID = rec.ExecutionID
	ev.SandboxTemplateID = rec.Template
	ev.SandboxBuildID = "local-" + rec.Template
	ev.SandboxTeamID = p.cfg.TeamID
	if typ == lifecycle.ProviderEventPaused || typ == lifecycle.ProviderEventKilled {
		ev.EventData.Execution = &e2bhook.Execution{
			StartedAt:     rec.ExecutionStartedAt.UTC().Format(time.RFC3339Nano),
			VCPUCount:     int64(runtime.NumCPU()),
			ExecutionTime: float64(max(now.Sub(rec.ExecutionStartedAt), 0).Milliseconds()),
		}
	}
	return ev
}

// notifier delivers webhooks in the background, each with a few attempts
// and exponential backoff, and tracks deliveries in flight for flush.
type notifier struct {
	url, secret, webhookID string
	client                 *http.Client
	attempts               int
	backoff, timeout       time.Duration
	log                    *slog.Logger

	ctx    context.Context // cancelled by close when its wait ran out
	cancel context.CancelFunc

	mu       sync.Mutex
	inflight int
	idle     chan struct{} // closed when inflight drops to 0
	closed   bool
}

// newNotifier returns a notifier for cfg's webhook settings.
func newNotifier(cfg Config) *notifier {
	ctx, cancel := context.WithCancel(context.Background())
	return &notifier{
		url: cfg.WebhookURL, secret: cfg.WebhookSecret, webhookID: cfg.WebhookID,
		client: cfg.HTTPClient, attempts: max(cfg.WebhookAttempts, 1),
		backoff: cfg.WebhookBackoff, timeout: cfg.WebhookTimeout,
		log: cfg.Logger, ctx: ctx, cancel: cancel,
	}
}

// send queues ev for delivery and returns at once. After close it only logs;
// a body e2bhook.Build refuses is logged and not sent.
func (n *notifier) send(ev e2bhook.Body) {
	log := n.log.With("event_id", ev.ID, "type", ev.Type, "sandbox_id", ev.SandboxID)
	body, err := e2bhook.Build(ev)
	if err != nil {
		log.Error("encode webhook", "err", err)
		return
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		log.Warn("webhook not sent: the provider is closed")
		return
	}
	if n.inflight == 0 {
		n.idle = make(chan struct{})
	}
	n.inflight++
	n.mu.Unlock()
	go func() {
		defer n.done()
		n.deliver(log, ev.ID, body)
	}()
}

// done marks one delivery finished.
func (n *notifier) done() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.inflight--
	if n.inflight == 0 {
		close(n.idle)
	}
}

// deliver tries body until one attempt succeeds, the response says a retry
// cannot help, the attempts run out, or the notifier is cancelled.
func (n *notifier) deliver(log *slog.Logger, eventID string, body []byte) {
	wait := n.backoff
	for attempt := 1; ; attempt++ {
		retry, err := n.post(body)
		if err == nil {
			log.Debug("webhook delivered", "attempt", attempt)
			return
		}
		if !retry || attempt >= n.attempts {
			log.Warn("webhook not delivered", "attempt", attempt, "err", err)
			return
		}
		log.Info("webhook attempt failed; retrying", "attempt", attempt, "backoff", wait, "err", err)
		if err := lifecycle.Sleep(n.ctx, wait); err != nil {
			log.Warn("webhook not delivered: the provider closed", "attempt", attempt)
			return
		}
		wait *= 2
	}
}

// post makes one delivery attempt. retry reports whether another attempt
// may succeed: after a network error, a timeout, 408, 429 or a 5xx.
func (n *notifier) post(body []byte) (retry bool, err error) {
	ctx, cancel := context.WithTimeout(n.ctx, n.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.url, bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("build webhook request: %w", err)
	}
	req.Header = e2bhook.Header(n.secret, n.webhookID, newUUID(), body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "sandman-localsandbox")
	resp, err := n.client.Do(req)
	if err != nil {
		return true, fmt.Errorf("post webhook: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return false, nil
	case c == http.StatusRequestTimeout || c == http.StatusTooManyRequests || c >= 500:
		return true, fmt.Errorf("post webhook: status %d", c)
	default:
		return false, fmt.Errorf("post webhook: status %d", c)
	}
}

// flush waits until no delivery is in flight or ctx is done.
func (n *notifier) flush(ctx context.Context) error {
	n.mu.Lock()
	if n.inflight == 0 {
		n.mu.Unlock()
		return nil
	}
	idle := n.idle
	n.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for webhook deliveries: %w", ctx.Err())
	}
}

// close stops new deliveries and waits for those in flight; when ctx ends
// first it abandons them (they stop at their next attempt or backoff).
func (n *notifier) close(ctx context.Context) error {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	err := n.flush(ctx)
	n.cancel()
	return err
}
