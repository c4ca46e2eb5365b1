package eventbridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awseb "github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/smithy-go"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/outbox/eventbridge"
)

const bus = "sandman-test-bus"

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// wireEntry is one PutEvents request entry as it crosses the wire (JSON 1.1).
type wireEntry struct {
	Source       string
	DetailType   string
	Detail       string
	EventBusName string
	Time         json.Number // epoch seconds
	Resources    []string
}

// wireResult is one PutEvents result entry.
type wireResult struct {
	EventId      string `json:",omitempty"`
	ErrorCode    string `json:",omitempty"`
	ErrorMessage string `json:",omitempty"`
}

// detail is what a rule target decodes from Detail.
type detail struct {
	SessionID string `json:"session_id"`
	AccountID string `json:"account_id"`
	From      string `json:"from"`
	To        string `json:"to"`
	Version   int64  `json:"version"`
	Reason    string `json:"reason"`
	Time      string `json:"time"`
}

// answer decides the result of one entry of call n (1-based): "" for
// success, else an ErrorCode.
type answer func(call int, d detail) string

// fakeBus stands in for the EventBridge endpoint: it decodes real PutEvents
// requests, checks their shape and answers per entry.
type fakeBus struct {
	tb     testing.TB
	answer answer

	mu    sync.Mutex
	calls [][]detail // the entries of each call, decoded
}

func (b *fakeBus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.tb.Helper()
	fail := func(format string, args ...any) {
		b.tb.Errorf(format, args...)
		http.Error(w, fmt.Sprintf(format, args...), http.StatusTeapot)
	}
	if got, want := r.Method, http.MethodPost; got != want {
		fail("method = %s, want %s", got, want)
		return
	}
	if got, want := r.Header.Get("X-Amz-Target"), "AWSEvents.PutEvents"; got != want {
		fail("X-Amz-Target = %q, want %q", got, want)
		return
	}
	if got, want := r.Header.Get("Content-Type"), "application/x-amz-json-1.1"; got != want {
		fail("Content-Type = %q, want %q", got, want)
		return
	}
	if got := r.Header.Get("Authorization"); !strings.HasPrefix(got, "AWS4-HMAC-SHA256 Credential=AKIDTEST/") {
		fail("Authorization = %q, want a SigV4 signature with the test key", got)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		fail("read body: %v", err)
		return
	}
	var req struct{ Entries []wireEntry }
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil {
		fail("decode %s: %v", body, err)
		return
	}
	if n := len(req.Entries); n < 1 || n > eventbridge.MaxEntries {
		fail("%d entries in one call, want 1..%d", n, eventbridge.MaxEntries)
		return
	}

	b.mu.Lock()
	b.calls = append(b.calls, nil)
	call := len(b.calls)
	b.mu.Unlock()

	var resp struct {
		Entries          []wireResult
		FailedEntryCount int
	}
	var got []detail
	for i, e := range req.Entries {
		var d detail
		if err := json.Unmarshal([]byte(e.Detail), &d); err != nil {
			fail("entry %d: Detail %q is not JSON: %v", i, e.Detail, err)
			return
		}
		if e.Source != "sandman" || e.EventBusName != bus || e.DetailType != "Session "+strings.ToUpper(d.To[:1])+d.To[1:] {
			fail("entry %d: Source %q EventBusName %q DetailType %q for to=%q", i, e.Source, e.EventBusName, e.DetailType, d.To)
			return
		}
		if sec, err := e.Time.Float64(); err != nil || !time.Unix(int64(sec), 0).Equal(t0.Truncate(time.Second)) {
			fail("entry %d: Time %q, want %v in epoch seconds", i, e.Time, t0)
			return
		}
		got = append(got, d)
		if code := b.code(call, d); code != "" {
			resp.Entries = append(resp.Entries, wireResult{ErrorCode: code, ErrorMessage: "injected " + code})
			resp.FailedEntryCount++
		} else {
			resp.Entries = append(resp.Entries, wireResult{EventId: fmt.Sprintf("evt-%d-%d", call, i)})
		}
	}
	b.mu.Lock()
	b.calls[call-1] = got
	b.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(resp)
}

