// Package api declares, once, the JSON shapes of Sandman's HTTP API that
// docs/openapi.json describes (its components of the same names): the
// handlers (internal/apigw) answer with them, the CLI (internal/cli) decodes
// them, and the handler tests decode answers into them with unknown fields
// disallowed, so a field added to a shape reaches all three at once. It
// imports only the standard library.
//
// Timestamps are RFC 3339 UTC strings (nanoseconds when present), null when
// unset: *string here, Time formats them. Durations are whole seconds.
package api

import "time"

// Time returns t as the API writes a timestamp: nil for the zero time, else
// RFC 3339 in UTC with nanoseconds when present.
func Time(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}

// Session is a session as the API shows it (docs/DESIGN.md "HTTP API").
// max_lifetime_seconds 0 means no limit; pause_deadline is the moment the
// session pauses unless activity arrives (null unless running).
type Session struct {
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
	CreatedAt          *string           `json:"created_at"`
	UpdatedAt          *string           `json:"updated_at"`
	LastActivityAt     *string           `json:"last_activity_at"`
	IdleDeadline       *string           `json:"idle_deadline"`
	// PauseDeadline is when the running session pauses unless activity
	// arrives (lifecycle.Session.PauseDeadline); null unless running.
	PauseDeadline *string `json:"pause_deadline"`
	// HibernateAfter is PauseDeadline under its former name, the same
	// value, kept for one API version (deprecated in docs/openapi.json;
	// the deprecated tag names the field that replaces it).
	HibernateAfter   *string `json:"hibernate_after" deprecated:"pause_deadline"`
	RunningSince     *string `json:"running_since"`
	PausedAt         *string `json:"paused_at"`
	SandboxExpiresAt *string `json:"sandbox_expires_at"`
	// AwayTimeoutSeconds (0: presence off) and AwayDeadline (null unless
	// the last visible client left): docs/DESIGN.md "Client channel".
	AwayTimeoutSeconds int64   `json:"away_timeout_seconds"`
	AwayDeadline       *string `json:"away_deadline"`
	// ResumeOnReturn: a visible client appearing while paused resumes the
	// session, reason return (docs/WAKE.md "Resume on return").
	ResumeOnReturn bool `json:"resume_on_return"`
	// App is the session's app spec (null: none); the readiness fields:
	// docs/READINESS.md.
	App *App `json:"app"`
	AppReadiness
	// FromPool: the session took a warm pool's spare sandbox instead of a
	// cold one (docs/POOLS.md).
	FromPool bool `json:"from_pool"`
	// Checkpoints (docs/CHECKPOINTS.md): the fork's origin (null for a
	// session that is no fork), the automatic checkpoint options, and the
	// last restore: the checkpoint it restored (or is restoring) and why it
	// failed (null when it did not).
	ForkedFrom             *ForkOrigin `json:"forked_from"`
	CheckpointOnPause      bool        `json:"checkpoint_on_pause"`
	CheckpointEverySeconds int64       `json:"checkpoint_every_seconds"`
	CheckpointsKeep        int         `json:"checkpoints_keep"`
	RestoreCheckpointID    *string     `json:"restore_checkpoint_id"`
	RestoreError           *string     `json:"restore_error"`
	// The retention tiers (docs/CHECKPOINTS.md "Retention tiers"): seconds
	// after its pause the session is archived and deleted (0: never), and
	// why the last archive could not happen (null: none failed).
	ArchiveAfterSeconds int64   `json:"archive_after_seconds"`
	DeleteAfterSeconds  int64   `json:"delete_after_seconds"`
	TierError           *string `json:"tier_error"`
	// IdlePolicy is fixed or learned; PauseDeadlineWhy says what set the
	// pause deadline (null unless running) and PreResumeAt when a paused
	// learned session is resumed before its user's predicted return (null:
	// none): docs/COST.md "The learned idle policy".
	IdlePolicy       string  `json:"idle_policy"`
	PauseDeadlineWhy *string `json:"pause_deadline_why"`
	PreResumeAt      *string `json:"pre_resume_at"`
	// OnLost is what a resume that finds the sandbox lost does: restore,
	// recreate or expire (docs/RELIABILITY.md "Recovery").
	OnLost string `json:"on_lost"`
	// Recovery is the recovery in progress (null unless the session is
	// restoring for reason lost).
	Recovery *Recovery `json:"recovery"`
}

