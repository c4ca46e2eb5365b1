package lifecycle

import "context"

// TemplateChecker is implemented by a Provider that can tell whether a
// template exists without creating anything (the local provider knows its
// templates). Create asks it before writing anything, so a create naming an
// unknown template leaves no session behind. A provider without
// it (E2B) reports an unknown template when asked to create: the session is
// then failed, with its Idempotency-Key given back.
type TemplateChecker interface {
	// CheckTemplate returns nil when template can be created.
	// Errors: invalid (unknown template; the message names it).
	CheckTemplate(ctx context.Context, template string) error
}

// checkTemplate asks the provider of the new session sess about its
// template when that provider can say.
func (s *Service) checkTemplate(ctx context.Context, sess *Session) error {
	if c, ok := As[TemplateChecker](s.provider(sess)); ok {
		return c.CheckTemplate(ctx, sess.Template)
	}
	return nil
}
