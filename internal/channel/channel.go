// Package channel is the client channel's server side (docs/DESIGN.md "Client
// channel"): Lambda-style handlers for the API Gateway WebSocket API's
// route keys $connect, $disconnect and $default over
// events.APIGatewayWebsocketProxyRequest, and a Notifier that pushes
// {"type":"session","session":<status body>} to every connection of a
// session after each committed transition. The local gateway hands the
// same events to the same Handler, so local and AWS cannot drift.
//
// Decisions (docs/DESIGN.md is silent on them):
//
//   - $connect takes the client token from ?token= (internal/clienttoken);
//     without a valid one it answers 401 and API Gateway refuses the
//     upgrade. A token for a session the account no longer owns is 403.
//   - A new connection counts as a visible client (sandman.js says
//     otherwise with a heartbeat when the page is hidden): presence is
//     "any visible connection of the session left". When the last one goes
//     (disconnect, or a heartbeat with visible false) the session gets its
//     away deadline (lifecycle.Service.SetPresence); a visible one clears it.
//   - {"action":"heartbeat","visible":true} is activity, coalesced like HTTP
//     heartbeats (lifecycle.Service.Heartbeat); a heartbeat on a paused
//     session is not an error on the channel (the client learns the state
//     from the push). {"action":"resume"} resumes; its outcome arrives as a
//     push. A hello (unless it says "visible":false) or a visible heartbeat
//     resumes a paused session that resumes on return, reason return
//     (lifecycle.Service.ReturnVisible; docs/WAKE.md "Resume on return"). Unknown actions and unknown fields answer 400 and are otherwise
//     ignored; hold_seconds answers 403 (a busy hold is API-key only).
//   - Connections expire from the table after ConnTTL (API Gateway closes a
//     WebSocket after 2 h at most).
//   - The status "at connect" is an answer to the client's first message,
//     {"action":"hello"} (sandman.js sends it on open): API Gateway accepts
//     no PostToConnection while $connect runs, so the server cannot push
//     first in AWS, and the local gateway does not either, so local and AWS
//     behave the same and the browser tests cover what AWS does. $default
//     answers hello with one push of the current status body.
//   - Each connection may send MaxMessagesPerSecond messages a second
//     (MessageBurst at once); past that $default answers 429 and the
//     connection is closed with 1008 (Admit, Closer). A heartbeat with the
//     same visibility within the activity granularity of the connection's
//     last one costs no table operation. Both are remembered in process
//     (per warm container in AWS); the local gateway also lets a queued
//     heartbeat replace the one queued before it (a burst of toggles
//     settles to the last).
//   - The Notifier (NewNotifier) is the push half alone: it needs the
//     table and a Pusher but no client-token keys, so the AWS notifier
//     function is given no secret (functions/notifier).
package channel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/clienttoken"
	"github.com/sandmanhq/sandman/internal/httpapi"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// The WebSocket API's route keys.
const (
	RouteConnect    = "$connect"
	RouteDisconnect = "$disconnect"
	RouteDefault    = "$default"
)

// ConnTTL is how long a connection record lives without being refreshed:
// 2 h, API Gateway's maximum WebSocket connection duration.
const ConnTTL = 2 * time.Hour

// Conn is one open WebSocket connection of a session.
type Conn = lifecycle.ClientConn

// Connections stores connections (internal/dynamo in AWS and locally;
// Memory for tests).
type Connections = lifecycle.ClientConns

// ErrGone is what a Pusher returns for a connection that no longer exists
// (API Gateway's 410 Gone); the connection record is then deleted.
var ErrGone = errors.New("connection gone")

// Pusher sends one message to one connection (the API Gateway Management
// API's PostToConnection in AWS; the local gateway's live connections
// locally). Errors: ErrGone (wrapped) for a closed connection.
type Pusher interface {
	Push(ctx context.Context, connID string, msg []byte) error
}

// Handler serves the three route keys. Build it with New.
type Handler struct {
	*Notifier
	tokens *clienttoken.Tokens
	// states: per-connection rate buckets and heartbeat coalescing
	// (limit.go).
	states connStates
	// gatewayAdmits: the gateway calls Admit for every message it reads
	// (the local gateway, which coalesces queued heartbeats before handing
	// them over), so $default does not count them again.
	gatewayAdmits bool
}

