package apigw

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/clienttoken"
	"github.com/sandmanhq/sandman/internal/httpapi"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// clientTokenBody is the optional body of POST /v1/sessions/{id}/client-tokens.
type clientTokenBody struct {
	// TTLSeconds is the token's lifetime in seconds: 0 or absent for
	// clienttoken.DefaultTTL (15 min), else 1..86400 (clienttoken.MaxTTL).
	TTLSeconds int64 `json:"ttl_seconds"`
}

// looksLikeClientToken tells a client token (payload.mac, base64url) from an
// API key ("sk_…", no dot) in a bearer header.
func looksLikeClientToken(bearer string) bool {
	return strings.Contains(bearer, ".") && !strings.HasPrefix(bearer, APIKeyPrefix)
}

// clientTokenAuth authenticates a request that carries a client token as
// "Authorization: Bearer": the token must verify (401 otherwise), the
// route must accept client tokens and the path's session must be the
// token's (403 otherwise; docs/DESIGN.md "Client channel"). It returns the
// token's account.
func (h *Handler) clientTokenAuth(r *request, token string) (string, error) {
	if h.tokens == nil {
		return "", unauthorizedf("client tokens are not accepted by this deployment")
	}
	claims, err := h.tokens.Verify(token)
	if err != nil {
		return "", clientTokenError(err)
	}
	if !h.clientOK[r.event.RouteKey] {
		return "", lifecycle.Errorf(lifecycle.CodeForbidden,
			"a client token is accepted only on its session's status, activity and resume; use an API key here")
	}
	id, err := r.sessionID()
	if err != nil {
		return "", err
	}
	if _, err := h.tokens.VerifyFor(token, id); err != nil {
		return "", clientTokenError(err)
	}
	return claims.AccountID, nil
}

// clientTokenError maps a clienttoken verification error to the API's
// error: 401 unauthorized or 403 forbidden (clienttoken.HTTPStatus).
func clientTokenError(err error) error {
	switch clienttoken.HTTPStatus(err) {
	case http.StatusForbidden:
		return lifecycle.Errorf(lifecycle.CodeForbidden, "the client token is for another session")
	case http.StatusUnauthorized:
		if errors.Is(err, clienttoken.ErrExpired) {
			return unauthorizedf("the client token has expired: mint a new one")
		}
		return unauthorizedf("the client token is not valid")
	}
	return fmt.Errorf("verify client token: %w", err)
}

// createClientToken serves POST /v1/sessions/{id}/client-tokens (API key
// only): 200 {"token","expires_at","ws_url"}, a token scoped to the session,
// which must belong to the caller (403 otherwise, 404 when unknown). 503
// unavailable when the deployment has no client-token keys.
func (h *Handler) createClientToken(ctx context.Context, r *request) (response, error) {
	id, err := r.sessionID()
	if err != nil {
		return response{}, err
	}
	var body clientTokenBody
	if err := r.decodeJSON(&body, true); err != nil {
		return response{}, err
	}
	if body.TTLSeconds < 0 || body.TTLSeconds > int64(clienttoken.MaxTTL/time.Second) {
		return response{}, invalidf("ttl_seconds must be 1..%d (0 or absent for %d)",
			int64(clienttoken.MaxTTL/time.Second), int64(clienttoken.DefaultTTL/time.Second))
	}
	if h.tokens == nil {
		return response{}, lifecycle.Errorf(lifecycle.CodeUnavailable, "client tokens are not configured in this deployment")
	}
	sess, err := h.svc.Get(ctx, r.accountID, id)
	if err != nil {
		return response{}, err
	}
	token, claims, err := h.tokens.Mint(sess.ID, sess.AccountID, time.Duration(body.TTLSeconds)*time.Second)
	if err != nil {
		return response{}, fmt.Errorf("mint client token for %s: %w", sess.ID, err)
	}
	return response{status: http.StatusOK, body: api.ClientToken{
		Token:     token,
		ExpiresAt: claims.ExpiresAt.UTC().Format(time.RFC3339),
		WSURL:     httpapi.Nullable(h.wsURL),
	}, headers: map[string]string{"Cache-Control": "no-store"}}, nil
}
