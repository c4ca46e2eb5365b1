package apigw

import (
	"context"
	"net/http"
	"regexp"

	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/httpapi"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// The /v1/webhook-endpoints routes (docs/WEBHOOKS.md, docs/DESIGN.md
// "Webhooks to customers"), served by the sessions function over
// Config.Webhooks. Every endpoint belongs to the API key's account; another
// account's is not_found.

var (
	endpointIDPattern = regexp.MustCompile(`^we_[a-z2-7]{26}$`)
	deliveryIDPattern = regexp.MustCompile(`^dlv_[0-9a-f]{28}$`)
)

// Delivery log page sizes.
const (
	defaultDeliveryLimit = 20
	maxDeliveryLimit     = 100
)

func (h *Handler) webhooks() (*delivery.Service, error) {
	if h.hooks == nil {
		return nil, lifecycle.Errorf(lifecycle.CodeUnavailable, "webhook endpoints are not configured on this deployment")
	}
	return h.hooks, nil
}

// endpoint returns the webhook service and the request's endpoint id.
// Errors: unavailable when webhooks are not configured; not_found for an id
// that cannot be one.
func (h *Handler) endpoint(r *request) (*delivery.Service, string, error) {
	svc, err := h.webhooks()
	if err != nil {
		return nil, "", err
	}
	id, err := r.endpointID()
	return svc, id, err
}

func (r *request) endpointID() (string, error) {
	id := r.event.PathParameters["id"]
	if !endpointIDPattern.MatchString(id) {
		return "", lifecycle.Errorf(lifecycle.CodeNotFound, "no webhook endpoint with id %q", truncate(id, 64))
	}
	return id, nil
}

func (r *request) deliveryID() (string, error) {
	id := r.event.PathParameters["delivery_id"]
	if !deliveryIDPattern.MatchString(id) {
		return "", lifecycle.Errorf(lifecycle.CodeNotFound, "no delivery with id %q", truncate(id, 64))
	}
	return id, nil
}

// createWebhookEndpoint serves POST /v1/webhook-endpoints: 201 with the
// endpoint and its signing secret (shown this once).
func (h *Handler) createWebhookEndpoint(ctx context.Context, r *request) (response, error) {
	svc, err := h.webhooks()
	if err != nil {
		return response{}, err
	}
	var in api.WebhookEndpointRequest
	if err := r.decodeJSON(&in, false); err != nil {
		return response{}, err
	}
	e, err := svc.Create(ctx, r.accountID, delivery.EndpointInput(in))
	if err != nil {
		return response{}, err
	}
	return response{status: http.StatusCreated, body: e.JSON(h.svc.Now(), true),
		headers: map[string]string{"Location": "/v1/webhook-endpoints/" + e.ID}}, nil
}

// listWebhookEndpoints serves GET /v1/webhook-endpoints: every endpoint of
// the account (at most delivery.MaxEndpointsPerAccount), oldest first.
func (h *Handler) listWebhookEndpoints(ctx context.Context, r *request) (response, error) {
	svc, err := h.webhooks()
	if err != nil {
		return response{}, err
	}
	eps, err := svc.List(ctx, r.accountID)
	if err != nil {
		return response{}, err
	}
	now := h.svc.Now()
	out := api.WebhookEndpointList{WebhookEndpoints: make([]api.WebhookEndpoint, 0, len(eps))}
	for _, e := range eps {
		out.WebhookEndpoints = append(out.WebhookEndpoints, e.JSON(now, false))
	}
	return response{status: http.StatusOK, body: out}, nil
}

// getWebhookEndpoint serves GET /v1/webhook-endpoints/{id} (no secret).
func (h *Handler) getWebhookEndpoint(ctx context.Context, r *request) (response, error) {
	svc, id, err := h.endpoint(r)
	if err != nil {
		return response{}, err
	}
	e, err := svc.Get(ctx, r.accountID, id)
	if err != nil {
		return response{}, err
	}
	return response{status: http.StatusOK, body: e.JSON(h.svc.Now(), false)}, nil
}

// patchWebhookEndpoint serves PATCH /v1/webhook-endpoints/{id}: url,
// description, event_types, disabled; absent fields unchanged.
func (h *Handler) patchWebhookEndpoint(ctx context.Context, r *request) (response, error) {
	svc, id, err := h.endpoint(r)
	if err != nil {
		return response{}, err
	}
	var in api.WebhookEndpointRequest
	if err := r.decodeJSON(&in, false); err != nil {
		return response{}, err
	}
	e, err := svc.Update(ctx, r.accountID, id, delivery.EndpointInput(in))
	if err != nil {
		return response{}, err
	}
	return response{status: http.StatusOK, body: e.JSON(h.svc.Now(), false)}, nil
}

// deleteWebhookEndpoint serves DELETE /v1/webhook-endpoints/{id}: 204.
func (h *Handler) deleteWebhookEndpoint(ctx context.Context, r *request) (response, error) {
	svc, id, err := h.endpoint(r)
	if err != nil {
		return response{}, err
	}
	if err := svc.Delete(ctx, r.accountID, id); err != nil {
		return response{}, err
	}
	return response{status: http.StatusNoContent}, nil
}

// rotateWebhookSecret serves POST /v1/webhook-endpoints/{id}/rotate-secret:
// 200 with the endpoint and its new secret; the old one signs too for
// delivery.RotationOverlap (24 h).
func (h *Handler) rotateWebhookSecret(ctx context.Context, r *request) (response, error) {
	svc, id, err := h.endpoint(r)
	if err != nil {
		return response{}, err
	}
	e, err := svc.RotateSecret(ctx, r.accountID, id)
	if err != nil {
		return response{}, err
	}
	return response{status: http.StatusOK, body: e.JSON(h.svc.Now(), true)}, nil
}

// listWebhookDeliveries serves GET /v1/webhook-endpoints/{id}/deliveries:
// the delivery log, newest first, limit 1..100 (default 20), cursor.
func (h *Handler) listWebhookDeliveries(ctx context.Context, r *request) (response, error) {
	svc, id, err := h.endpoint(r)
	if err != nil {
		return response{}, err
	}
	limit, err := r.queryInt("limit", defaultDeliveryLimit, 1, maxDeliveryLimit)
	if err != nil {
		return response{}, err
	}
	ds, next, err := svc.Deliveries(ctx, r.accountID, id, limit, r.event.QueryStringParameters["cursor"])
	if err != nil {
		return response{}, err
	}
	out := api.WebhookDeliveryList{Deliveries: make([]api.WebhookDelivery, 0, len(ds)), NextCursor: httpapi.Nullable(next)}
	for _, d := range ds {
		out.Deliveries = append(out.Deliveries, d.JSON())
	}
	return response{status: http.StatusOK, body: out}, nil
}

// retryWebhookDelivery serves POST …/deliveries/{delivery_id}/retry: 202
// with the delivery, pending, its attempt under way.
func (h *Handler) retryWebhookDelivery(ctx context.Context, r *request) (response, error) {
	svc, id, err := h.endpoint(r)
	if err != nil {
		return response{}, err
	}
	did, err := r.deliveryID()
	if err != nil {
		return response{}, err
	}
	d, err := svc.Retry(ctx, r.accountID, id, did)
	if err != nil {
		return response{}, err
	}
	return response{status: http.StatusAccepted, body: d.JSON()}, nil
}
