package localsandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/sandmanhq/sandman/internal/e2bhook"
)

// E2B's webhook event types and their labels (shared/providers/e2b.md,
// "Lifecycle webhooks"). The local provider sends these four.
const (
	eventCreated = "sandbox.lifecycle.created"
	eventPaused  = "sandbox.lifecycle.paused"
	eventResumed = "sandbox.lifecycle.resumed"
	eventKilled  = "sandbox.lifecycle.killed"
)

// eventLabels maps an event type to its event_label.
var eventLabels = map[string]string{
	eventCreated: "create",
	eventPaused:  "pause",
	eventResumed: "resume",
	eventKilled:  "kill",
}

// E2B's kill_reason values the local provider reports.
const (
	killReasonRequest = "request"
	killReasonTimeout = "timeout"
)

// webhookEvent is the JSON body of an E2B lifecycle webhook, version "v2".
// Field names are E2B's, exactly.
type webhookEvent struct {
	ID                 string           `json:"id"`
	Version            string           `json:"version"`
	Type               string           `json:"type"`
	Timestamp          string           `json:"timestamp"`
	EventCategory      string           `json:"event_category"`
	EventLabel         string           `json:"event_label"`
	SandboxID          string           `json:"sandbox_id"`
	SandboxExecutionID string           `json:"sandbox_execution_id"`
	SandboxTemplateID  string           `json:"sandbox_template_id"`
	SandboxBuildID     string           `json:"sandbox_build_id"`
	SandboxTeamID      string           `json:"sandbox_team_id"`
	EventData          webhookEventData `json:"event_data"`
}

// webhookEventData is event_data: sandbox_metadata always, execution on
// paused and killed, kill_reason on killed.
type webhookEventData struct {
	SandboxMetadata map[string]string `json:"sandbox_metadata"`
	Execution       *webhookExecution `json:"execution,omitempty"`
	KillReason      string            `json:"kill_reason,omitempty"`
}

// webhookExecution describes the run that a pause or kill ended.
type webhookExecution struct {
	StartedAt     string `json:"started_at"`     // RFC 3339
	VCPUCount     int    `json:"vcpu_count"`     // the host's CPUs: a local sandbox has no quota
	MemoryMB      int    `json:"memory_mb"`      // 0: a local sandbox has no memory quota
	ExecutionTime int64  `json:"execution_time"` // milliseconds the run lasted
}

// newEvent returns the webhook event of type typ for rec at now. killReason
// is used by killed events only.
func (p *Provider) newEvent(typ string, rec record, now time.Time, killReason string) webhookEvent {
	md := rec.Metadata
	if md == nil {
		md = map[string]string{}
	}
	ev := webhookEvent{
		ID:                 newUUID(),
		Version:            "v2",
		Type:               typ,
		Timestamp:          now.UTC().Format(time.RFC3339Nano),
		EventCategory:      "lifecycle",
		EventLabel:         eventLabels[typ],
		SandboxID:          rec.ID,
		SandboxExecutionID: rec.ExecutionID,
		SandboxTemplateID:  rec.Template,
		SandboxBuildID:     "local-" + rec.Template,
		SandboxTeamID:      p.cfg.TeamID,
		EventData:          webhookEventData{SandboxMetadata: md},
	}
	if typ == eventPaused || typ == eventKilled {
		ev.EventData.Execution = &webhookExecution{
			StartedAt:     rec.ExecutionStartedAt.UTC().Format(time.RFC3339Nano),
			VCPUCount:     runtime.NumCPU(),
			ExecutionTime: max(now.Sub(rec.ExecutionStartedAt), 0).Milliseconds(),
		}
	}
	if typ == eventKilled {
		ev.EventData.KillReason = killReason
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

// send queues ev for delivery and returns at once. After close it only logs.
func (n *notifier) send(ev webhookEvent) {
	log := n.log.With("event_id", ev.ID, "type", ev.Type, "sandbox_id", ev.SandboxID)
	body, err := json.Marshal(ev)
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
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-n.ctx.Done():
			t.Stop()
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
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "sandman-localsandbox")
	req.Header.Set("e2b-webhook-id", n.webhookID)
	req.Header.Set("e2b-delivery-id", newUUID())
	req.Header.Set("e2b-signature-version", "v1")
	req.Header.Set("e2b-signature", e2bhook.Sign(n.secret, body))
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
