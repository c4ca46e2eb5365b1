package delivery

import (
	"context"
	"fmt"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Parking: an attempt that finds its endpoint at its cap (a failing
// endpoint's one attempt under way or its FailingGap, a slow endpoint's
// SlowEndpointConcurrency) parks its delivery and ends its job. Nothing
// reads or writes a parked delivery while it waits; two things dispatch it
// again:
//
//   - the attempt that lets go of a hold wakes the oldest parked deliveries
//     the endpoint has room for (wakeAfter): the next attempt of a failing
//     endpoint is dispatched for the end of its FailingGap, a slow
//     endpoint's at once, and every parked one (a batch at a time) once the
//     endpoint is healthy;
//   - the endpoint's watch, one job per endpoint with parked deliveries
//     (Job.Watch, recorded by Store.StartWatch before the parking job ends),
//     runs every WatchEvery and wakes what the endpoint has room for, all
//     of them when it is healthy, deleted or disabled. It is what recovers a
//     parked delivery when no attempt wakes it: the holder crashed (its hold
//     ends on its own), a woken job was stale, the endpoint was changed.
//     It ends (Store.EndWatch) once nothing is parked.
//
// No parked delivery is stranded: a parking is recorded, then the watch is
// looked up, and the job that parked returns only after both (SQS runs it
// again if it fails between them); a watch that finds nothing parked ends,
// then looks again and starts a new watch if a parking landed meanwhile; a
// wake dispatches a delivery before it removes the parking. In the local
// stack, whose jobs live in memory, Local.Recover dispatches every pending
// delivery and every recorded watch after a restart.

// park parks d, whose endpoint ep is at its cap at now, and makes sure
// the endpoint has a watch. Errors: the store's or the dispatcher's (the
// job runs again: parking twice is harmless).
func (e *Engine) park(ctx context.Context, ep *Endpoint, d *Delivery, now time.Time) error {
	p := &Parked{EndpointID: d.EndpointID, AccountID: d.AccountID, DeliveryID: d.ID, Seq: len(d.Attempts),
		ParkedAt: now, ExpiresAt: d.ExpiresAt}
	if err := e.store.ParkDelivery(ctx, p); err != nil {
		return fmt.Errorf("park delivery %s: %w", d.ID, err)
	}
	since, err := e.store.Watching(ctx, ep.ID)
	if err != nil {
		return fmt.Errorf("look up the watch of endpoint %s: %w", ep.ID, err)
	}
	if !since.IsZero() {
		return nil // the watch runs: it will see this parking
	}
	return e.startWatch(ctx, ep.AccountID, ep.ID, now)
}

// startWatch starts the endpoint's watch at now: its first job is
// dispatched before the watch is recorded, so a recorded watch always has
// a job (one recorded by another caller meanwhile wins; this job then
// finds it is not the recorded one and ends).
func (e *Engine) startWatch(ctx context.Context, accountID, endpointID string, now time.Time) error {
	job := Job{AccountID: accountID, EndpointID: endpointID, Watch: now}
	if err := e.dispatch.Dispatch(ctx, job, now.Add(e.watchEvery)); err != nil {
		return fmt.Errorf("dispatch the watch of endpoint %s: %w", endpointID, err)
	}
	if _, err := e.store.StartWatch(ctx, endpointID, now); err != nil {
		return fmt.Errorf("start the watch of endpoint %s: %w", endpointID, err)
	}
	return nil
}

// wake dispatches at most n of the endpoint's parked deliveries, oldest
// first, for at: each is claimed first (Store.ClaimParked: wakes running at
// once take different ones; a claim of a wake that crashed ends after
// WatchEvery), dispatched, then its parking is removed. It returns how
// many parkings it read (up to n+SlowEndpointConcurrency+1: whether more
// than it woke are parked) and how many it woke. Errors: reading,
// claiming or dispatching failed (what is left stays parked); a parking
// that could not be removed is only logged (waking it again later is
// harmless: its job is then stale).
func (e *Engine) wake(ctx context.Context, endpointID string, n int, at time.Time) (found, woken int, err error) {
	ps, err := e.store.ParkedDeliveries(ctx, endpointID, n+SlowEndpointConcurrency+1)
	if err != nil {
		return 0, 0, fmt.Errorf("read the parked deliveries of endpoint %s: %w", endpointID, err)
	}
	now := e.clock.Now()
	for _, p := range ps {
		if woken == n {
			break
		}
		if p.WokenAt.After(now.Add(-e.watchEvery)) {
			continue // another wake has it
		}
		ok, err := e.store.ClaimParked(ctx, p, now, now.Add(-e.watchEvery))
		if err != nil {
			return len(ps), woken, fmt.Errorf("claim parked delivery %s: %w", p.DeliveryID, err)
		}
		if !ok {
			continue
		}
		if err := e.dispatch.Dispatch(ctx, p.Job(), at); err != nil {
			return len(ps), woken, fmt.Errorf("wake parked delivery %s: %w", p.DeliveryID, err)
		}
		woken++
		if err := e.store.UnparkDelivery(ctx, p); err != nil {
			e.log.WarnContext(ctx, "delivery: unpark a woken delivery", "delivery_id", p.DeliveryID, "err", err)
		}
	}
	return len(ps), woken, nil
}

// wakeLogged is wake for the attempts' wakes, which are best effort: a
// failure is logged and the watch wakes what is left.
func (e *Engine) wakeLogged(ctx context.Context, endpointID string, n int, at time.Time) (found, woken int) {
	found, woken, err := e.wake(ctx, endpointID, n, at)
	if err != nil {
		e.log.WarnContext(ctx, "delivery: wake parked deliveries", "endpoint_id", endpointID, "err", err)
	}
	return found, woken
}

// wakeAfter wakes the parked deliveries of ep that the attempt of d, which
// held ep and has let go, leaves room for (ep as endpointHealth left it):
// every one (a batch; the watch runs at once for more) when the endpoint is
// healthy now; else, when its cap has a hold free, one at once (the hold
// this attempt let go: a woken attempt takes its hold only when it runs, so
// waking more could wake more than the cap admits); else, for a failing
// endpoint whose only hold is the gap after this attempt, one at the gap's
// end, unless d itself is due by then (its retry takes the turn).
func (e *Engine) wakeAfter(ctx context.Context, ep *Endpoint, d *Delivery) {
	now := e.clock.Now()
	limit := ep.AttemptCap()
	if limit == 0 || ep.Disabled {
		if found, woken := e.wakeLogged(ctx, ep.ID, WakeBatch, now); found > woken {
			e.watchNow(ctx, ep)
		}
		return
	}
	live := ep.liveHolds(now)
	if len(live) < limit { // one: the hold this attempt let go (the watch fills what crashed holders left)
		e.wakeLogged(ctx, ep.ID, 1, now)
		return
	}
	if limit != 1 || len(live) != 1 {
		return
	}
	at := live[0]
	if d.Status == StatusPending && !d.NextAttemptAt.After(at) {
		return
	}
	e.wakeLogged(ctx, ep.ID, 1, at)
}

// watchNow dispatches a job of ep's recorded watch due now (best effort),
// for the parked deliveries a healthy endpoint's wake left.
func (e *Engine) watchNow(ctx context.Context, ep *Endpoint) {
	since, err := e.store.Watching(ctx, ep.ID)
	if err != nil || since.IsZero() {
		return // none recorded: nothing parked is left without a watch
	}
	job := Job{AccountID: ep.AccountID, EndpointID: ep.ID, Watch: since}
	if err := e.dispatch.Dispatch(ctx, job, e.clock.Now()); err != nil {
		e.log.WarnContext(ctx, "delivery: dispatch an endpoint watch", "endpoint_id", ep.ID, "err", err)
	}
}

// watch runs one look of an endpoint's watch (job.Watch, its start): a job
// of a watch that is not the recorded one ends. It wakes what the endpoint
// has room for (every parked delivery, a batch at a time, when the endpoint
// is healthy, disabled or gone: their attempts run or settle), then comes
// back after WatchEvery (at once for the next batch) while any is parked;
// when none is, it ends the watch, then looks once more and starts a new
// one if a delivery parked meanwhile. Errors: the store's or the
// dispatcher's (the job runs again).
func (e *Engine) watch(ctx context.Context, job Job) error {
	since, err := e.store.Watching(ctx, job.EndpointID)
	if err != nil {
		return err
	}
	now := e.clock.Now()
	if since.IsZero() { // ended: maybe by this job, whose look after the end failed
		return e.restartIfParked(ctx, job, now)
	}
	if !since.Equal(job.Watch) {
		return nil // another watch is the endpoint's
	}
	room := WakeBatch
	ep, err := e.store.GetEndpoint(ctx, job.AccountID, job.EndpointID)
	switch {
	case lifecycle.ErrorCode(err) == lifecycle.CodeNotFound:
	case err != nil:
		return err
	case !ep.Disabled && ep.AttemptCap() > 0:
		room = max(0, ep.AttemptCap()-len(ep.liveHolds(now)))
	}
	found, woken, err := e.wake(ctx, job.EndpointID, room, now)
	if err != nil {
		return err
	}
	if found > woken {
		next := now.Add(e.watchEvery)
		if woken == WakeBatch {
			next = now // a healthy endpoint's next batch
		}
		return e.dispatch.Dispatch(ctx, job, next)
	}
	if err := e.store.EndWatch(ctx, job.EndpointID, since); err != nil {
		return err
	}
	return e.restartIfParked(ctx, job, now)
}

// restartIfParked is the look after a watch ended: a delivery parked after
// the watch's last look, trusting the watch it found recorded, gets a new
// watch.
func (e *Engine) restartIfParked(ctx context.Context, job Job, now time.Time) error {
	ps, err := e.store.ParkedDeliveries(ctx, job.EndpointID, 1)
	if err != nil {
		return err
	}
	if len(ps) > 0 {
		return e.startWatch(ctx, job.AccountID, job.EndpointID, now)
	}
	return nil
}