func (b *fakeBus) code(call int, d detail) string {
	if b.answer == nil {
		return ""
	}
	return b.answer(call, d)
}

// Calls returns the session ids of each call's entries.
func (b *fakeBus) Calls() [][]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([][]string, len(b.calls))
	for i, c := range b.calls {
		for _, d := range c {
			out[i] = append(out[i], d.SessionID)
		}
	}
	return out
}

// MustBus starts a local EventBridge stand-in answering with answer (nil:
// every entry succeeds) and returns a real SDK client pointed at it with
// dummy static credentials.
func MustBus(tb testing.TB, answer answer) (*fakeBus, *awseb.Client) {
	tb.Helper()
	return MustServer(tb, &fakeBus{tb: tb, answer: answer})
}

// MustServer serves h on loopback and returns an SDK client pointed at it.
// The client's own retryer is off so a failing test never waits on the
// SDK's backoff; the publisher's retries are what is tested.
func MustServer[H http.Handler](tb testing.TB, h H) (H, *awseb.Client) {
	tb.Helper()
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	client := awseb.New(awseb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDTEST", "test-secret", ""),
		HTTPClient:   srv.Client(),
		Retryer:      aws.NopRetryer{},
	})
	return h, client
}

// sleeps records the publisher's waits instead of waiting.
type sleeps struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits = append(s.waits, d)
	return ctx.Err()
}

func (s *sleeps) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waits)
}

func events(n int) []lifecycle.Event {
	out := make([]lifecycle.Event, n)
	for i := range out {
		out[i] = lifecycle.Event{
			SessionID: fmt.Sprintf("ses_%02d", i), AccountID: "acc_1",
			From: lifecycle.StateRunning, To: lifecycle.StatePaused, Version: int64(i + 2),
			Reason: lifecycle.ReasonIdle, Time: t0,
		}
	}
	return out
}

func ids(evs []lifecycle.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.SessionID
	}
	return out
}

