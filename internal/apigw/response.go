package apigw

import (
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// response is what a route answers before encoding: a status, an optional
// body to encode as JSON (nil: no body) and extra headers.
type response struct {
	status  int
	body    any
	headers map[string]string
}

// timestamp encodes a time as an RFC 3339 UTC string (nanoseconds when
// present), and a zero time as null.
type timestamp time.Time

// MarshalJSON implements json.Marshaler.
func (t timestamp) MarshalJSON() ([]byte, error) {
	tt := time.Time(t)
	if tt.IsZero() {
		return []byte("null"), nil
	}
	return []byte(`"` + tt.UTC().Format(time.RFC3339Nano) + `"`), nil
}

// nullable returns nil for "" so the field encodes as null.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// sessionJSON is a session as the API shows it. Durations are whole seconds;
// max_lifetime_seconds 0 means no limit.
type sessionJSON struct {
	ID                 string            `json:"id"`
	AccountID          string            `json:"account_id"`
	Provider           string            `json:"provider"`
	Template           string            `json:"template"`
	State              string            `json:"state"`
	Reason             string            `json:"reason"`
	SandboxID          *string           `json:"sandbox_id"`
	PreviewURL         *string           `json:"preview_url"`
	Metadata           map[string]string `json:"metadata"`
	IdleTimeoutSeconds int64             `json:"idle_timeout_seconds"`
	MaxLifetimeSeconds int64             `json:"max_lifetime_seconds"`
	Version            int64             `json:"version"`
	CreatedAt          timestamp         `json:"created_at"`
	UpdatedAt          timestamp         `json:"updated_at"`
	LastActivityAt     timestamp         `json:"last_activity_at"`
	IdleDeadline       timestamp         `json:"idle_deadline"`
	// HibernateAfter is when a running session is due to be paused (the
	// earlier of idle_deadline and the max lifetime); null otherwise.
	HibernateAfter   timestamp `json:"hibernate_after"`
	RunningSince     timestamp `json:"running_since"`
	PausedAt         timestamp `json:"paused_at"`
	SandboxExpiresAt timestamp `json:"sandbox_expires_at"`
	// AwayTimeoutSeconds (0: presence off) and AwayDeadline (null unless
	// the last visible client left): docs/DESIGN.md "Client channel".
	AwayTimeoutSeconds int64     `json:"away_timeout_seconds"`
	AwayDeadline       timestamp `json:"away_deadline"`
	// App is the session's app spec (null: none); Readiness ("starting",
	// "ready", "failed"; null without an app or when not running),
	// ReadinessDetail and ReadyAt: docs/READINESS.md.
	App *appJSON `json:"app"`
	readinessJSON
}

// readinessJSON is the readiness of a session as every body that shows a
// session carries it (docs/READINESS.md "Readiness").
type readinessJSON struct {
	Readiness       *string   `json:"readiness"`
	ReadinessDetail *string   `json:"readiness_detail"`
	ReadyAt         timestamp `json:"ready_at"`
}

func newReadinessJSON(s *lifecycle.Session) readinessJSON {
	return readinessJSON{Readiness: nullable(string(s.Readiness)), ReadinessDetail: nullable(s.ReadinessDetail),
		ReadyAt: timestamp(s.ReadyAt)}
}

// appJSON is an app spec as the API shows and takes it.
type appJSON struct {
	Port                int               `json:"port"`
	StartCommand        string            `json:"start_command"`
	Cwd                 string            `json:"cwd"`
	Env                 map[string]string `json:"env"`
	ReadyPath           string            `json:"ready_path"`
	ReadyTimeoutSeconds int64             `json:"ready_timeout_seconds"`
}

func newAppJSON(a *lifecycle.AppSpec) *appJSON {
	if a == nil {
		return nil
	}
	env := a.Env
	if env == nil {
		env = map[string]string{}
	}
	return &appJSON{Port: a.Port, StartCommand: a.StartCommand, Cwd: a.Cwd, Env: env, ReadyPath: a.ReadyPath,
		ReadyTimeoutSeconds: int64(a.ReadyTimeout / time.Second)}
}

func newSessionJSON(s *lifecycle.Session) sessionJSON {
	meta := s.Metadata
	if meta == nil {
		meta = map[string]string{}
	}
	var hibernate time.Time
	if s.State == lifecycle.StateRunning {
		hibernate = s.PauseDeadline()
	}
	return sessionJSON{
		ID:                 s.ID,
		AccountID:          s.AccountID,
		Provider:           s.Provider,
		Template:           s.Template,
		State:              string(s.State),
		Reason:             s.Reason,
		SandboxID:          nullable(s.SandboxID),
		PreviewURL:         nullable(s.PreviewURL),
		Metadata:           meta,
		IdleTimeoutSeconds: int64(s.IdleTimeout / time.Second),
		MaxLifetimeSeconds: int64(s.MaxLifetime / time.Second),
		Version:            s.Version,
		CreatedAt:          timestamp(s.CreatedAt),
		UpdatedAt:          timestamp(s.UpdatedAt),
		LastActivityAt:     timestamp(s.LastActivityAt),
		IdleDeadline:       timestamp(s.IdleDeadline),
		HibernateAfter:     timestamp(hibernate),
		RunningSince:       timestamp(s.RunningSince),
		PausedAt:           timestamp(s.PausedAt),
		SandboxExpiresAt:   timestamp(s.SandboxExpiresAt),
		AwayTimeoutSeconds: int64(s.AwayTimeout / time.Second),
		AwayDeadline:       timestamp(s.AwayDeadline),
		App:                newAppJSON(s.App),
		readinessJSON:      newReadinessJSON(s),
	}
}

// sessionListJSON is one page of GET /v1/sessions; next_cursor is null on the
// last page.
type sessionListJSON struct {
	Sessions   []sessionJSON `json:"sessions"`
	NextCursor *string       `json:"next_cursor"`
}

// envelopeJSON is the lifecycle envelope of docs/DESIGN.md.
type envelopeJSON struct {
	ServerTime       timestamp `json:"server_time"`
	State            string    `json:"state"`
	LastActivityAt   timestamp `json:"last_activity_at"`
	HibernateAfter   timestamp `json:"hibernate_after"`
	SandboxExpiresAt timestamp `json:"sandbox_expires_at"`
}

func newEnvelopeJSON(e lifecycle.Envelope) envelopeJSON {
	return envelopeJSON{
		ServerTime:       timestamp(e.ServerTime),
		State:            string(e.State),
		LastActivityAt:   timestamp(e.LastActivityAt),
		HibernateAfter:   timestamp(e.HibernateAfter),
		SandboxExpiresAt: timestamp(e.SandboxExpiresAt),
	}
}

// statusJSON answers GET /v1/sessions/{id}/status. sandbox_paused is true
// when the session is paused.
type statusJSON struct {
	SessionID     string       `json:"session_id"`
	State         string       `json:"state"`
	SandboxPaused bool         `json:"sandbox_paused"`
	HasSnapshot   bool         `json:"has_snapshot"`
	PreviewURL    *string      `json:"preview_url"`
	Lifecycle     envelopeJSON `json:"lifecycle"`
	readinessJSON
}

// resumeJSON answers POST /v1/sessions/{id}/resume.
type resumeJSON struct {
	PreviewURL *string     `json:"preview_url"`
	Session    sessionJSON `json:"session"`
}

// snapshotJSON answers POST /v1/sessions/{id}/snapshot; paused is always
// true (a failure is an error response).
type snapshotJSON struct {
	Paused  bool        `json:"paused"`
	Session sessionJSON `json:"session"`
}

// reconnectJSON answers GET /v1/sessions/{id}/reconnect. status is one of
// connected, paused, expired, no_sandbox, unreachable; expires_at is set only
// when connected.
type reconnectJSON struct {
	Status     string       `json:"status"`
	SessionID  string       `json:"session_id"`
	State      string       `json:"state"`
	ExpiresAt  timestamp    `json:"expires_at"`
	PreviewURL *string      `json:"preview_url"`
	Lifecycle  envelopeJSON `json:"lifecycle"`
	readinessJSON
}
