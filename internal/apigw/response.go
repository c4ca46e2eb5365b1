package apigw

import (
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// response is what a route answers before encoding: a status, an optional
// body to encode as JSON (nil: no body) and extra headers.
type response struct {
	status  int
	body    any
	headers map[string]string
	// html, when not "", is the body as text/html instead of body's JSON
	// (the stable link's pages, open.go).
	html string
	// contentType, when not "", is html's Content-Type instead of
	// text/html (the client script, clientscript.go).
	contentType string
}

// nullable returns nil for "" so the field encodes as null.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func newReadinessJSON(s *lifecycle.Session) api.AppReadiness {
	return api.AppReadiness{Readiness: nullable(string(s.Readiness)), ReadinessDetail: nullable(s.ReadinessDetail),
		ReadyAt: api.Time(s.ReadyAt)}
}

func newAppJSON(a *lifecycle.AppSpec) *api.App {
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

func newSessionJSON(s *lifecycle.Session) api.Session {
	meta := s.Metadata
	if meta == nil {
		meta = map[string]string{}
	}
	var pauseDeadline time.Time
	if s.State == lifecycle.StateRunning {
		pauseDeadline = s.PauseDeadline()
	}
	return api.Session{
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
		App:                newAppJSON(s.App),
		AppReadiness:       newReadinessJSON(s),
		FromPool:           s.FromPool,
	}
}

func newEnvelopeJSON(e lifecycle.Envelope) api.Envelope {
	return api.Envelope{
		ServerTime:       api.Time(e.ServerTime),
		State:            string(e.State),
		LastActivityAt:   api.Time(e.LastActivityAt),
		PauseDeadline:    api.Time(e.PauseDeadline),
		HibernateAfter:   api.Time(e.PauseDeadline), // the deprecated name, one version
		SandboxExpiresAt: api.Time(e.SandboxExpiresAt),
	}
}
