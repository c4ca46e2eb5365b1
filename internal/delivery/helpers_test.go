package delivery_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/delivery/memstore"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// received is one request a receiver got.
type received struct {
	header http.Header
	body   []byte
}

// receiver is a test endpoint answering with codes in turn (the last one
// repeats) and keeping every request.
type receiver struct {
	*httptest.Server
	mu    sync.Mutex
	codes []int
	got   []received
}

func newReceiver(t *testing.T, codes ...int) *receiver {
	t.Helper()
	r := &receiver{codes: codes}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b := make([]byte, req.ContentLength)
		_, _ = req.Body.Read(b)
		r.mu.Lock()
		r.got = append(r.got, received{header: req.Header.Clone(), body: b})
		code := r.codes[min(len(r.got), len(r.codes))-1]
		r.mu.Unlock()
		w.WriteHeader(code)
		_, _ = w.Write([]byte("answer from the receiver"))
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// verify checks a request with the Standard Webhooks library and secret.
func verify(t *testing.T, secret string, rq received) error {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	return wh.Verify(rq.body, rq.header)
}

// rig is an engine on a memstore with the in-process dispatcher.
type rig struct {
	store  *memstore.Store
	local  *delivery.Local
	engine *delivery.Engine
	svc    *delivery.Service
}

func newRig(t *testing.T, schedule string, guard delivery.Guard) *rig {
	t.Helper()
	sched, err := delivery.ParseSchedule(schedule)
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New()
	local := delivery.NewLocal(delivery.LocalConfig{})
	engine, err := delivery.NewEngine(delivery.Config{Store: store, Dispatcher: local, Guard: guard, Schedule: sched,
		WatchEvery: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	local.Start(ctx, engine)
	t.Cleanup(func() { cancel(); local.Wait() })
	return &rig{store: store, local: local, engine: engine, svc: delivery.NewService(store, guard, local, nil)}
}

func (r *rig) endpoint(t *testing.T, account, url string, types ...string) *delivery.Endpoint {
	t.Helper()
	in := delivery.EndpointInput{URL: &url}
	if types != nil {
		in.EventTypes = &types
	}
	e, err := r.svc.Create(context.Background(), account, in)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func pausedEvent(account, session string, version int64) lifecycle.Event {
	return lifecycle.Event{EventID: lifecycle.EventID(session, version), SessionID: session, AccountID: account,
		From: lifecycle.StateRunning, To: lifecycle.StatePaused, Version: version, Reason: "idle",
		Time: time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC).Add(time.Duration(version) * time.Second)}
}

// fakeResolver answers every name with addrs (changeable).
type fakeResolver struct {
	mu    sync.Mutex
	addrs map[string][]netip.Addr
}

func (f *fakeResolver) set(host string, addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.addrs == nil {
		f.addrs = map[string][]netip.Addr{}
	}
	f.addrs[host] = nil
	for _, a := range addrs {
		f.addrs[host] = append(f.addrs[host], netip.MustParseAddr(a))
	}
}

func (f *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a, ok := f.addrs[host]; ok {
		return a, nil
	}
	return nil, &netError{host}
}

type netError struct{ host string }

func (e *netError) Error() string { return "no such host " + e.host }

// recorder is a Dispatcher that only records jobs (time driven by hand).
type recorder struct {
	mu   sync.Mutex
	jobs []delivery.Job
	at   []time.Time
}

func (r *recorder) Dispatch(_ context.Context, job delivery.Job, at time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.jobs, r.at = append(r.jobs, job), append(r.at, at)
	return nil
}

func (r *recorder) take() (delivery.Job, time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.jobs) == 0 {
		return delivery.Job{}, time.Time{}, false
	}
	j, at := r.jobs[0], r.at[0]
	r.jobs, r.at = r.jobs[1:], r.at[1:]
	return j, at, true
}

func redirectTo(url string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, url, http.StatusTemporaryRedirect)
	})
}
