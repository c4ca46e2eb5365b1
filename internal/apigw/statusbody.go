package apigw

import (
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// StatusBody returns the body of GET /v1/sessions/{id}/status for sess at
// now, ready for json.Marshal: the client channel pushes exactly this as
// {"type":"session","session":<status body>} (docs/DESIGN.md "Client channel").
func StatusBody(sess *lifecycle.Session, now time.Time) any {
	return api.Status{
		SessionID:     sess.ID,
		State:         string(sess.State),
		SandboxPaused: sess.State == lifecycle.StatePaused,
		HasSnapshot:   sess.HasSnapshot(),
		PreviewURL:    nullable(sess.PreviewURL),
		Lifecycle:     newEnvelopeJSON(lifecycle.NewEnvelope(sess, now)),
		AppReadiness:  newReadinessJSON(sess),
	}
}