// Recovery is a lost session's recovery as the API shows it while the
// session is restoring for reason lost (docs/RELIABILITY.md "Recovery"):
// lost is gone, foreign or partial; checkpoint_id and
// checkpoint_created_at name the checkpoint it restores (both null for
// on_lost recreate, a fresh sandbox from the template).
type Recovery struct {
	Lost                string  `json:"lost"`
	CheckpointID        *string `json:"checkpoint_id"`
	CheckpointCreatedAt *string `json:"checkpoint_created_at"`
}

// App is an app spec as the API shows and takes it (docs/READINESS.md).
type App struct {
	Port                int               `json:"port"`
	StartCommand        string            `json:"start_command"`
	Cwd                 string            `json:"cwd"`
	Env                 map[string]string `json:"env"`
	ReadyPath           string            `json:"ready_path"`
	ReadyTimeoutSeconds int64             `json:"ready_timeout_seconds"`
}

// AppReadiness is the readiness of a session's app as every body that shows
// a session carries it (docs/READINESS.md "Readiness"): readiness is
// "starting", "ready" or "failed", null without an app or when not running.
type AppReadiness struct {
	Readiness       *string `json:"readiness"`
	ReadinessDetail *string `json:"readiness_detail"`
	ReadyAt         *string `json:"ready_at"`
}

// SessionList is one page of GET /v1/sessions; next_cursor is null on the
// last page.
type SessionList struct {
	Sessions   []Session `json:"sessions"`
	NextCursor *string   `json:"next_cursor"`
}

// Envelope is the lifecycle envelope (docs/DESIGN.md "HTTP API"): what a
// client needs to show when the session will pause.
type Envelope struct {
	ServerTime     *string `json:"server_time"`
	State          string  `json:"state"`
	LastActivityAt *string `json:"last_activity_at"`
	// PauseDeadline is when the running session pauses unless activity
	// arrives; null unless running.
	PauseDeadline *string `json:"pause_deadline"`
	// HibernateAfter is PauseDeadline under its former name, the same
	// value, kept for one API version (deprecated in docs/openapi.json;
	// the deprecated tag names the field that replaces it).
	HibernateAfter   *string `json:"hibernate_after" deprecated:"pause_deadline"`
	SandboxExpiresAt *string `json:"sandbox_expires_at"`
	// PauseDeadlineWhy says what set pause_deadline: fixed (the idle
	// timeout), a learned plan's reason (thin, missed, learned, predicted,
	// cap, pre_resumed), hold, away or lifetime; null unless running.
	// PreResumeAt is when a paused learned session is resumed before its
	// user's predicted return; null: none (docs/COST.md).
	PauseDeadlineWhy *string `json:"pause_deadline_why"`
	PreResumeAt      *string `json:"pre_resume_at"`
}

// Status answers GET /v1/sessions/{id}/status; sandbox_paused is true when
// the session is paused.
type Status struct {
	SessionID     string   `json:"session_id"`
	State         string   `json:"state"`
	SandboxPaused bool     `json:"sandbox_paused"`
	HasSnapshot   bool     `json:"has_snapshot"`
	PreviewURL    *string  `json:"preview_url"`
	Lifecycle     Envelope `json:"lifecycle"`
	AppReadiness
	// Recovery is the recovery in progress (null unless restoring for
	// reason lost): what the waking page and sandman.js show.
	Recovery *Recovery `json:"recovery"`
}

// ResumeResult answers POST /v1/sessions/{id}/resume.
type ResumeResult struct {
	PreviewURL *string `json:"preview_url"`
	Session    Session `json:"session"`
}

// PauseResult answers POST /v1/sessions/{id}/pause (and its alias
// …/snapshot); paused is always true (a failure is an error response).
type PauseResult struct {
	Paused  bool    `json:"paused"`
	Session Session `json:"session"`
}

