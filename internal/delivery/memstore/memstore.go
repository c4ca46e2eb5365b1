// Package memstore is an in-memory delivery.Store for tests and benchmarks,
// with the conditional-write rules of the DynamoDB store
// (internal/delivery/dynamostore): create only when the id is new, update
// only from the stored version, at most delivery.MaxEndpointsPerAccount
// endpoints per account, deliveries newest first. Nothing survives the
// process: not for production.
package memstore

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Store is an in-memory delivery.Store; safe for concurrent use.
type Store struct {
	mu         sync.Mutex
	endpoints  map[string]delivery.Endpoint          // by id
	deliveries map[string]delivery.Delivery          // by endpoint id + "/" + delivery id
	parked     map[string]map[string]delivery.Parked // by endpoint id, then delivery id
	watches    map[string]time.Time                  // by endpoint id: the watch's start
}

var _ delivery.Store = (*Store)(nil)

// New returns an empty Store.
func New() *Store {
	return &Store{endpoints: map[string]delivery.Endpoint{}, deliveries: map[string]delivery.Delivery{},
		parked: map[string]map[string]delivery.Parked{}, watches: map[string]time.Time{}}
}

func notFound(what, id string) error {
	return lifecycle.Errorf(lifecycle.CodeNotFound, "no %s %q", what, id)
}

func cloneEndpoint(e delivery.Endpoint) *delivery.Endpoint {
	e.EventTypes = slices.Clone(e.EventTypes)
	e.Retired = slices.Clone(e.Retired)
	e.Holds = slices.Clone(e.Holds)
	return &e
}

func cloneDelivery(d delivery.Delivery) *delivery.Delivery {
	d.Attempts = slices.Clone(d.Attempts)
	d.Payload = slices.Clone(d.Payload)
	return &d
}

// CreateEndpoint implements delivery.Store.
func (s *Store) CreateEndpoint(_ context.Context, e *delivery.Endpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.endpoints[e.ID]; ok {
		return lifecycle.Errorf(lifecycle.CodeConflict, "endpoint %q exists", e.ID)
	}
	n := 0
	for _, x := range s.endpoints {
		if x.AccountID == e.AccountID {
			n++
		}
	}
	if n >= delivery.MaxEndpointsPerAccount {
		return lifecycle.Errorf(lifecycle.CodeConflict, "an account may have at most %d webhook endpoints", delivery.MaxEndpointsPerAccount)
	}
	s.endpoints[e.ID] = *cloneEndpoint(*e)
	return nil
}

// GetEndpoint implements delivery.Store.
func (s *Store) GetEndpoint(_ context.Context, accountID, id string) (*delivery.Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.endpoints[id]
	if !ok || e.AccountID != accountID {
		return nil, notFound("webhook endpoint", id)
	}
	return cloneEndpoint(e), nil
}