// GatewayAdmits tells h that its gateway calls Admit for every message it
// receives, before coalescing them, so $default must not count them again.
// Call it before serving.
func (h *Handler) GatewayAdmits() { h.gatewayAdmits = true }

// Admit counts one message of connection connID against its bound
// (MaxMessagesPerSecond, MessageBurst). Past it, it closes the connection
// with StatusPolicyViolation when the Pusher is a Closer, and returns
// false: the message must be dropped.
func (h *Handler) Admit(ctx context.Context, connID string) bool {
	if h.states.admit(connID, h.svc.Now()) {
		return true
	}
	h.log.WarnContext(ctx, "channel: message rate exceeded; closing the connection", "connection_id", connID)
	if c, ok := h.push.(Closer); ok {
		if err := c.Close(ctx, connID, StatusPolicyViolation, "too many messages"); err != nil && !errors.Is(err, ErrGone) {
			h.log.WarnContext(ctx, "close connection", "connection_id", connID, "err", err)
		}
	}
	return false
}

// New returns a Handler. All arguments but log are required.
func New(svc *lifecycle.Service, tokens *clienttoken.Tokens, conns Connections, push Pusher, log *slog.Logger) (*Handler, error) {
	if tokens == nil {
		return nil, fmt.Errorf("channel: client tokens are required")
	}
	n, err := NewNotifier(svc, conns, push, log)
	if err != nil {
		return nil, err
	}
	return &Handler{Notifier: n, tokens: tokens}, nil
}

// Notifier pushes a session's status to its connections: after each
// committed transition (Notify, Publish, HandleEvent) and in answer to a
// client's hello. Build it with NewNotifier; safe for concurrent use.
type Notifier struct {
	svc   *lifecycle.Service
	conns Connections
	push  Pusher
	log   *slog.Logger
}

// NewNotifier returns a Notifier. All arguments but log are required.
func NewNotifier(svc *lifecycle.Service, conns Connections, push Pusher, log *slog.Logger) (*Notifier, error) {
	if svc == nil || conns == nil || push == nil {
		return nil, fmt.Errorf("channel: a service, a connection store and a pusher are required")
	}
	if log == nil {
		log = slog.Default()
	}
	return &Notifier{svc: svc, conns: conns, push: push, log: log}, nil
}

// message is a client → server message.
type message struct {
	Action  string `json:"action"`
	Visible *bool  `json:"visible"`
	// HoldSeconds is decoded only to be refused: the channel authenticates
	// with a client token, and a busy hold is API-key only (docs/DESIGN.md
	// "Busy hold"), so a message carrying it answers 403 and writes nothing.
	HoldSeconds json.RawMessage `json:"hold_seconds"`
}

// decodeMessage decodes one client message: a JSON object with only the
// fields of message. Errors: malformed JSON, an unknown field, trailing data.
func decodeMessage(body string) (message, error) {
	var m message
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return message{}, err
	}
	if dec.More() {
		return message{}, errors.New("trailing data after the message")
	}
	return m, nil
}

// Push is a server → client message.
type Push struct {
	Type    string `json:"type"`    // "session"
	Session any    `json:"session"` // the status body (httpapi.StatusJSON)
}

// Handle serves one WebSocket event by its route key. Failures are status
// codes in the response (401/403 refuse a $connect); it returns an error
// only for a route key it does not know.
func (h *Handler) Handle(ctx context.Context, req events.APIGatewayWebsocketProxyRequest) (events.APIGatewayProxyResponse, error) {
	rc := req.RequestContext
	ctx = lifecycle.WithActor(ctx, lifecycle.ActorClient)
	var status int
	switch rc.RouteKey {
	case RouteConnect:
		status = h.connect(ctx, rc.ConnectionID, req.QueryStringParameters["token"])
	case RouteDisconnect:
		status = h.disconnect(ctx, rc.ConnectionID)
	case RouteDefault:
		status = h.message(ctx, rc.ConnectionID, req.Body)
	default:
		return events.APIGatewayProxyResponse{StatusCode: http.StatusNotFound}, fmt.Errorf("channel: unknown route key %q", rc.RouteKey)
	}
	return events.APIGatewayProxyResponse{StatusCode: status}, nil
}