// ReconnectResult answers GET /v1/sessions/{id}/reconnect. status is one of
// connected, paused, expired, no_sandbox, unreachable; expires_at is set
// only when connected.
type ReconnectResult struct {
	Status     string   `json:"status"`
	SessionID  string   `json:"session_id"`
	State      string   `json:"state"`
	ExpiresAt  *string  `json:"expires_at"`
	PreviewURL *string  `json:"preview_url"`
	Lifecycle  Envelope `json:"lifecycle"`
	AppReadiness
}

// Error is the error envelope every failure answers with:
// {"status":"error","error":"<sentence>","error_type":"<code>"}. ExitCode
// and Output come with error_type app_failed only (an open of a session
// whose app failed, docs/WAKE.md): the app's start command's exit code
// when it exited, and its last output lines when the provider keeps them.
type Error struct {
	Status    string `json:"status"`
	Error     string `json:"error"`
	ErrorType string `json:"error_type"`
	ExitCode  *int   `json:"exit_code,omitempty"`
	Output    string `json:"output,omitempty"`
}

// Pool is one warm pool as GET /v1/pools shows it (docs/POOLS.md): its
// configuration (SANDMAN_POOLS), its spares, counters and health, and its
// own usage. hit_rate is hits / (hits + misses), 0 before any matching
// create; lost counts claimed spares gone at the provider (their creates
// went cold and count as misses); backoff_until is set while the pool has stopped refilling after
// failures in a row.
type Pool struct {
	ID                  string    `json:"id"`
	Provider            string    `json:"provider"`
	Template            string    `json:"template"`
	App                 *PoolApp  `json:"app"`
	Size                int       `json:"size"`
	Tier                string    `json:"tier"`
	MaxAgeSeconds       int64     `json:"max_age_seconds"`
	Ready               int       `json:"ready"`
	Making              int       `json:"making"`
	Failed              int64     `json:"failed"`
	Claims              int64     `json:"claims"`
	Hits                int64     `json:"hits"`
	Misses              int64     `json:"misses"`
	Lost                int64     `json:"lost"`
	HitRate             float64   `json:"hit_rate"`
	ConsecutiveFailures int       `json:"consecutive_failures"`
	LastError           *string   `json:"last_error"`
	LastErrorAt         *string   `json:"last_error_at"`
	BackoffUntil        *string   `json:"backoff_until"`
	Usage               PoolUsage `json:"usage"`
}

// PoolApp is the app a pool's spares serve as GET /v1/pools shows it: an
// App whose env is reduced to its variables' names, sorted. Any account's
// key reads pools, and a pool's env may hold the deployment's secrets, so
// no value is shown.
type PoolApp struct {
	Port                int      `json:"port"`
	StartCommand        string   `json:"start_command"`
	Cwd                 string   `json:"cwd"`
	EnvNames            []string `json:"env_names"`
	ReadyPath           string   `json:"ready_path"`
	ReadyTimeoutSeconds int64    `json:"ready_timeout_seconds"`
}

// PoolUsage is the time a pool's spares ran and were paused, gone ones and
// live ones so far, in seconds (milliseconds as fractions), and its
// estimated cost in US dollars at the provider's price.
type PoolUsage struct {
	RunningSeconds   float64 `json:"running_seconds"`
	PausedSeconds    float64 `json:"paused_seconds"`
	EstimatedCostUSD float64 `json:"estimated_cost_usd"`
}

// PoolList answers GET /v1/pools: every configured pool, in configuration
// order (empty without pools).
type PoolList struct {
	Pools []Pool `json:"pools"`
}

// ClientToken is the answer of POST /v1/sessions/{id}/client-tokens: a
// token scoped to one session (docs/DESIGN.md "Client channel").
type ClientToken struct {
	Token     string  `json:"token"`
	ExpiresAt string  `json:"expires_at"` // RFC 3339 UTC, whole seconds
	WSURL     *string `json:"ws_url"`     // the WebSocket URL to connect to with ?token=; null when no channel is configured
}