// ListEndpoints implements delivery.Store.
func (s *Store) ListEndpoints(_ context.Context, accountID string) ([]*delivery.Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*delivery.Endpoint
	for _, e := range s.endpoints {
		if e.AccountID == accountID {
			out = append(out, cloneEndpoint(e))
		}
	}
	slices.SortFunc(out, func(a, b *delivery.Endpoint) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// UpdateEndpoint implements delivery.Store.
func (s *Store) UpdateEndpoint(_ context.Context, e *delivery.Endpoint, prevVersion int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.endpoints[e.ID]
	if !ok || cur.AccountID != e.AccountID {
		return notFound("webhook endpoint", e.ID)
	}
	if cur.Version != prevVersion {
		return lifecycle.Errorf(lifecycle.CodeConflict, "webhook endpoint %q changed meanwhile", e.ID)
	}
	s.endpoints[e.ID] = *cloneEndpoint(*e)
	return nil
}

// DeleteEndpoint implements delivery.Store.
func (s *Store) DeleteEndpoint(_ context.Context, accountID, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.endpoints[id]; !ok || e.AccountID != accountID {
		return notFound("webhook endpoint", id)
	}
	delete(s.endpoints, id)
	return nil
}

// CreateDelivery implements delivery.Store.
func (s *Store) CreateDelivery(_ context.Context, d *delivery.Delivery) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := d.EndpointID + "/" + d.ID
	if _, ok := s.deliveries[k]; ok {
		return false, nil
	}
	s.deliveries[k] = *cloneDelivery(*d)
	return true, nil
}

// GetDelivery implements delivery.Store.
func (s *Store) GetDelivery(_ context.Context, endpointID, id string) (*delivery.Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.deliveries[endpointID+"/"+id]
	if !ok {
		return nil, notFound("delivery", id)
	}
	return cloneDelivery(d), nil
}

// UpdateDelivery implements delivery.Store.
func (s *Store) UpdateDelivery(_ context.Context, d *delivery.Delivery, prevVersion int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := d.EndpointID + "/" + d.ID
	cur, ok := s.deliveries[k]
	if !ok {
		return notFound("delivery", d.ID)
	}
	if cur.Version != prevVersion {
		return lifecycle.Errorf(lifecycle.CodeConflict, "delivery %q changed meanwhile", d.ID)
	}
	s.deliveries[k] = *cloneDelivery(*d)
	return nil
}

// ListDeliveries implements delivery.Store; the cursor is the offset.
func (s *Store) ListDeliveries(_ context.Context, endpointID string, limit int, cursor string) ([]*delivery.Delivery, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	off := 0
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil || n < 0 {
			return nil, "", lifecycle.Errorf(lifecycle.CodeInvalid, "cursor is not valid")
		}
		off = n
	}
	var all []*delivery.Delivery
	for _, d := range s.deliveries {
		if d.EndpointID == endpointID {
			all = append(all, cloneDelivery(d))
		}
	}
	slices.SortFunc(all, func(a, b *delivery.Delivery) int { return strings.Compare(b.ID, a.ID) })
	if off >= len(all) {
		return nil, "", nil
	}
	end := min(off+limit, len(all))
	next := ""
	if end < len(all) {
		next = strconv.Itoa(end)
	}
	return all[off:end], next, nil
}

// PendingDeliveries implements delivery.PendingLister.
func (s *Store) PendingDeliveries(_ context.Context) ([]*delivery.Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*delivery.Delivery
	for _, d := range s.deliveries {
		if d.Status == delivery.StatusPending {
			out = append(out, cloneDelivery(d))
		}
	}
	return out, nil
}

// ParkDelivery implements delivery.Store.
func (s *Store) ParkDelivery(_ context.Context, p *delivery.Parked) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.parked[p.EndpointID] == nil {
		s.parked[p.EndpointID] = map[string]delivery.Parked{}
	}
	s.parked[p.EndpointID][p.DeliveryID] = *p
	return nil
}

// ParkedDeliveries implements delivery.Store.
func (s *Store) ParkedDeliveries(_ context.Context, endpointID string, limit int) ([]*delivery.Parked, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*delivery.Parked
	for _, p := range s.parked[endpointID] {
		out = append(out, &p)
	}
	slices.SortFunc(out, func(a, b *delivery.Parked) int { return strings.Compare(a.DeliveryID, b.DeliveryID) })
	return out[:min(limit, len(out))], nil
}

// ClaimParked implements delivery.Store.
func (s *Store) ClaimParked(_ context.Context, p *delivery.Parked, now, before time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.parked[p.EndpointID][p.DeliveryID]
	if !ok || !cur.ParkedAt.Equal(p.ParkedAt) || cur.WokenAt.After(before) {
		return false, nil
	}
	cur.WokenAt = now
	s.parked[p.EndpointID][p.DeliveryID] = cur
	return true, nil
}

// UnparkDelivery implements delivery.Store.
func (s *Store) UnparkDelivery(_ context.Context, p *delivery.Parked) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.parked[p.EndpointID][p.DeliveryID]; ok && cur.ParkedAt.Equal(p.ParkedAt) {
		delete(s.parked[p.EndpointID], p.DeliveryID)
	}
	return nil
}

// StartWatch implements delivery.Store.
func (s *Store) StartWatch(_ context.Context, endpointID string, since time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.watches[endpointID]; ok {
		return false, nil
	}
	s.watches[endpointID] = since
	return true, nil
}

// Watching implements delivery.Store.
func (s *Store) Watching(_ context.Context, endpointID string) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watches[endpointID], nil
}

// EndWatch implements delivery.Store.
func (s *Store) EndWatch(_ context.Context, endpointID string, since time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.watches[endpointID]; ok && cur.Equal(since) {
		delete(s.watches, endpointID)
	}
	return nil
}
