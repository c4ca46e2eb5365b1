package httpapi

import (
	"cmp"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// Nullable returns nil for "" so the field encodes as null.
func Nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ReadinessJSON returns the app_readiness fields of s.
func ReadinessJSON(s *lifecycle.Session) api.AppReadiness {
	return api.AppReadiness{Readiness: Nullable(string(s.Readiness)), ReadinessDetail: Nullable(s.ReadinessDetail),
		ReadyAt: api.Time(s.ReadyAt)}
}

// AppJSON returns the app of a session or pool (nil: none). Its env is an
// empty object rather than null; ready_timeout_seconds is in whole seconds.
func AppJSON(a *lifecycle.AppSpec) *api.App {
	if a == nil {
		return nil
	}
	env := a.Env
	if env == nil {
		env = map[string]string{}
	}
	return &api.App{Port: a.Port, StartCommand: a.StartCommand, Cwd: a.Cwd, Env: env, ReadyPath: a.ReadyPath,
		ReadyTimeoutSeconds: int64(a.ReadyTimeout / time.Second)}
}

// SessionJSON returns the API's session object for s (docs/openapi.json
// "Session"): every route that answers a session builds it here.
// pause_deadline (and its deprecated name hibernate_after) is the pause
// deadline of a running session, null in every other state; durations are
// in whole seconds.
func SessionJSON(s *lifecycle.Session) api.Session {
	meta := s.Metadata
	if meta == nil {
		meta = map[string]string{}
	}
	var pauseDeadline time.Time
	if s.State == lifecycle.StateRunning {
		pauseDeadline = s.PauseDeadline()
	}
	out := api.Session{
		ID:                 s.ID,
		AccountID:          s.AccountID,
		Provider:           s.Provider,
		Template:           s.Template,
		State:              string(s.State),
		Reason:             s.Reason,
		SandboxID:          Nullable(s.SandboxID),
		PreviewURL:         Nullable(s.PreviewURL),
		Metadata:           meta,
		IdleTimeoutSeconds: int64(s.IdleTimeout / time.Second),
		MaxLifetimeSeconds: int64(s.MaxLifetime / time.Second),
		Version:            s.Version,
		CreatedAt:          api.Time(s.CreatedAt),
		UpdatedAt:          api.Time(s.UpdatedAt),
		LastActivityAt:     api.Time(s.LastActivityAt),
		IdleDeadline:       api.Time(s.IdleDeadline),
		PauseDeadline:      api.Time(pauseDeadline),
		HibernateAfter:     api.Time(pauseDeadline), // the deprecated name, one version
		RunningSince:       api.Time(s.RunningSince),
		PausedAt:           api.Time(s.PausedAt),
		SandboxExpiresAt:   api.Time(s.SandboxExpiresAt),
		AwayTimeoutSeconds: int64(s.AwayTimeout / time.Second),
		AwayDeadline:       api.Time(s.AwayDeadline),
		ResumeOnReturn:     s.ResumeOnReturn,
		App:                AppJSON(s.App),
		AppReadiness:       ReadinessJSON(s),
		FromPool:           s.FromPool,

		ForkedFrom:             forkOrigin(s),
		CheckpointOnPause:      s.CheckpointOnPause,
		CheckpointEverySeconds: int64(s.CheckpointEvery / time.Second),
		CheckpointsKeep:        s.CheckpointsKeep,
		RestoreCheckpointID:    Nullable(s.RestoreCheckpointID),
		RestoreError:           Nullable(s.RestoreError),
		ArchiveAfterSeconds:    int64(s.ArchiveAfter / time.Second),
		DeleteAfterSeconds:     int64(s.DeleteAfter / time.Second),
		TierError:              Nullable(s.TierError),
		IdlePolicy:             string(lifecycle.IdlePolicyFixed),
		PauseDeadlineWhy:       Nullable(lifecycle.PauseDeadlineWhy(s)),
		PreResumeAt:            api.Time(preResumeAt(s)),
		OnLost:                 string(cmp.Or(s.OnLost, lifecycle.OnLostRestore)),
		Recovery:               RecoveryJSON(s),
	}
	if s.Learned() {
		out.IdlePolicy = string(lifecycle.IdlePolicyLearned)
	}
	return out
}

// preResumeAt is a paused learned session's pre-resume time, zero for none.
func preResumeAt(s *lifecycle.Session) time.Time {
	if s.State == lifecycle.StatePaused && s.Learned() {
		return s.Idle.PreResumeAt
	}
	return time.Time{}
}

// forkOrigin returns what s was forked from, nil for no fork.
func forkOrigin(s *lifecycle.Session) *api.ForkOrigin {
	if s.ForkedFrom == "" {
		return nil
	}
	return &api.ForkOrigin{SessionID: s.ForkedFrom, CheckpointID: s.ForkCheckpointID}
}

// CheckpointJSON returns the API's checkpoint object for c
// (docs/openapi.json "Checkpoint").
func CheckpointJSON(c *lifecycle.Checkpoint) api.Checkpoint {
	meta := c.Metadata
	if meta == nil {
		meta = map[string]string{}
	}
	return api.Checkpoint{ID: c.ID, SessionID: c.SessionID, CreatedAt: api.Time(c.CreatedAt), Label: c.Label, Metadata: meta,
		Kind: string(c.Kind), Keeps: string(c.Keeps), SizeBytes: c.SizeBytes, State: string(c.State), Reason: Nullable(c.Reason),
		ExpiresAt: api.Time(c.ExpiresAt), Pinned: c.Pinned, Trigger: string(c.Trigger)}
}

// EnvelopeJSON returns the lifecycle envelope e (docs/openapi.json
// "Envelope") as the API sends it.
func EnvelopeJSON(e lifecycle.Envelope) api.Envelope {
	return api.Envelope{
		ServerTime:       api.Time(e.ServerTime),
		State:            string(e.State),
		LastActivityAt:   api.Time(e.LastActivityAt),
		PauseDeadline:    api.Time(e.PauseDeadline),
		HibernateAfter:   api.Time(e.PauseDeadline), // the deprecated name, one version
		SandboxExpiresAt: api.Time(e.SandboxExpiresAt),
		PauseDeadlineWhy: Nullable(e.PauseDeadlineWhy),
		PreResumeAt:      api.Time(e.PreResumeAt),
	}
}

// StatusJSON returns the body of GET /v1/sessions/{id}/status for sess with
// its lifecycle envelope env (lifecycle.NewEnvelope at the service's now).
// The client channel pushes exactly this as {"type":"session","session":
// <status body>} (docs/DESIGN.md "Client channel"), so the route and the
// push cannot drift apart.
func StatusJSON(sess *lifecycle.Session, env lifecycle.Envelope) api.Status {
	return api.Status{
		SessionID:     sess.ID,
		State:         string(sess.State),
		SandboxPaused: sess.State == lifecycle.StatePaused,
		HasSnapshot:   sess.HasSnapshot(),
		PreviewURL:    Nullable(sess.PreviewURL),
		Lifecycle:     EnvelopeJSON(env),
		AppReadiness:  ReadinessJSON(sess),
		Recovery:      RecoveryJSON(sess),
	}
}

// RecoveryJSON returns the recovery of sess in progress (restoring for
// reason lost), nil otherwise.
func RecoveryJSON(sess *lifecycle.Session) *api.Recovery {
	if sess.State != lifecycle.StateRestoring || sess.Reason != lifecycle.ReasonLost {
		return nil
	}
	d := lifecycle.ParseLost(sess.Lost)
	return &api.Recovery{Lost: d.How, CheckpointID: Nullable(d.CheckpointID), CheckpointCreatedAt: api.Time(d.CheckpointCreatedAt)}
}
