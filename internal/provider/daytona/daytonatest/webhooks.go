package daytonatest

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/hookwire/daytonahook"
	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

// newSvixSender returns what posts the fake's state changes to a webhook
// URL as Daytona does through Svix (daytonahook's body and signature), on
// the kit's Sender (in order, a 5xx retried twice, then dropped), and what
// stops it.
func newSvixSender(url, secret string, log *slog.Logger) (send func(StateChange), stop func()) {
	sender := fakekit.NewSender(url, func(msgID string, at time.Time, body []byte) (http.Header, error) {
		return daytonahook.Header(secret, msgID, at, body)
	}, log)
	return func(c StateChange) {
		body := daytonahook.NewStateBody(c.SandboxID, DefaultOrganizationID, c.OldState, c.NewState, c.At)
		if c.OldState == "" {
			at := c.At.UTC().Format(time.RFC3339Nano)
			body = daytonahook.Body{Event: daytonahook.TypeSandboxCreated, Timestamp: at, ID: c.SandboxID,
				OrganizationID: DefaultOrganizationID, State: c.NewState, CreatedAt: at}
		}
		if raw, err := json.Marshal(body); err == nil { // a struct of strings always encodes
			sender.Send(raw, "sandbox_id", c.SandboxID, "new_state", c.NewState)
		}
	}, sender.Close
}
