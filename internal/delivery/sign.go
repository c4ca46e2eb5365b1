package delivery

import (
	"fmt"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Sign returns the webhook-signature header of a delivery by the Standard
// Webhooks spec: for each secret, "v1," and the base64 HMAC-SHA256 of
// "<id>.<unix seconds>.<body>", space-separated (docs/WEBHOOKS.md
// "Signatures and rotation"). Errors: a secret that is not "whsec_" + base64.
func Sign(secrets []string, id string, at time.Time, body []byte) (string, error) {
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			return "", fmt.Errorf("signing secret: %w", err)
		}
		sig, err := wh.Sign(id, at, body)
		if err != nil {
			return "", fmt.Errorf("sign delivery %s: %w", id, err)
		}
		sigs = append(sigs, sig)
	}
	return strings.Join(sigs, " "), nil
}
