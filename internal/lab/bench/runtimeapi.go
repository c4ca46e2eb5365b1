package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Runtime API paths (AWS Lambda Runtime API, version 2018-06-01).
const (
	runtimeAPIVersion = "2018-06-01"
	pathNext          = "/" + runtimeAPIVersion + "/runtime/invocation/next"
	pathResponse      = "/" + runtimeAPIVersion + "/runtime/invocation/{id}/response"
	pathError         = "/" + runtimeAPIVersion + "/runtime/invocation/{id}/error"
	pathInitError     = "/" + runtimeAPIVersion + "/runtime/init/error"
)

// Runtime API headers of a next-invocation answer.
const (
	HeaderRequestID   = "Lambda-Runtime-Aws-Request-Id"
	HeaderDeadlineMS  = "Lambda-Runtime-Deadline-Ms"
	HeaderFunctionARN = "Lambda-Runtime-Invoked-Function-Arn"
	HeaderTraceID     = "Lambda-Runtime-Trace-Id"
)

// maxRuntimeBody bounds a response or error body the runtime posts (Lambda's
// synchronous response limit is 6 MB).
const maxRuntimeBody = 6 << 20

// Invocation is the record of one invocation served by RuntimeAPI.
type Invocation struct {
	RequestID string
	// Sent is when the next-invocation answer was written; Done is when the
	// function's response or error arrived (zero while outstanding).
	Sent, Done time.Time
	// Error is true when the function posted to /error rather than
	// /response.
	Error bool
	// Body is the function's response (or error) payload.
	Body []byte
}

// Duration is Done − Sent.
func (i Invocation) Duration() time.Duration { return i.Done.Sub(i.Sent) }

// RuntimeAPI is a minimal AWS Lambda Runtime API for one function process,
// served on 127.0.0.1: GET …/invocation/next hands out the queued payloads
// one at a time with the headers aws-lambda-go reads (request id, deadline,
// invoked function ARN, trace id); POST …/invocation/{id}/response and
// …/error record the outcome (202); POST …/init/error records a failed
// init. Once the queue is empty, next blocks until Close, as Lambda freezes
// an idle function. It stands in for AWS's Runtime Interface Emulator, which
// is not available here. It is safe for concurrent use.
type RuntimeAPI struct {
	functionARN string
	timeout     time.Duration
	ln          net.Listener
	srv         *http.Server
	closing     chan struct{}
	closeOnce   sync.Once
	done        chan struct{} // closed when every payload is answered or init failed

	mu        sync.Mutex
	queue     [][]byte
	firstNext time.Time
	invokes   []Invocation
	initError []byte
	seq       int
	answered  int
	finished  bool
}

// NewRuntimeAPI starts a Runtime API on a free port of 127.0.0.1 that will
// hand out payloads, in order, to the function named function, each with a
// deadline timeout after it is handed out (the function's configured
// timeout in Lambda). Errors: the listener's.
func NewRuntimeAPI(function string, timeout time.Duration, payloads ...[]byte) (*RuntimeAPI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("runtime api listen: %w", err)
	}
	r := &RuntimeAPI{
		functionARN: "arn:aws:lambda:us-east-1:000000000000:function:" + function,
		timeout:     timeout,
		ln:          ln,
		closing:     make(chan struct{}),
		done:        make(chan struct{}),
		queue:       payloads,
	}
	if len(payloads) == 0 {
		r.finish()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+pathNext, r.next)
	mux.HandleFunc("POST "+pathResponse, func(w http.ResponseWriter, req *http.Request) { r.answer(w, req, false) })
	mux.HandleFunc("POST "+pathError, func(w http.ResponseWriter, req *http.Request) { r.answer(w, req, true) })
	mux.HandleFunc("POST "+pathInitError, r.initFailed)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }() // returns http.ErrServerClosed on Close
	return r, nil
}

// Addr returns the host:port to put in AWS_LAMBDA_RUNTIME_API.
func (r *RuntimeAPI) Addr() string { return r.ln.Addr().String() }

// Done is closed once every payload has been answered, or init failed.
func (r *RuntimeAPI) Done() <-chan struct{} { return r.done }

// FirstNext returns when the function first asked for an invocation: the
// end of its init. Zero when it has not.
func (r *RuntimeAPI) FirstNext() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.firstNext
}

// Invocations returns the invocations served so far, in order.
func (r *RuntimeAPI) Invocations() []Invocation {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Invocation, len(r.invokes))
	copy(out, r.invokes)
	return out
}

// InitError returns the body of a posted init error, or nil.
func (r *RuntimeAPI) InitError() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.initError
}

// Close releases blocked next calls and stops the server.
func (r *RuntimeAPI) Close() error {
	r.closeOnce.Do(func() { close(r.closing) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return r.srv.Close()
	}
	return nil
}

func (r *RuntimeAPI) finish() {
	if !r.finished {
		r.finished = true
		close(r.done)
	}
}

// next answers GET …/invocation/next with the next payload, or blocks.
func (r *RuntimeAPI) next(w http.ResponseWriter, req *http.Request) {
	now := time.Now()
	r.mu.Lock()
	if r.firstNext.IsZero() {
		r.firstNext = now
	}
	if len(r.queue) == 0 {
		r.mu.Unlock()
		select { // frozen until the process is stopped
		case <-r.closing:
		case <-req.Context().Done():
		}
		http.Error(w, "runtime api closed", http.StatusGone)
		return
	}
	payload := r.queue[0]
	r.queue = r.queue[1:]
	r.seq++
	id := fmt.Sprintf("00000000-0000-4000-8000-%012d", r.seq)
	r.invokes = append(r.invokes, Invocation{RequestID: id})
	i := len(r.invokes) - 1
	r.mu.Unlock()

	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set(HeaderRequestID, id)
	h.Set(HeaderDeadlineMS, strconv.FormatInt(time.Now().Add(r.timeout).UnixMilli(), 10))
	h.Set(HeaderFunctionARN, r.functionARN)
	h.Set(HeaderTraceID, fmt.Sprintf("Root=1-%08x-%024d;Parent=%016d;Sampled=0", time.Now().Unix(), r.seq, r.seq))
	h.Set("Content-Length", strconv.Itoa(len(payload)))
	r.mu.Lock()
	r.invokes[i].Sent = time.Now()
	r.mu.Unlock()
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(payload)
}

// answer records POST …/invocation/{id}/response or /error.
func (r *RuntimeAPI) answer(w http.ResponseWriter, req *http.Request, isError bool) {
	body, err := io.ReadAll(io.LimitReader(req.Body, maxRuntimeBody))
	now := time.Now()
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	id := req.PathValue("id")
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.invokes {
		if r.invokes[i].RequestID == id && r.invokes[i].Done.IsZero() {
			r.invokes[i].Done, r.invokes[i].Error, r.invokes[i].Body = now, isError, body
			r.answered++
			if r.answered == r.seq && len(r.queue) == 0 {
				r.finish()
			}
			w.WriteHeader(http.StatusAccepted)
			return
		}
	}
	http.Error(w, "unknown or already answered request id", http.StatusBadRequest)
}

// initFailed records POST …/init/error.
func (r *RuntimeAPI) initFailed(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, maxRuntimeBody))
	r.mu.Lock()
	r.initError = append([]byte("init error: "), body...)
	r.finish()
	r.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}
