package lifecycle

import "context"

// forAccount returns p with every call's ctx naming account
// (WithCallAccount), the calls of its optional interfaces too (Wrap); p
// itself when account is "".
func forAccount(p Provider, account string) Provider {
	if account == "" {
		return p
	}
	return Wrap(p, func(ctx context.Context, _ Call, next func(context.Context, Provider) error) error {
		return next(WithCallAccount(ctx, account), p)
	})
}
