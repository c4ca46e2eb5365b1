package dynamo

import (
	"fmt"
	"hash/fnv"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Item key prefixes and sort keys (see the package doc).
const (
	sessionPrefix = "SESSION#"
	sessionSort   = "SESSION"
	apiKeyPrefix  = "APIKEY#"
	apiKeySort    = "APIKEY"
	claimPrefix   = "CLAIM#"
	claimSort     = "CLAIM"
)

// Session attribute names used in conditions.
const (
	attrState         = "state"
	attrVersion       = "version"
	attrIdleDeadline  = "idle_deadline"
	attrPauseDeadline = "pause_deadline"
)

// timeLayout is how times are stored: RFC 3339 in UTC with exactly nine
// fractional digits, so that every stored time has the same width and string
// order is time order (for years 0000..9999).
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// sessionItem is a session as stored. It is separate from lifecycle.Session
// (); toSessionItem and sessionFromItem convert at the edge.
type sessionItem struct {
	PK string `dynamodbav:"pk"`
	SK string `dynamodbav:"sk"`

	ID         string            `dynamodbav:"id"`
	AccountID  string            `dynamodbav:"account_id"`
	Provider   string            `dynamodbav:"provider,omitempty"`
	Template   string            `dynamodbav:"template,omitempty"`
	Metadata   map[string]string `dynamodbav:"metadata,omitempty"`
	SandboxID  string            `dynamodbav:"sandbox_id,omitempty"`
	PreviewURL string            `dynamodbav:"preview_url,omitempty"`
	State      string            `dynamodbav:"state"`
	Version    int64             `dynamodbav:"version"`
	Reason     string            `dynamodbav:"reason,omitempty"`
	// Actor is who made this write (lifecycle.Session.Actor); the outbox
	// reads it from the stream image.
	Actor string `dynamodbav:"actor,omitempty"`

	IdleTimeoutMS int64 `dynamodbav:"idle_timeout_ms"`           // milliseconds
	MaxLifetimeMS int64 `dynamodbav:"max_lifetime_ms,omitempty"` // milliseconds; absent: no limit

	// Times in timeLayout; absent when zero.
	CreatedAt           string `dynamodbav:"created_at,omitempty"`
	UpdatedAt           string `dynamodbav:"updated_at,omitempty"`
	LastActivityAt      string `dynamodbav:"last_activity_at,omitempty"`
	IdleDeadline        string `dynamodbav:"idle_deadline,omitempty"`
	HoldUntil           string `dynamodbav:"hold_until,omitempty"`
	RunningSince        string `dynamodbav:"running_since,omitempty"`
	PausedAt            string `dynamodbav:"paused_at,omitempty"`
	LeaseExpiresAt      string `dynamodbav:"lease_expires_at,omitempty"`
	SandboxExpiresAt    string `dynamodbav:"sandbox_expires_at,omitempty"`
	LastProviderEventAt string `dynamodbav:"last_provider_event_at,omitempty"`
	StateChangedAt      string `dynamodbav:"state_changed_at,omitempty"`
	// AwayTimeoutMS (milliseconds; absent: presence off) and AwayDeadline
	// (timeLayout; absent when no away deadline is set): the client
	// channel's presence (lifecycle.Session.AwayDeadline).
	AwayTimeoutMS int64  `dynamodbav:"away_timeout_ms,omitempty"`
	AwayDeadline  string `dynamodbav:"away_deadline,omitempty"`
	// ResumeOnReturn (absent: off) and ReturnResumedAt (timeLayout; absent:
	// never) are lifecycle.Session's resume on return (docs/WAKE.md).
	ResumeOnReturn  bool   `dynamodbav:"resume_on_return,omitempty"`
	ReturnResumedAt string `dynamodbav:"return_resumed_at,omitempty"`
	// ResumeQueued (absent: false) is lifecycle.Session.ResumeQueued: a
	// resuming session's resume runs in a background job.
	ResumeQueued bool `dynamodbav:"resume_queued,omitempty"`
	// PausedOnRequest (absent: false) is lifecycle.Session.PausedOnRequest:
	// the current pause was asked for through the API.
	PausedOnRequest bool `dynamodbav:"paused_on_request,omitempty"`
	// App is the session's app spec (lifecycle.AppSpec; absent: none);
	// Readiness, ReadinessDetail and ReadyAt (timeLayout) its readiness
	// (docs/READINESS.md). The outbox reads readiness from the stream image.
	App             *appItem `dynamodbav:"app,omitempty"`
	Readiness       string   `dynamodbav:"readiness,omitempty"`
	ReadinessDetail string   `dynamodbav:"readiness_detail,omitempty"`
	ReadyAt         string   `dynamodbav:"ready_at,omitempty"`
	// AppExitCode (absent: none) is lifecycle.Session.AppExitCode: the
	// start command's exit code when readiness failed because it exited.
	AppExitCode *int `dynamodbav:"app_exit_code,omitempty"`
	// FromPool (absent: false) and PoolID: the session took a warm pool's
	// spare (lifecycle.Session.FromPool, docs/POOLS.md).
	FromPool bool   `dynamodbav:"from_pool,omitempty"`
	PoolID   string `dynamodbav:"pool_id,omitempty"`
	// Checkpoints (lifecycle.Session's checkpoint fields; absent: zero):
	// fork origin, automatic checkpoint options (every: milliseconds), the
	// schedule's times (timeLayout) and the last restore.
	ForkedFrom          string `dynamodbav:"forked_from,omitempty"`
	ForkCheckpointID    string `dynamodbav:"fork_checkpoint_id,omitempty"`
	CheckpointOnPause   bool   `dynamodbav:"checkpoint_on_pause,omitempty"`
	CheckpointEveryMS   int64  `dynamodbav:"checkpoint_every_ms,omitempty"`
	CheckpointsKeep     int    `dynamodbav:"checkpoints_keep,omitempty"`
	NextCheckpointAt    string `dynamodbav:"next_checkpoint_at,omitempty"`
	LastCheckpointAt    string `dynamodbav:"last_checkpoint_at,omitempty"`
	RestoreCheckpointID string `dynamodbav:"restore_checkpoint_id,omitempty"`
	RestoreFrom         string `dynamodbav:"restore_from,omitempty"`
	RestoreError        string `dynamodbav:"restore_error,omitempty"`
	RestoreKey          string `dynamodbav:"restore_key,omitempty"`
	// Idle is the learned idle policy's state (idle.go; absent: fixed).
	Idle   *idleStateItem `dynamodbav:"idle,omitempty"`
	OnLost string         `dynamodbav:"on_lost,omitempty"`
	Marked bool           `dynamodbav:"marked,omitempty"`
	Lost   string         `dynamodbav:"lost,omitempty"`
	// Retention tiers (lifecycle.Session's tier fields; absent: zero):
	// durations in milliseconds, the retry time in timeLayout.
	ArchiveAfterMS int64  `dynamodbav:"archive_after_ms,omitempty"`
	DeleteAfterMS  int64  `dynamodbav:"delete_after_ms,omitempty"`
	TierPending    bool   `dynamodbav:"tier_pending,omitempty"`
	TierRetryAt    string `dynamodbav:"tier_retry_at,omitempty"`
	TierError      string `dynamodbav:"tier_error,omitempty"`
	// CheckpointBytes is lifecycle.Session's (bytes; the stream
	// publisher reads it from the old image for stored GB-hours).
	CheckpointBytes int64 `dynamodbav:"checkpoint_bytes,omitempty"`
	// WriteID identifies the write that stored this version (newWriteID).
	WriteID string `dynamodbav:"write_id,omitempty"`

	// PauseDeadline is Session.PauseDeadline() in timeLayout, present only
	// while the session is in the idle index: Guard.DueBy's exact re-check.
	PauseDeadline string `dynamodbav:"pause_deadline,omitempty"`

	// Index keys; each present only while the session belongs to the index.
	SandboxKey  string `dynamodbav:"sandbox_key,omitempty"`
	OwnerKey    string `dynamodbav:"owner_key,omitempty"`
	OwnerSort   string `dynamodbav:"owner_sort,omitempty"`
	OwnerState  string `dynamodbav:"owner_state,omitempty"` // "<account id>#<state>": the by_owner_state index
	IdleShard   *int   `dynamodbav:"idle_shard,omitempty"`
	IdleDueAt   *int64 `dynamodbav:"idle_due_at,omitempty"` // epoch milliseconds
	LeaseShard  *int   `dynamodbav:"lease_shard,omitempty"`
	LeaseDueAt  *int64 `dynamodbav:"lease_due_at,omitempty"` // epoch milliseconds
	PausedShard *int   `dynamodbav:"paused_shard,omitempty"`
	PausedDueAt *int64 `dynamodbav:"paused_due_at,omitempty"` // epoch milliseconds
}

// appItem is a lifecycle.AppSpec as stored (a map attribute).
type appItem struct {
	Port           int               `dynamodbav:"port"`
	StartCommand   string            `dynamodbav:"start_command"`
	Cwd            string            `dynamodbav:"cwd,omitempty"`
	Env            map[string]string `dynamodbav:"env,omitempty"`
	ReadyPath      string            `dynamodbav:"ready_path,omitempty"`
	ReadyTimeoutMS int64             `dynamodbav:"ready_timeout_ms"` // milliseconds
}

func toAppItem(a *lifecycle.AppSpec) *appItem {
	if a == nil {
		return nil
	}
	it := &appItem{Port: a.Port, StartCommand: a.StartCommand, Cwd: a.Cwd, ReadyPath: a.ReadyPath,
		ReadyTimeoutMS: a.ReadyTimeout.Milliseconds()}
	if len(a.Env) > 0 {
		it.Env = a.Env
	}
	return it
}

func (it *appItem) spec() *lifecycle.AppSpec {
	if it == nil {
		return nil
	}
	return &lifecycle.AppSpec{Port: it.Port, StartCommand: it.StartCommand, Cwd: it.Cwd, Env: it.Env,
		ReadyPath: it.ReadyPath, ReadyTimeout: time.Duration(it.ReadyTimeoutMS) * time.Millisecond}
}

// apiKeyItem is an API key as stored.
type apiKeyItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	Hash      string `dynamodbav:"hash"`
	AccountID string `dynamodbav:"account_id"`
	CreatedAt string `dynamodbav:"created_at,omitempty"` // timeLayout
	// MaxRunning is lifecycle.APIKey.MaxRunning; absent: no override.
	MaxRunning int `dynamodbav:"max_running,omitempty"`
	// ArchiveAfterMS and DeleteAfterMS are lifecycle.APIKey.Tiers in
	// milliseconds; absent: not set on this key (0 is "never").
	ArchiveAfterMS *int64 `dynamodbav:"archive_after_ms,omitempty"`
	DeleteAfterMS  *int64 `dynamodbav:"delete_after_ms,omitempty"`
}

