package delivery

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Service runs the account-facing operations on endpoints and their
// delivery logs (the /v1/webhook-endpoints routes). Errors are
// *lifecycle.Error: invalid (a bad field, a refused URL), not_found (no such
// endpoint of the caller's account, or delivery), conflict (too many
// endpoints, a concurrent change).
type Service struct {
	store    Store
	guard    Guard
	dispatch Dispatcher
	clock    lifecycle.Clock
}

// NewService returns a Service; dispatch runs replays (nil: Retry answers
// unavailable); clock nil means lifecycle.SystemClock.
func NewService(store Store, guard Guard, dispatch Dispatcher, clock lifecycle.Clock) *Service {
	if clock == nil {
		clock = lifecycle.SystemClock{}
	}
	return &Service{store: store, guard: guard, dispatch: dispatch, clock: clock}
}

// EndpointInput is a create (URL required) or a patch (nil: unchanged).
type EndpointInput struct {
	URL         *string
	Description *string
	EventTypes  *[]string
	Disabled    *bool
}

func (s *Service) checkInput(ctx context.Context, in EndpointInput) error {
	if in.URL != nil {
		if err := s.guard.CheckURL(ctx, *in.URL); err != nil {
			return err
		}
	}
	if in.Description != nil && len(*in.Description) > MaxDescriptionLength {
		return lifecycle.Errorf(lifecycle.CodeInvalid, "description must be at most %d bytes", MaxDescriptionLength)
	}
	if in.EventTypes != nil {
		for _, t := range *in.EventTypes {
			if !slices.Contains(EventTypes, t) {
				return lifecycle.Errorf(lifecycle.CodeInvalid, "event_types: %q is not an event type (one of %v)", truncate(t, 64), EventTypes)
			}
		}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// Create registers an endpoint for the account and returns it with its
// secret (shown once: later reads leave it out at the HTTP edge).
func (s *Service) Create(ctx context.Context, accountID string, in EndpointInput) (*Endpoint, error) {
	if in.URL == nil {
		return nil, lifecycle.Errorf(lifecycle.CodeInvalid, "url is required")
	}
	if err := s.checkInput(ctx, in); err != nil {
		return nil, err
	}
	now := s.clock.Now()
	e := &Endpoint{ID: NewEndpointID(), AccountID: accountID, URL: *in.URL, Secret: NewSecret(),
		CreatedAt: now, UpdatedAt: now, Version: 1}
	if in.Description != nil {
		e.Description = *in.Description
	}
	if in.EventTypes != nil {
		e.EventTypes = slices.Compact(slices.Sorted(slices.Values(*in.EventTypes)))
	}
	if in.Disabled != nil && *in.Disabled {
		e.Disabled, e.DisabledReason = true, "disabled by request"
	}
	if err := s.store.CreateEndpoint(ctx, e); err != nil {
		return nil, err
	}
	return e, nil
}

// Get returns one of the account's endpoints.
func (s *Service) Get(ctx context.Context, accountID, id string) (*Endpoint, error) {
	return s.store.GetEndpoint(ctx, accountID, id)
}

// List returns the account's endpoints, oldest first.
func (s *Service) List(ctx context.Context, accountID string) ([]*Endpoint, error) {
	return s.store.ListEndpoints(ctx, accountID)
}

// Update patches an endpoint. Enabling a disabled endpoint clears its
// failure streak, and so does a new URL: the old URL's failures say
// nothing of it, and must not count towards disabling it.
func (s *Service) Update(ctx context.Context, accountID, id string, in EndpointInput) (*Endpoint, error) {
	if err := s.checkInput(ctx, in); err != nil {
		return nil, err
	}
	return s.modify(ctx, accountID, id, func(e *Endpoint) {
		if in.URL != nil && *in.URL != e.URL {
			e.URL, e.FailingSince, e.SlowSince, e.Holds = *in.URL, time.Time{}, time.Time{}, nil
		}
		if in.Description != nil {
			e.Description = *in.Description
		}
		if in.EventTypes != nil {
			e.EventTypes = slices.Compact(slices.Sorted(slices.Values(*in.EventTypes)))
		}
		if in.Disabled != nil {
			switch {
			case *in.Disabled && !e.Disabled:
				e.Disabled, e.DisabledReason = true, "disabled by request"
			case !*in.Disabled:
				e.Disabled, e.DisabledReason, e.FailingSince, e.Holds = false, "", time.Time{}, nil
			}
		}
	})
}

// RotateSecret gives the endpoint a new secret; the old one keeps signing
// for RotationOverlap, and so do earlier ones still in their overlap
// (Endpoint.Rotate). It returns the endpoint with the new secret.
func (s *Service) RotateSecret(ctx context.Context, accountID, id string) (*Endpoint, error) {
	secret := NewSecret()
	return s.modify(ctx, accountID, id, func(e *Endpoint) { e.Rotate(secret, s.clock.Now()) })
}

// modify applies change to the stored endpoint with a conditional write,
// reading again after a lost race (at most three times).
func (s *Service) modify(ctx context.Context, accountID, id string, change func(*Endpoint)) (*Endpoint, error) {
	var err error
	for try := 0; try < 3; try++ {
		var e *Endpoint
		if e, err = s.store.GetEndpoint(ctx, accountID, id); err != nil {
			return nil, err
		}
		prev := e.Version
		change(e)
		e.Version, e.UpdatedAt = e.Version+1, s.clock.Now()
		if err = s.store.UpdateEndpoint(ctx, e, prev); err == nil {
			return e, nil
		}
		if lifecycle.ErrorCode(err) != lifecycle.CodeConflict {
			return nil, err
		}
	}
	return nil, err
}

// Delete removes one of the account's endpoints; its pending deliveries
// end failed ("endpoint deleted") at their next attempt.
func (s *Service) Delete(ctx context.Context, accountID, id string) error {
	return s.store.DeleteEndpoint(ctx, accountID, id)
}

// Deliveries returns a page of the endpoint's delivery log, newest first
// (limit 1..100).
func (s *Service) Deliveries(ctx context.Context, accountID, endpointID string, limit int, cursor string) ([]*Delivery, string, error) {
	if _, err := s.store.GetEndpoint(ctx, accountID, endpointID); err != nil {
		return nil, "", err
	}
	return s.store.ListDeliveries(ctx, endpointID, limit, cursor)
}

// Retry sends a delivery again now (a replay): it becomes pending with a
// fresh run of the schedule and the same webhook-id; it returns the
// delivery as it stands. Errors: not_found, unavailable without a
// dispatcher, conflict (a concurrent change).
func (s *Service) Retry(ctx context.Context, accountID, endpointID, deliveryID string) (*Delivery, error) {
	if s.dispatch == nil {
		return nil, lifecycle.Errorf(lifecycle.CodeUnavailable, "webhook deliveries are not running here")
	}
	if _, err := s.store.GetEndpoint(ctx, accountID, endpointID); err != nil {
		return nil, err
	}
	d, err := s.store.GetDelivery(ctx, endpointID, deliveryID)
	if err != nil {
		return nil, err
	}
	if d.AccountID != accountID {
		return nil, lifecycle.Errorf(lifecycle.CodeNotFound, "no delivery %q", deliveryID)
	}
	if len(d.Attempts) >= MaxAttemptsPerDelivery {
		return nil, lifecycle.Errorf(lifecycle.CodeConflict, "delivery %q has had %d attempts, the most a delivery may have", deliveryID, MaxAttemptsPerDelivery)
	}
	now := s.clock.Now()
	prev := d.Version
	d.Status, d.Reason, d.RoundStart, d.NextAttemptAt = StatusPending, "", len(d.Attempts), now
	d.Version, d.UpdatedAt, d.ExpiresAt = d.Version+1, now, now.Add(LogRetention)
	if err := s.store.UpdateDelivery(ctx, d, prev); err != nil {
		return nil, err
	}
	job := Job{AccountID: d.AccountID, EndpointID: d.EndpointID, DeliveryID: d.ID, Seq: len(d.Attempts)}
	if err := s.dispatch.Dispatch(ctx, job, now); err != nil {
		return nil, errors.Join(lifecycle.Errorf(lifecycle.CodeUnavailable, "the replay could not be queued; try again"), err)
	}
	return d, nil
}
