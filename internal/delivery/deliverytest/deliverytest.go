// Package deliverytest is the contract every delivery.Store passes: the
// memory store (internal/delivery/memstore) and the DynamoDB store
// (internal/delivery/dynamostore) run the same cases.
package deliverytest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

func sameRetired(a, b delivery.RetiredSecret) bool {
	return a.Secret == b.Secret && a.Until.Equal(b.Until)
}

// RunStoreContract runs the store contract on stores made by newStore (a
// fresh, empty store per call).
func RunStoreContract(t *testing.T, newStore func(t *testing.T) delivery.Store) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	endpoint := func(account string) *delivery.Endpoint {
		return &delivery.Endpoint{ID: delivery.NewEndpointID(), AccountID: account, URL: "https://example.com/hook",
			EventTypes: []string{"session.paused"}, Secret: delivery.NewSecret(), CreatedAt: now, UpdatedAt: now, Version: 1}
	}
	t.Run("EndpointRoundTrip", func(t *testing.T) {
		s := newStore(t)
		e := endpoint("acct")
		e.Retired = []delivery.RetiredSecret{{Secret: delivery.NewSecret(), Until: now.Add(time.Hour)},
			{Secret: delivery.NewSecret(), Until: now.Add(time.Minute)}}
		e.FailingSince, e.SlowSince = now.Add(-time.Hour), now.Add(-time.Minute)
		e.Holds = []time.Time{now.Add(20 * time.Second), now.Add(5 * time.Second)}
		if err := s.CreateEndpoint(ctx, e); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetEndpoint(ctx, "acct", e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.URL != e.URL || got.Secret != e.Secret || !slices.EqualFunc(got.Retired, e.Retired, sameRetired) ||
			len(got.EventTypes) != 1 || !got.CreatedAt.Equal(now) ||
			!got.FailingSince.Equal(e.FailingSince) || !got.SlowSince.Equal(e.SlowSince) ||
			!slices.EqualFunc(got.Holds, e.Holds, time.Time.Equal) {
			t.Errorf("round trip: got %+v, want %+v", got, e)
		}
		if _, err := s.GetEndpoint(ctx, "other", e.ID); lifecycle.ErrorCode(err) != lifecycle.CodeNotFound {
			t.Errorf("another account's endpoint: %v, want not_found", err)
		}
		if err := s.CreateEndpoint(ctx, e); lifecycle.ErrorCode(err) != lifecycle.CodeConflict {
			t.Errorf("create twice: %v, want conflict", err)
		}
	})
	t.Run("EndpointUpdateIsConditional", func(t *testing.T) {
		s := newStore(t)
		e := endpoint("acct")
		if err := s.CreateEndpoint(ctx, e); err != nil {
			t.Fatal(err)
		}
		e.URL, e.Version = "https://example.com/other", 2
		if err := s.UpdateEndpoint(ctx, e, 1); err != nil {
			t.Fatal(err)
		}
		e.Version = 3
		if err := s.UpdateEndpoint(ctx, e, 1); lifecycle.ErrorCode(err) != lifecycle.CodeConflict {
			t.Errorf("update from a stale version: %v, want conflict", err)
		}
		if err := s.DeleteEndpoint(ctx, "acct", e.ID); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteEndpoint(ctx, "acct", e.ID); lifecycle.ErrorCode(err) != lifecycle.CodeNotFound {
			t.Errorf("delete twice: %v, want not_found", err)
		}
		if err := s.UpdateEndpoint(ctx, e, 2); lifecycle.ErrorCode(err) != lifecycle.CodeNotFound {
			t.Errorf("update a deleted endpoint: %v, want not_found", err)
		}
	})
	t.Run("EndpointsPerAccountAreLimited", func(t *testing.T) {
		s := newStore(t)
		for i := range delivery.MaxEndpointsPerAccount {
			e := endpoint("acct")
			e.CreatedAt = now.Add(time.Duration(i) * time.Second)
			if err := s.CreateEndpoint(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.CreateEndpoint(ctx, endpoint("acct")); lifecycle.ErrorCode(err) != lifecycle.CodeConflict {
			t.Errorf("one endpoint too many: %v, want conflict", err)
		}
		eps, err := s.ListEndpoints(ctx, "acct")
		if err != nil || len(eps) != delivery.MaxEndpointsPerAccount {
			t.Fatalf("list: %d endpoints, %v", len(eps), err)
		}
		for i := 1; i < len(eps); i++ {
			if eps[i].CreatedAt.Before(eps[i-1].CreatedAt) {
				t.Fatal("endpoints are not oldest first")
			}
		}
		if eps, _ := s.ListEndpoints(ctx, "other"); len(eps) != 0 {
			t.Errorf("another account sees %d endpoints", len(eps))
		}
	})
	t.Run("DeliveriesNewestFirstPaginated", func(t *testing.T) {
		s := newStore(t)
		const n = 7
		for i := range n {
			at := now.Add(time.Duration(i) * time.Minute)
			d := &delivery.Delivery{ID: delivery.DeliveryID(at, "we_x", fmt.Sprintf("ses_a:%d", i)), EndpointID: "we_x",
				AccountID: "acct", EventID: fmt.Sprintf("ses_a:%d", i), EventType: "session.paused", Payload: []byte(`{}`),
				Status: delivery.StatusPending, NextAttemptAt: at, CreatedAt: at, UpdatedAt: at,
				ExpiresAt: at.Add(delivery.LogRetention), Version: 1}
			if created, err := s.CreateDelivery(ctx, d); err != nil || !created {
				t.Fatalf("create: %v %v", created, err)
			}
			if created, err := s.CreateDelivery(ctx, d); err != nil || created {
				t.Fatalf("create twice: created=%v, %v; want false", created, err)
			}
		}
		var got []string
		cursor := ""
		for page := 0; ; page++ {
			ds, next, err := s.ListDeliveries(ctx, "we_x", 3, cursor)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds {
				got = append(got, d.EventID)
			}
			if next == "" || page > n {
				break
			}
			cursor = next
		}
		if len(got) != n || got[0] != fmt.Sprintf("ses_a:%d", n-1) || got[n-1] != "ses_a:0" {
			t.Errorf("pages: %v, want %d newest first", got, n)
		}
		if _, _, err := s.ListDeliveries(ctx, "we_x", 3, "garbage"); lifecycle.ErrorCode(err) != lifecycle.CodeInvalid {
			t.Errorf("bad cursor: %v, want invalid", err)
		}
	})
	t.Run("DeliveryUpdateIsConditional", func(t *testing.T) {
		s := newStore(t)
		d := &delivery.Delivery{ID: delivery.DeliveryID(now, "we_x", "ses_a:1"), EndpointID: "we_x", AccountID: "acct",
			EventID: "ses_a:1", Payload: []byte(`{"a":1}`), Status: delivery.StatusPending, CreatedAt: now, UpdatedAt: now,
			ExpiresAt: now.Add(delivery.LogRetention), Version: 1}
		if _, err := s.CreateDelivery(ctx, d); err != nil {
			t.Fatal(err)
		}
		d.Attempts = append(d.Attempts, delivery.Attempt{At: now, StatusCode: 500, LatencyMS: 12, Response: "oops"})
		d.Version = 2
		if err := s.UpdateDelivery(ctx, d, 1); err != nil {
			t.Fatal(err)
		}
		if err := s.UpdateDelivery(ctx, d, 1); lifecycle.ErrorCode(err) != lifecycle.CodeConflict {
			t.Errorf("stale update: %v, want conflict", err)
		}
		got, err := s.GetDelivery(ctx, "we_x", d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Attempts) != 1 || got.Attempts[0].StatusCode != 500 || got.Attempts[0].Response != "oops" || string(got.Payload) != `{"a":1}` {
			t.Errorf("round trip: %+v", got)
		}
		if _, err := s.GetDelivery(ctx, "we_x", "dlv_missing"); lifecycle.ErrorCode(err) != lifecycle.CodeNotFound {
			t.Errorf("missing: %v, want not_found", err)
		}
		if pl, ok := s.(delivery.PendingLister); ok {
			ds, err := pl.PendingDeliveries(ctx)
			if err != nil || len(ds) != 1 || ds[0].ID != d.ID {
				t.Errorf("pending deliveries: %v, %v; want the one", ds, err)
			}
			d.Status, d.Version = delivery.StatusSucceeded, 3
			if err := s.UpdateDelivery(ctx, d, 2); err != nil {
				t.Fatal(err)
			}
			if ds, _ := pl.PendingDeliveries(ctx); len(ds) != 0 {
				t.Errorf("pending after it succeeded: %d", len(ds))
			}
		}
	})
	t.Run("ParkingOldestFirstAndConditionalUnpark", func(t *testing.T) {
		s := newStore(t)
		park := func(i int, at time.Time) *delivery.Parked {
			p := &delivery.Parked{EndpointID: "we_park", AccountID: "acct",
				DeliveryID: delivery.DeliveryID(now.Add(time.Duration(i)*time.Second), "we_park", fmt.Sprintf("ses_p:%d", i)),
				Seq:        i, ParkedAt: at, ExpiresAt: now.Add(delivery.LogRetention).Truncate(time.Second)}
			if err := s.ParkDelivery(ctx, p); err != nil {
				t.Fatal(err)
			}
			return p
		}
		for _, i := range []int{3, 1, 2} {
			park(i, now)
		}
		got, err := s.ParkedDeliveries(ctx, "we_park", 2)
		if err != nil || len(got) != 2 || got[0].Seq != 1 || got[1].Seq != 2 {
			t.Fatalf("parked, limit 2: %+v, %v; want the oldest two deliveries", got, err)
		}
		if g := got[0]; g.AccountID != "acct" || g.EndpointID != "we_park" || !g.ParkedAt.Equal(now) ||
			!g.ExpiresAt.Equal(now.Add(delivery.LogRetention).Truncate(time.Second)) {
			t.Errorf("round trip: %+v", g)
		}
		again := park(1, now.Add(time.Minute)) // parked again: replaces
		if ok, err := s.ClaimParked(ctx, got[0], now, now.Add(-time.Minute)); err != nil || ok {
			t.Errorf("claim an earlier parking: %v, %v; want false", ok, err)
		}
		if ok, err := s.ClaimParked(ctx, again, now.Add(2*time.Minute), now.Add(time.Minute)); err != nil || !ok {
			t.Fatalf("claim: %v, %v", ok, err)
		}
		if ok, _ := s.ClaimParked(ctx, again, now.Add(2*time.Minute), now.Add(time.Minute)); ok {
			t.Error("a second wake claimed a claimed parking")
		}
		if ps, _ := s.ParkedDeliveries(ctx, "we_park", 1); len(ps) != 1 || !ps[0].WokenAt.Equal(now.Add(2*time.Minute)) {
			t.Errorf("claimed parking: %+v", ps)
		}
		if ok, _ := s.ClaimParked(ctx, again, now.Add(4*time.Minute), now.Add(3*time.Minute)); !ok {
			t.Error("an old claim (a wake that crashed) kept the parking from being claimed again")
		}
		if err := s.UnparkDelivery(ctx, got[0]); err != nil {
			t.Fatal(err)
		}
		all, _ := s.ParkedDeliveries(ctx, "we_park", 10)
		if len(all) != 3 || !all[0].ParkedAt.Equal(again.ParkedAt) {
			t.Fatalf("after unparking an earlier parking: %+v, want the later one kept", all)
		}
		if err := s.UnparkDelivery(ctx, again); err != nil {
			t.Fatal(err)
		}
		if err := s.UnparkDelivery(ctx, again); err != nil {
			t.Errorf("unpark twice: %v", err)
		}
		if all, _ := s.ParkedDeliveries(ctx, "we_park", 10); len(all) != 2 || all[0].Seq != 2 {
			t.Errorf("after unparking: %+v", all)
		}
		if other, _ := s.ParkedDeliveries(ctx, "we_other", 10); len(other) != 0 {
			t.Errorf("another endpoint has %d parked", len(other))
		}
	})
	t.Run("WatchStartsOnceAndEndsByItsStart", func(t *testing.T) {
		s := newStore(t)
		if since, err := s.Watching(ctx, "we_w"); err != nil || !since.IsZero() {
			t.Fatalf("no watch: %s, %v", since, err)
		}
		if ok, err := s.StartWatch(ctx, "we_w", now); err != nil || !ok {
			t.Fatalf("start: %v, %v", ok, err)
		}
		if ok, err := s.StartWatch(ctx, "we_w", now.Add(time.Second)); err != nil || ok {
			t.Fatalf("start a second: %v, %v; want false", ok, err)
		}
		if since, _ := s.Watching(ctx, "we_w"); !since.Equal(now) {
			t.Errorf("watching since %s, want %s", since, now)
		}
		if _, err := s.ParkedDeliveries(ctx, "we_w", 10); err != nil {
			t.Fatal(err)
		}
		if ps, _ := s.ParkedDeliveries(ctx, "we_w", 10); len(ps) != 0 {
			t.Errorf("the watch reads as %d parked deliveries", len(ps))
		}
		if err := s.EndWatch(ctx, "we_w", now.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if since, _ := s.Watching(ctx, "we_w"); !since.Equal(now) {
			t.Errorf("ended by another start: watching since %s", since)
		}
		if err := s.EndWatch(ctx, "we_w", now); err != nil {
			t.Fatal(err)
		}
		if since, _ := s.Watching(ctx, "we_w"); !since.IsZero() {
			t.Errorf("after its end: watching since %s", since)
		}
	})
}