// claimItem is a claim as stored; DynamoDB's TTL deletes it some time after
// TTL, and Claim treats it as absent from TTL on.
type claimItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	Value     string `dynamodbav:"value"`
	ClaimedAt string `dynamodbav:"claimed_at"` // timeLayout
	TTL       int64  `dynamodbav:"ttl"`        // epoch seconds (tabledef.TTLAttribute)
	WriteID   string `dynamodbav:"write_id"`   // see newWriteID
}

// Shard returns the due-index shard of a session id at DefaultShards
// shards: ShardOf(sessionID, DefaultShards).
func Shard(sessionID string) int { return ShardOf(sessionID, DefaultShards) }

// ShardOf returns the due-index shard of a session id among shards:
// fnv32a(id) modulo shards, in 0..shards-1 (shards ≥ 1).
func ShardOf(sessionID string, shards int) int {
	h := fnv.New32a()
	h.Write([]byte(sessionID))
	return int(h.Sum32() % uint32(shards))
}

func sessionPK(id string) string { return sessionPrefix + id }

// ownerState is a session's by_owner_state partition: its account and state.
func ownerState(accountID string, state lifecycle.State) string {
	return accountID + "#" + string(state)
}
func apiKeyPK(hash string) string { return apiKeyPrefix + hash }
func claimPK(key string) string   { return claimPrefix + key }
func sandboxKey(provider, sandboxID string) string {
	return provider + "#" + sandboxID
}