func (h *Handler) connect(ctx context.Context, connID, token string) int {
	claims, err := h.tokens.Verify(token)
	if err != nil {
		return http.StatusUnauthorized
	}
	if _, err := h.svc.Get(ctx, claims.AccountID, claims.SessionID); err != nil {
		return statusOf(err)
	}
	now := h.svc.Now()
	c := Conn{ID: connID, SessionID: claims.SessionID, AccountID: claims.AccountID, Visible: true,
		ExpiresAt: now.Add(ConnTTL), SeenAt: now}
	if err := h.conns.PutConn(ctx, c); err != nil {
		h.log.ErrorContext(ctx, "store connection", "connection_id", connID, "err", err)
		return http.StatusInternalServerError
	}
	if _, _, err := h.svc.SetPresence(ctx, c.AccountID, c.SessionID, true); err != nil {
		h.log.WarnContext(ctx, "presence on connect", "session_id", c.SessionID, "err", err)
	}
	return http.StatusOK
}

func (h *Handler) disconnect(ctx context.Context, connID string) int {
	h.states.forget(connID)
	c, err := h.conns.GetConn(ctx, connID)
	if err != nil {
		return http.StatusOK // never stored, or already gone
	}
	if err := h.conns.DeleteConn(ctx, connID); err != nil {
		h.log.ErrorContext(ctx, "delete connection", "connection_id", connID, "err", err)
		return http.StatusInternalServerError
	}
	h.updatePresence(ctx, c)
	return http.StatusOK
}

func (h *Handler) message(ctx context.Context, connID, body string) int {
	if !h.gatewayAdmits && !h.Admit(ctx, connID) {
		return http.StatusTooManyRequests
	}
	m, err := decodeMessage(body)
	if err != nil {
		return http.StatusBadRequest
	}
	if m.HoldSeconds != nil {
		h.log.WarnContext(ctx, "channel message refused: hold_seconds needs an API key", "connection_id", connID)
		return http.StatusForbidden
	}
	now, granularity := h.svc.Now(), h.svc.Config().Policy.ActivityGranularity
	visible := m.Visible == nil || *m.Visible
	if m.Action == "heartbeat" && h.states.coalesce(connID, visible, now, granularity) {
		// Same visibility within the granularity of the last heartbeat
		// handled in full: nothing to record, no table operation.
		return http.StatusOK
	}
	c, err := h.conns.GetConn(ctx, connID)
	if err != nil {
		return http.StatusGone
	}
	// Record that the connection spoke (Conn.SeenAt), at most once per
	// activity granularity, so the sweep can tell it from a dead one.
	touch := now.Sub(lastSeen(c)) >= granularity
	switch m.Action {
	case "hello", "resume":
		if touch {
			c.SeenAt = now
			if err := h.conns.PutConn(ctx, c); err != nil {
				h.log.WarnContext(ctx, "store connection", "connection_id", connID, "err", err)
			}
		}
	}
	switch m.Action {
	case "hello":
		// The status at connect (see the package doc): one push now.
		sess, err := h.svc.Get(ctx, c.AccountID, c.SessionID)
		if err == nil {
			err = h.send(ctx, c, sess)
		}
		if err != nil {
			h.log.WarnContext(ctx, "channel hello", "connection_id", connID, "err", err)
			if errors.Is(err, ErrGone) {
				return http.StatusGone
			}
			return statusOf(err)
		}
		if visible {
			h.returnVisible(ctx, c)
		}
		return http.StatusOK
	case "heartbeat":
		if changed := visible != c.Visible; changed || touch {
			c.Visible, c.SeenAt = visible, now
			if err := h.conns.PutConn(ctx, c); err != nil {
				h.log.ErrorContext(ctx, "store connection", "connection_id", connID, "err", err)
				return http.StatusInternalServerError
			}
			if changed {
				h.updatePresence(ctx, c)
			}
		}
		if visible {
			h.returnVisible(ctx, c)
			if _, err := h.svc.Heartbeat(ctx, c.AccountID, c.SessionID); err != nil && !lifecycle.IsCode(err, lifecycle.CodeConflict) {
				h.log.WarnContext(ctx, "channel heartbeat", "session_id", c.SessionID, "err", err)
				return statusOf(err)
			}
		}
		h.states.beat(connID, visible, now)
		return http.StatusOK
	case "resume":
		if _, err := h.svc.Resume(ctx, c.AccountID, c.SessionID); err != nil {
			h.log.WarnContext(ctx, "channel resume", "session_id", c.SessionID, "err", err)
			// The state the resume left, if any, reaches the client as a push.
			return statusOf(err)
		}
		return http.StatusOK
	}
	return http.StatusBadRequest
}