func TestPublish(t *testing.T) {
	ctx := context.Background()

	t.Run("Batches", func(t *testing.T) {
		b, client := MustBus(t, nil)
		s := &sleeps{}
		evs := events(25)
		evs[3].To = lifecycle.StateExpired // another detail-type, checked by the bus
		if err := eventbridge.New(eventbridge.Config{Client: client, Bus: bus, Sleep: s.sleep}).Publish(ctx, evs...); err != nil {
			t.Fatalf("publish: %v", err)
		}
		calls := b.Calls()
		if got, want := len(calls), 3; got != want {
			t.Fatalf("%d PutEvents calls, want %d", got, want)
		}
		var sizes []int
		var all []string
		for _, c := range calls {
			sizes = append(sizes, len(c))
			all = append(all, c...)
		}
		if got, want := fmt.Sprint(sizes), "[10 10 5]"; got != want {
			t.Errorf("batch sizes %s, want %s", got, want)
		}
		if got, want := fmt.Sprint(all), fmt.Sprint(ids(evs)); got != want {
			t.Errorf("sent %s, want %s", got, want)
		}
		if got := s.count(); got != 0 {
			t.Errorf("%d waits, want 0", got)
		}
	})

	t.Run("Detail", func(t *testing.T) {
		b, client := MustBus(t, nil)
		ev := events(1)[0]
		ev.SandboxID = "sbx_1"
		if err := eventbridge.New(eventbridge.Config{Client: client, Bus: bus}).Publish(ctx, ev); err != nil {
			t.Fatalf("publish: %v", err)
		}
		b.mu.Lock()
		got := b.calls[0][0]
		b.mu.Unlock()
		want := detail{SessionID: "ses_00", AccountID: "acc_1", From: "running", To: "paused", Version: 2, Reason: "idle", Time: "2026-03-01T12:00:00Z"}
		if got != want {
			t.Errorf("detail = %+v, want %+v", got, want)
		}
	})

	t.Run("RetriesOnlyFailed", func(t *testing.T) {
		failing := map[string]string{"ses_03": "ThrottlingException", "ses_12": "InternalFailure", "ses_24": "ThrottlingException"}
		b, client := MustBus(t, func(call int, d detail) string {
			if call <= 3 {
				return failing[d.SessionID]
			}
			return ""
		})
		s := &sleeps{}
		p := eventbridge.New(eventbridge.Config{Client: client, Bus: bus, Sleep: s.sleep, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second})
		if err := p.Publish(ctx, events(25)...); err != nil {
			t.Fatalf("publish: %v", err)
		}
		calls := b.Calls()
		if got, want := len(calls), 4; got != want {
			t.Fatalf("%d calls, want %d (3 batches and one retry)", got, want)
		}
		if got, want := fmt.Sprint(calls[3]), "[ses_03 ses_12 ses_24]"; got != want {
			t.Errorf("retried %s, want %s", got, want)
		}
		if got := s.count(); got != 1 {
			t.Fatalf("%d waits, want 1", got)
		}
		if w := s.waits[0]; w < 50*time.Millisecond || w > 100*time.Millisecond {
			t.Errorf("first wait %v, want within [50ms, 100ms]", w)
		}
	})

	t.Run("GivesUp", func(t *testing.T) {
		b, client := MustBus(t, func(_ int, d detail) string {
			if d.SessionID == "ses_07" || d.SessionID == "ses_21" {
				return "ThrottlingException"
			}
			return ""
		})
		s := &sleeps{}
		p := eventbridge.New(eventbridge.Config{Client: client, Bus: bus, Sleep: s.sleep, MaxAttempts: 3, BaseDelay: 100 * time.Millisecond, MaxDelay: 150 * time.Millisecond})
		err := p.Publish(ctx, events(25)...)
		var de *eventbridge.DeliveryError
		if !errors.As(err, &de) {
			t.Fatalf("publish = %v, want a *DeliveryError", err)
		}
		if got, want := err.Error(), "2 of 25 events not delivered after 3 attempts"; !strings.Contains(got, want) {
			t.Errorf("error %q does not contain %q", got, want)
		}
		var failed []string
		for _, f := range de.Failed {
			failed = append(failed, f.Event.SessionID+"="+f.Code)
		}
		if got, want := fmt.Sprint(failed), "[ses_07=ThrottlingException ses_21=ThrottlingException]"; got != want {
			t.Errorf("failed %s, want %s", got, want)
		}
		if got, want := len(b.Calls()), 5; got != want {
			t.Errorf("%d calls, want %d (3 batches, then 2 retries of the 2 failed)", got, want)
		}
		if got := s.count(); got != 2 {
			t.Fatalf("%d waits, want 2", got)
		}
		if w := s.waits[0]; w < 50*time.Millisecond || w > 100*time.Millisecond {
			t.Errorf("first wait %v, want within [50ms, 100ms]", w)
		}
		if w := s.waits[1]; w < 75*time.Millisecond || w > 150*time.Millisecond {
			t.Errorf("second wait %v, want within [75ms, 150ms] (doubled, capped)", w)
		}
	})

	t.Run("PermanentNotRetried", func(t *testing.T) {
		b, client := MustBus(t, func(_ int, d detail) string {
			if d.SessionID == "ses_01" {
				return "MalformedDetail"
			}
			return ""
		})
		s := &sleeps{}
		err := eventbridge.New(eventbridge.Config{Client: client, Bus: bus, Sleep: s.sleep}).Publish(ctx, events(3)...)
		var de *eventbridge.DeliveryError
		if !errors.As(err, &de) || len(de.Failed) != 1 || de.Failed[0].Code != "MalformedDetail" {
			t.Fatalf("publish = %v, want one MalformedDetail failure", err)
		}
		if got, want := len(b.Calls()), 1; got != want {
			t.Errorf("%d calls, want %d", got, want)
		}
		if got := s.count(); got != 0 {
			t.Errorf("%d waits, want 0", got)
		}
	})

	t.Run("CallFails", func(t *testing.T) {
		var calls int
		var mu sync.Mutex
		_, client := MustServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			calls++
			mu.Unlock()
			w.Header().Set("Content-Type", "application/x-amz-json-1.1")
			w.Header().Set("X-Amzn-ErrorType", "ResourceNotFoundException")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"__type":"ResourceNotFoundException","message":"Event bus sandman-test-bus does not exist."}`)
		}))
		s := &sleeps{}
		err := eventbridge.New(eventbridge.Config{Client: client, Bus: bus, Sleep: s.sleep}).Publish(ctx, events(12)...)
		var de *eventbridge.DeliveryError
		if !errors.As(err, &de) || len(de.Failed) != 12 {
			t.Fatalf("publish = %v, want all 12 undelivered", err)
		}
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != "ResourceNotFoundException" {
			t.Errorf("publish = %v, want it to wrap the API error", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if got, want := calls, 2; got != want {
			t.Errorf("%d calls, want %d (one per batch, no retry of a client error)", got, want)
		}
	})

	t.Run("ContextCancelledInBackoff", func(t *testing.T) {
		b, client := MustBus(t, func(int, detail) string { return "ThrottlingException" })
		ctx, cancel := context.WithCancel(ctx)
		p := eventbridge.New(eventbridge.Config{Client: client, Bus: bus, Sleep: func(ctx context.Context, _ time.Duration) error {
			cancel()
			return ctx.Err()
		}})
		err := p.Publish(ctx, events(2)...)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("publish = %v, want context.Canceled", err)
		}
		if err == nil || !strings.Contains(err.Error(), "2 of 2 events not delivered after 1 attempts") {
			t.Errorf("error %v does not name 2 of 2 undelivered after 1 attempt", err)
		}
		if got, want := len(b.Calls()), 1; got != want {
			t.Errorf("%d calls, want %d", got, want)
		}
	})

	t.Run("NoEvents", func(t *testing.T) {
		b, client := MustBus(t, nil)
		if err := eventbridge.New(eventbridge.Config{Client: client, Bus: bus}).Publish(ctx); err != nil {
			t.Errorf("publish of nothing = %v", err)
		}
		if got := len(b.Calls()); got != 0 {
			t.Errorf("%d calls, want 0", got)
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		b, client := MustBus(t, nil)
		p := eventbridge.New(eventbridge.Config{Client: client, Bus: bus})
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				if err := p.Publish(ctx, events(15)...); err != nil {
					t.Errorf("publish: %v", err)
				}
			})
		}
		wg.Wait()
		n := 0
		for _, c := range b.Calls() {
			n += len(c)
		}
		if got, want := n, 60; got != want {
			t.Errorf("%d entries delivered, want %d", got, want)
		}
		if got, want := len(b.Calls()), 8; got != want {
			t.Errorf("%d calls, want %d", got, want)
		}
	})
}

func TestDeliveryErrorOrder(t *testing.T) {
	// Failures come back in the order the events were given, whichever
	// attempt gave up on them.
	_, client := MustBus(t, func(call int, d detail) string {
		switch {
		case d.SessionID == "ses_00":
			return "ThrottlingException" // retried, then given up at the end
		case d.SessionID == "ses_01" && call == 1:
			return "AccessDeniedException" // given up at once
		}
		return ""
	})
	s := &sleeps{}
	err := eventbridge.New(eventbridge.Config{Client: client, Bus: bus, Sleep: s.sleep, MaxAttempts: 2}).Publish(context.Background(), events(2)...)
	var de *eventbridge.DeliveryError
	if !errors.As(err, &de) {
		t.Fatalf("publish = %v, want a *DeliveryError", err)
	}
	var got []string
	for _, f := range de.Failed {
		got = append(got, f.Event.SessionID)
	}
	if want := []string{"ses_00", "ses_01"}; !slices.Equal(got, want) {
		t.Errorf("failed %v, want %v", got, want)
	}
}

// sessionEvents returns events of sessions named by each letter of seq, each
// session's versions counting up from 1 in the order given.
func sessionEvents(seq string) []lifecycle.Event {
	version := map[rune]int64{}
	var out []lifecycle.Event
	for _, r := range seq {
		version[r]++
		out = append(out, lifecycle.Event{SessionID: "ses_" + string(r), AccountID: "acc_1",
			From: lifecycle.StateRunning, To: lifecycle.StatePaused, Version: version[r], Reason: lifecycle.ReasonIdle, Time: t0})
	}
	return out
}

// sent lists each call's entries as session:version.
func (b *fakeBus) sent() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, c := range b.calls {
		var call []string
		for _, d := range c {
			call = append(call, fmt.Sprintf("%s:%d", strings.TrimPrefix(d.SessionID, "ses_"), d.Version))
		}
		out = append(out, strings.Join(call, " "))
	}
	return out
}

// TestSessionOrder: a call carries at most one event of a session, and a
// session's event is sent only after its earlier ones were delivered, so a
// retried entry never lands after a later event of its session; an event
// given up on takes its session's later events with it, unsent.
func TestSessionOrder(t *testing.T) {
	ctx := context.Background()
	t.Run("OnePerSessionPerCall", func(t *testing.T) {
		b, client := MustBus(t, nil)
		if err := eventbridge.New(eventbridge.Config{Client: client, Bus: bus}).Publish(ctx, sessionEvents("aabacb")...); err != nil {
			t.Fatal(err)
		}
		if got, want := b.sent(), []string{"a:1 b:1 c:1", "a:2 b:2", "a:3"}; !slices.Equal(got, want) {
			t.Errorf("calls %q, want %q", got, want)
		}
	})
	t.Run("RetriedBeforeLater", func(t *testing.T) {
		b, client := MustBus(t, func(call int, d detail) string {
			if call == 1 && d.SessionID == "ses_a" {
				return "ThrottlingException"
			}
			return ""
		})
		s := &sleeps{}
		if err := eventbridge.New(eventbridge.Config{Client: client, Bus: bus, Sleep: s.sleep}).Publish(ctx, sessionEvents("aab")...); err != nil {
			t.Fatal(err)
		}
		// a:1 fails in the first call; a:2 waits for the next round, after
		// a:1's retry.
		if got, want := b.sent(), []string{"a:1 b:1", "a:1", "a:2"}; !slices.Equal(got, want) {
			t.Errorf("calls %q, want %q", got, want)
		}
		if got := s.count(); got != 1 {
			t.Errorf("%d waits, want 1", got)
		}
	})
	t.Run("GivenUpTakesLaterOnes", func(t *testing.T) {
		b, client := MustBus(t, func(_ int, d detail) string {
			if d.SessionID == "ses_a" && d.Version == 1 {
				return "MalformedDetail"
			}
			return ""
		})
		err := eventbridge.New(eventbridge.Config{Client: client, Bus: bus}).Publish(ctx, sessionEvents("abaa")...)
		var de *eventbridge.DeliveryError
		if !errors.As(err, &de) {
			t.Fatalf("publish = %v, want a *DeliveryError", err)
		}
		if got, want := b.sent(), []string{"a:1 b:1"}; !slices.Equal(got, want) {
			t.Errorf("calls %q, want %q", got, want)
		}
		var failed []int
		for _, f := range de.Failed {
			failed = append(failed, f.Index)
		}
		if got, want := failed, []int{0, 2, 3}; !slices.Equal(got, want) {
			t.Errorf("failed indexes %v, want %v", got, want)
		}
		if got, want := de.FirstFailed(), 0; got != want {
			t.Errorf("first failed = %d, want %d", got, want)
		}
		if !strings.Contains(fmt.Sprint(de.Failed[1].Err), "earlier event") {
			t.Errorf("later event's reason = %q, want it to name the earlier undelivered one", fmt.Sprint(de.Failed[1].Err))
		}
	})
}