// formatTime returns t in timeLayout, or "" for the zero time.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeLayout)
}

// parseTime reads a time written by formatTime; "" is the zero time.
func parseTime(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("parse %s: %w", name, err)
	}
	return t.UTC(), nil
}

// dueMillis returns t in epoch milliseconds (rounded down), the form of a
// due index's sort key. Queries bound it by Before rounded down the same way
// and then drop the few sessions due within Before's millisecond but after
// it, so FindDue is exact to the nanosecond.
func dueMillis(t time.Time) int64 { return t.UnixMilli() }

// toSessionItem converts s to its stored form, with the index keys of the
// indexes it belongs to and no others.
func toSessionItem(s *lifecycle.Session, shards int) sessionItem {
	it := sessionItem{
		PK:                  sessionPK(s.ID),
		SK:                  sessionSort,
		ID:                  s.ID,
		AccountID:           s.AccountID,
		Provider:            s.Provider,
		Template:            s.Template,
		SandboxID:           s.SandboxID,
		PreviewURL:          s.PreviewURL,
		State:               string(s.State),
		Version:             s.Version,
		Reason:              s.Reason,
		Actor:               s.Actor,
		IdleTimeoutMS:       s.IdleTimeout.Milliseconds(),
		MaxLifetimeMS:       s.MaxLifetime.Milliseconds(),
		CreatedAt:           formatTime(s.CreatedAt),
		UpdatedAt:           formatTime(s.UpdatedAt),
		LastActivityAt:      formatTime(s.LastActivityAt),
		IdleDeadline:        formatTime(s.IdleDeadline),
		HoldUntil:           formatTime(s.HoldUntil),
		RunningSince:        formatTime(s.RunningSince),
		PausedAt:            formatTime(s.PausedAt),
		LeaseExpiresAt:      formatTime(s.LeaseExpiresAt),
		SandboxExpiresAt:    formatTime(s.SandboxExpiresAt),
		LastProviderEventAt: formatTime(s.LastProviderEventAt),
		StateChangedAt:      formatTime(s.StateChangedAt),
		OwnerKey:            s.AccountID,
		OwnerSort:           s.CreatedAt.UTC().Format(timeLayout) + "#" + s.ID,
		OwnerState:          ownerState(s.AccountID, s.State),
	}
	it.AwayTimeoutMS, it.AwayDeadline = s.AwayTimeout.Milliseconds(), formatTime(s.AwayDeadline)
	it.ResumeOnReturn, it.ReturnResumedAt = s.ResumeOnReturn, formatTime(s.ReturnResumedAt)
	it.ResumeQueued, it.PausedOnRequest = s.ResumeQueued, s.PausedOnRequest
	it.App, it.Readiness, it.ReadinessDetail = toAppItem(s.App), string(s.Readiness), s.ReadinessDetail
	it.ReadyAt, it.AppExitCode = formatTime(s.ReadyAt), cloneInt(s.AppExitCode)
	it.FromPool, it.PoolID = s.FromPool, s.PoolID
	it.ForkedFrom, it.ForkCheckpointID = s.ForkedFrom, s.ForkCheckpointID
	it.CheckpointOnPause, it.CheckpointEveryMS, it.CheckpointsKeep = s.CheckpointOnPause, s.CheckpointEvery.Milliseconds(), s.CheckpointsKeep
	it.NextCheckpointAt, it.LastCheckpointAt = formatTime(s.NextCheckpointAt), formatTime(s.LastCheckpointAt)
	it.RestoreCheckpointID, it.RestoreFrom, it.RestoreError, it.RestoreKey = s.RestoreCheckpointID, string(s.RestoreFrom), s.RestoreError, s.RestoreKey
	it.Idle = toIdleStateItem(s.Idle)
	it.OnLost, it.Marked, it.Lost = string(s.OnLost), s.Marked, s.Lost
	it.ArchiveAfterMS, it.DeleteAfterMS = s.ArchiveAfter.Milliseconds(), s.DeleteAfter.Milliseconds()
	it.TierPending, it.TierRetryAt, it.TierError = s.TierPending, formatTime(s.TierRetryAt), s.TierError
	it.CheckpointBytes = s.CheckpointBytes
	if len(s.Metadata) > 0 {
		it.Metadata = s.Metadata
	}
	if s.SandboxID != "" {
		it.SandboxKey = sandboxKey(s.Provider, s.SandboxID)
	}
	shard := ShardOf(s.ID, shards)
	if d := s.PauseDeadline(); s.State == lifecycle.StateRunning && !d.IsZero() {
		ms := dueMillis(d)
		it.IdleShard, it.IdleDueAt = &shard, &ms
		it.PauseDeadline = formatTime(d)
	}
	if d, ok := s.LeaseDue(); ok {
		ms := dueMillis(d)
		it.LeaseShard, it.LeaseDueAt = &shard, &ms
	}
	if ms, ok := pausedIndexKey(s); ok {
		it.PausedShard, it.PausedDueAt = &shard, &ms
	}
	return it
}