// returnVisible tells the service a visible client of c's session is
// there (a hello, or a visible heartbeat handled in full): a paused session
// that resumes on return is resumed, reason return (docs/WAKE.md "Resume on
// return"); its states reach the client as pushes. A failure is logged.
func (h *Handler) returnVisible(ctx context.Context, c Conn) {
	if _, resumed, err := h.svc.ReturnVisible(ctx, c.AccountID, c.SessionID); err != nil {
		h.log.WarnContext(ctx, "resume on return", "session_id", c.SessionID, "resumed", resumed, "err", err)
	}
}

// updatePresence sets the session's presence from its connections: present
// while any visible connection is left; a failure is logged.
func (h *Notifier) updatePresence(ctx context.Context, c Conn) {
	if err := recomputePresence(ctx, h.svc, h.conns, c); err != nil {
		h.log.WarnContext(ctx, "set presence", "session_id", c.SessionID, "err", err)
	}
}

// send pushes sess's status to c. When c is gone (a 410 from
// PostToConnection: its socket closed without a $disconnect reaching us)
// its record is deleted and the session's presence recomputed, so a dead
// connection stops counting as a present client.
func (h *Notifier) send(ctx context.Context, c Conn, sess *lifecycle.Session) error {
	msg, err := json.Marshal(Push{Type: "session", Session: httpapi.StatusJSON(sess, lifecycle.NewEnvelope(sess, h.svc.Now()))})
	if err != nil {
		return fmt.Errorf("encode push: %w", err)
	}
	err = h.push.Push(ctx, c.ID, msg)
	if errors.Is(err, ErrGone) {
		if derr := h.conns.DeleteConn(ctx, c.ID); derr != nil {
			h.log.WarnContext(ctx, "delete gone connection", "connection_id", c.ID, "err", derr)
		} else {
			h.updatePresence(ctx, c)
		}
	}
	return err
}

// Notify pushes the current status of the session of ev to every
// connection of that session (the Notifier's work; fed by the lifecycle
// event stream). Gone connections are deleted; other push failures are
// logged and counted in the returned error.
func (h *Notifier) Notify(ctx context.Context, ev lifecycle.Event) error {
	conns, err := h.conns.SessionConns(ctx, ev.SessionID)
	if err != nil || len(conns) == 0 {
		return err
	}
	sess, err := h.svc.Get(ctx, ev.AccountID, ev.SessionID)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range conns {
		if !c.ExpiresAt.After(h.svc.Now()) {
			continue // past its TTL, not yet deleted by DynamoDB
		}
		if err := h.send(ctx, c, sess); err != nil && !errors.Is(err, ErrGone) {
			errs = append(errs, fmt.Errorf("push to %s: %w", c.ID, err))
		}
	}
	return errors.Join(errs...)
}

// Publish makes the Notifier (and so the Handler) a lifecycle.Publisher: the outbox (the table's
// stream) hands it every committed transition.
func (h *Notifier) Publish(ctx context.Context, evs ...lifecycle.Event) error {
	var errs []error
	for _, ev := range evs {
		errs = append(errs, h.Notify(ctx, ev))
	}
	return errors.Join(errs...)
}

func statusOf(err error) int {
	return httpapi.StatusFor(lifecycle.ErrorCode(err))
}
