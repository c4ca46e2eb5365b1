package providerhook

import (
	"fmt"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/registry"
)

// Formats returns the webhook formats of the enabled providers, for
// Config.Formats: one per format their declarations name
// (registry.Adapter.Webhook), in enabled order. Providers sharing a format
// (E2B, the local provider and the fake send E2B-format webhooks) share its
// route, and its events are stamped with the first of them; Daytona's
// Svix-signed deliveries have their timestamps checked on clock. A provider
// that sends none (Vercel), or that adapters does not hold, adds nothing;
// when no enabled provider sends webhooks the result is empty and every
// request answers 404. secrets holds each enabled provider's webhook secret
// by provider name (app.App.WebhookSecrets). Errors: a secret is unusable, a
// format this package does not know.
func Formats(enabled []string, adapters registry.Set, secrets map[string]string, clock lifecycle.Clock) ([]Format, error) {
	var formats []Format
	seen := map[string]bool{}
	for _, name := range enabled {
		ad, ok := adapters.Find(name)
		if !ok || ad.Webhook == nil || seen[ad.Webhook.Format] {
			continue
		}
		seen[ad.Webhook.Format] = true
		var (
			format Format
			err    error
		)
		switch secret := secrets[name]; ad.Webhook.Format {
		case E2BName:
			format, err = NewE2B(name, secret)
		case DaytonaName:
			format, err = NewDaytona(clock, secret)
		default:
			err = fmt.Errorf("provider %s: no webhook format %q in internal/providerhook", name, ad.Webhook.Format)
		}
		if err != nil {
			return nil, err
		}
		formats = append(formats, format)
	}
	return formats, nil
}