// session converts a stored item back to the domain type.
func (it sessionItem) session() (*lifecycle.Session, error) {
	state, err := lifecycle.ParseState(it.State)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", it.ID, err)
	}
	s := &lifecycle.Session{
		ID:          it.ID,
		AccountID:   it.AccountID,
		Provider:    it.Provider,
		Template:    it.Template,
		Metadata:    it.Metadata,
		SandboxID:   it.SandboxID,
		PreviewURL:  it.PreviewURL,
		State:       state,
		Version:     it.Version,
		Reason:      it.Reason,
		Actor:       it.Actor,
		IdleTimeout: time.Duration(it.IdleTimeoutMS) * time.Millisecond,
		MaxLifetime: time.Duration(it.MaxLifetimeMS) * time.Millisecond,
	}
	times := []struct {
		name string
		v    string
		dst  *time.Time
	}{
		{"created_at", it.CreatedAt, &s.CreatedAt},
		{"updated_at", it.UpdatedAt, &s.UpdatedAt},
		{"last_activity_at", it.LastActivityAt, &s.LastActivityAt},
		{"idle_deadline", it.IdleDeadline, &s.IdleDeadline},
		{"hold_until", it.HoldUntil, &s.HoldUntil},
		{"running_since", it.RunningSince, &s.RunningSince},
		{"paused_at", it.PausedAt, &s.PausedAt},
		{"lease_expires_at", it.LeaseExpiresAt, &s.LeaseExpiresAt},
		{"sandbox_expires_at", it.SandboxExpiresAt, &s.SandboxExpiresAt},
		{"last_provider_event_at", it.LastProviderEventAt, &s.LastProviderEventAt},
		{"state_changed_at", it.StateChangedAt, &s.StateChangedAt},
		{"away_deadline", it.AwayDeadline, &s.AwayDeadline},
		{"return_resumed_at", it.ReturnResumedAt, &s.ReturnResumedAt},
		{"ready_at", it.ReadyAt, &s.ReadyAt},
		{"next_checkpoint_at", it.NextCheckpointAt, &s.NextCheckpointAt},
		{"last_checkpoint_at", it.LastCheckpointAt, &s.LastCheckpointAt},
		{"tier_retry_at", it.TierRetryAt, &s.TierRetryAt},
	}
	s.App, s.Readiness, s.ReadinessDetail = it.App.spec(), lifecycle.Readiness(it.Readiness), it.ReadinessDetail
	s.AppExitCode = cloneInt(it.AppExitCode)
	s.AwayTimeout = time.Duration(it.AwayTimeoutMS) * time.Millisecond
	s.ResumeOnReturn, s.ResumeQueued, s.PausedOnRequest = it.ResumeOnReturn, it.ResumeQueued, it.PausedOnRequest
	s.FromPool, s.PoolID = it.FromPool, it.PoolID
	s.ForkedFrom, s.ForkCheckpointID = it.ForkedFrom, it.ForkCheckpointID
	s.CheckpointOnPause, s.CheckpointEvery, s.CheckpointsKeep = it.CheckpointOnPause, time.Duration(it.CheckpointEveryMS)*time.Millisecond, it.CheckpointsKeep
	s.RestoreCheckpointID, s.RestoreFrom, s.RestoreError, s.RestoreKey = it.RestoreCheckpointID, lifecycle.State(it.RestoreFrom), it.RestoreError, it.RestoreKey
	if s.Idle, err = it.Idle.state(); err != nil {
		return nil, fmt.Errorf("session %s: %w", it.ID, err)
	}
	s.OnLost, s.Marked, s.Lost = lifecycle.OnLost(it.OnLost), it.Marked, it.Lost
	s.ArchiveAfter, s.DeleteAfter = time.Duration(it.ArchiveAfterMS)*time.Millisecond, time.Duration(it.DeleteAfterMS)*time.Millisecond
	s.TierPending, s.TierError = it.TierPending, it.TierError
	s.CheckpointBytes = it.CheckpointBytes
	for _, f := range times {
		if *f.dst, err = parseTime(f.name, f.v); err != nil {
			return nil, fmt.Errorf("session %s: %w", it.ID, err)
		}
	}
	return s, nil
}

// cloneInt returns a copy of *p, or nil.
func cloneInt(p *int) *int {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
