package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/provider/local"
	"github.com/sandmanhq/sandman/internal/readiness"
	"github.com/sandmanhq/sandman/internal/routes"
)

// OpenProfile is one provider model of the open figure: what a user who
// opens a paused session's stable link waits for until the preview's first
// byte (docs/WAKE.md).
type OpenProfile struct {
	Name     string  `json:"name"`
	ResumeMS float64 `json:"resume_ms"`
	BootMS   float64 `json:"boot_ms"`
	Keeps    bool    `json:"keeps_processes"`
	Source   string  `json:"source"`
	// FloorMS is provider resume + (boot unless kept) for the fakes, the
	// measured floor's p50 (resume, start, first answer) locally.
	FloorMS float64 `json:"floor_ms"`
	// FirstByte runs from the open's request to the first byte of the
	// preview's answer; Answer is how long the open itself took to answer
	// the browser (the waking page).
	FirstByte Latency `json:"open_to_first_byte"`
	P95MS     float64 `json:"open_to_first_byte_p95_ms"`
	Answer    Latency `json:"open_answer"`
	AnswerP95 float64 `json:"open_answer_p95_ms"`
	OverP50MS float64 `json:"over_floor_p50_ms"`
	OverP95MS float64 `json:"over_floor_p95_ms"`
	Failed    int     `json:"failed"`
}

// OpenResult is the open figure.
type OpenResult struct {
	Rounds   int           `json:"rounds"`
	Profiles []OpenProfile `json:"profiles"`
}

// OpenConfig sizes RunOpen.
type OpenConfig struct {
	// Rounds is how many snapshot + open cycles each profile runs (default 20).
	Rounds int
	// Fakes are the provider models run on the fake (default: the
	// readiness figure's, readinessProfiles); NoLocal skips the local
	// provider's row (tests).
	Fakes   []ReadinessProfile
	NoLocal bool
}

// openPollInterval is how often the following client re-reads the session
// (lifecycle.Config.ReadyPollInterval): a stand-in for the waking page,
// which is pushed the session over the client channel (section 7).
const openPollInterval = 5 * time.Millisecond

// RunOpen measures, for each provider model on the fake (real sleeps) and
// for the local provider running a real server whose pause kills it, the
// time from a browser's open of a paused session's stable link to the first
// byte of the preview: the resume function's handler (apigw, in process)
// answers the open with the waking page while the resume runs in the
// background (a job of the in-process readiness worker); the client then
// follows the session (GET …/open?wait=25, held until the app is ready)
// and fetches the 302's Location.
func RunOpen(ctx context.Context, env *Env, cfg OpenConfig) (OpenResult, error) {
	if cfg.Rounds <= 0 {
		cfg.Rounds = 20
	}
	if cfg.Fakes == nil {
		cfg.Fakes = readinessProfiles
	}
	res := OpenResult{Rounds: cfg.Rounds}
	for _, prof := range cfg.Fakes {
		p, err := openOnFake(ctx, prof, cfg.Rounds)
		if err != nil {
			return res, fmt.Errorf("%s: %w", prof.Name, err)
		}
		res.Profiles = append(res.Profiles, p)
		env.Printf("open %s: first byte p50 %.0f ms p95 %.0f ms (floor %.0f ms), waking page p50 %.0f ms", p.Name, p.FirstByte.P50MS, p.P95MS, p.FloorMS, p.Answer.P50MS)
	}
	if cfg.NoLocal {
		return res, nil
	}
	p, err := openOnLocal(ctx, cfg.Rounds)
	if err != nil {
		return res, fmt.Errorf("local: %w", err)
	}
	res.Profiles = append(res.Profiles, p)
	env.Printf("open %s: first byte p50 %.0f ms p95 %.0f ms (floor %.0f ms), waking page p50 %.0f ms", p.Name, p.FirstByte.P50MS, p.P95MS, p.FloorMS, p.Answer.P50MS)
	return res, nil
}

// openStack is the service on memstore with the in-process readiness
// worker (which also runs the resumes opens hand off) and the resume
// function's handler, the dev API key stored.
type openStack struct {
	svc    *lifecycle.Service
	h      *apigw.Handler
	client *http.Client
}

func newOpenStack(ctx context.Context, p lifecycle.Provider, client *http.Client) (*openStack, func(), error) {
	log := slog.New(slog.DiscardHandler)
	store := memstore.New()
	if err := store.PutAPIKey(ctx, lifecycle.APIKey{Hash: apigw.HashAPIKey(apigw.DevAPIKey),
		AccountID: apigw.DevAccountID, CreatedAt: time.Now().UTC()}); err != nil {
		return nil, nil, err
	}
	w := readiness.New(readiness.Config{Log: log})
	cfg := lifecycle.Config{Store: store, Provider: p, Log: log, ReadinessJobs: w, ReadyPollInterval: openPollInterval}
	if client != nil {
		cfg.ReadyHTTP = client
	} else {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	svc := lifecycle.NewService(cfg)
	h, err := apigw.New(apigw.Config{Function: routes.Resume, Service: svc, Keys: store, Log: log})
	if err != nil {
		return nil, nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	w.Start(wctx, svc.BringUp)
	return &openStack{svc: svc, h: h, client: client}, func() { cancel(); w.Close() }, nil
}

// openEvent is GET /v1/sessions/{id}/open with the dev API key, as a
// browser (Accept: text/html) or holding up to wait seconds.
func openEvent(id string, browser bool, wait int) events.APIGatewayV2HTTPRequest {
	path := "/v1/sessions/" + id + "/open"
	ev := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: "GET " + routes.OpenPath, RawPath: path,
		Headers: map[string]string{"x-api-key": apigw.DevAPIKey}, PathParameters: map[string]string{"id": id},
		QueryStringParameters: map[string]string{}}
	if browser {
		ev.Headers["accept"] = "text/html"
	}
	if wait > 0 {
		ev.QueryStringParameters["wait"] = strconv.Itoa(wait)
	}
	ev.RequestContext.HTTP.Method, ev.RequestContext.HTTP.Path = "GET", path
	ev.RequestContext.RouteKey, ev.RequestContext.RequestID = ev.RouteKey, lifecycle.NewSessionID()
	return ev
}

// openRounds creates one session with app, then rounds times: snapshot,
// open as a browser (timed: Answer), follow until the link redirects, and
// GET the preview until its first byte (FirstByte, from the open's start).
// A round whose open does not end at the app's answer counts as failed.
func (st *openStack) openRounds(ctx context.Context, app *lifecycle.AppInput, rounds int) (first, answer []time.Duration, failed int, err error) {
	acct := apigw.DevAccountID
	sess, _, err := st.svc.Create(ctx, acct, lifecycle.CreateInput{Template: "base", App: app})
	if err != nil {
		return nil, nil, 0, err
	}
	if s, err := st.svc.WaitReady(ctx, acct, sess.ID, lifecycle.MaxWaitReady); err != nil || s.Readiness != lifecycle.ReadinessReady {
		return nil, nil, 0, fmt.Errorf("not ready after create: %v %v", s, err)
	}
	for range rounds {
		if _, err := st.svc.PauseNow(ctx, acct, sess.ID); err != nil {
			return first, answer, failed, err
		}
		start := time.Now()
		r, err := st.h.Handle(ctx, openEvent(sess.ID, true, 0))
		if err != nil {
			return first, answer, failed, err
		}
		answer = append(answer, time.Since(start))
		ok := r.StatusCode == http.StatusOK || r.StatusCode == http.StatusFound
		if ok && r.StatusCode == http.StatusOK {
			r, err = st.h.Handle(ctx, openEvent(sess.ID, false, apigw.MaxOpenWaitSeconds))
			if err != nil {
				return first, answer, failed, err
			}
			ok = r.StatusCode == http.StatusFound
		}
		if ok {
			ok = st.firstByte(ctx, r.Headers["Location"])
		}
		if !ok {
			failed++
			// Let the session settle before the next round's snapshot.
			_, _ = st.svc.WaitReady(ctx, acct, sess.ID, lifecycle.MaxWaitReady)
			continue
		}
		first = append(first, time.Since(start))
	}
	return first, answer, failed, nil
}

// firstByte GETs url and reports whether an answer below 500 came (its
// headers and first body byte read).
func (st *openStack) firstByte(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := st.client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var b [1]byte
	_, _ = io.ReadFull(resp.Body, b[:])
	return resp.StatusCode < 500
}

func openProfile(prof ReadinessProfile) OpenProfile {
	return OpenProfile{Name: prof.Name, ResumeMS: prof.ResumeMS, BootMS: prof.BootMS, Keeps: prof.Keeps, Source: prof.Source}
}

func (p *OpenProfile) summarize(first, answer []time.Duration, failed int, floorP50, floorP95 float64) {
	p.FirstByte, p.P95MS = Summarize(first), ms(percentileOf(first, 95))
	p.Answer, p.AnswerP95 = Summarize(answer), ms(percentileOf(answer, 95))
	p.OverP50MS, p.OverP95MS = p.FirstByte.P50MS-floorP50, p.P95MS-floorP95
	p.Failed = failed
}

func openOnFake(ctx context.Context, prof ReadinessProfile, rounds int) (OpenProfile, error) {
	out := openProfile(prof)
	pr := fake.New(fake.Config{DropProcesses: !prof.Keeps, BootDelay: time.Duration(prof.BootMS * float64(time.Millisecond))})
	pr.SetFault(fake.OpResume, fake.Fault{Delay: time.Duration(prof.ResumeMS * float64(time.Millisecond))})
	st, stop, err := newOpenStack(ctx, pr, &http.Client{Transport: pr.Preview()})
	if err != nil {
		return out, err
	}
	defer stop()
	port, line := 3000, "npm run dev"
	first, answer, failed, err := st.openRounds(ctx, &lifecycle.AppInput{Port: &port, StartCommand: &line}, rounds)
	if err != nil {
		return out, err
	}
	out.FloorMS = prof.ResumeMS
	if !prof.Keeps {
		out.FloorMS += prof.BootMS
	}
	out.summarize(first, answer, failed, out.FloorMS, out.FloorMS)
	return out, nil
}

func openOnLocal(ctx context.Context, rounds int) (OpenProfile, error) {
	out := OpenProfile{Name: "local, real server, SANDMAN_LOCAL_KEEP_PROCESSES=false",
		Source: "measured: resume (SIGCONT) + start + first answer, polled every 1 ms"}
	lp, exe, closeLocal, err := newBenchLocal(ctx, "sandman-bench-open-")
	if err != nil {
		return out, err
	}
	defer closeLocal()
	st, stop, err := newOpenStack(ctx, lp, nil)
	if err != nil {
		return out, err
	}
	defer stop()
	port, line := 3000, "exec '"+exe+"'"
	app := &lifecycle.AppInput{Port: &port, StartCommand: &line, Env: map[string]string{EnvServeApp: "1"}}
	first, answer, failed, err := st.openRounds(ctx, app, rounds)
	if err != nil {
		return out, err
	}
	floor, err := localFloor(ctx, lp, exe, rounds)
	if err != nil {
		return out, err
	}
	fl := Summarize(floor)
	out.FloorMS = fl.P50MS
	out.summarize(first, answer, failed, fl.P50MS, ms(percentileOf(floor, 95)))
	return out, nil
}

// newBenchLocal returns a local provider whose sandboxes are this binary
// (EnvSandboxChild) in a fresh directory and whose pause kills their
// processes, the binary's path (the app command serves with EnvServeApp),
// and a func killing every sandbox and removing the directory.
func newBenchLocal(ctx context.Context, dirPrefix string) (*local.Provider, string, func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, "", nil, err
	}
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, "", nil, err
	}
	lp, err := local.New(local.Config{Dir: dir, DropProcesses: true, Logger: slog.New(slog.DiscardHandler),
		Command: []string{exe, "sandbox"}, Env: []string{EnvSandboxChild + "=1"}})
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", nil, err
	}
	return lp, exe, func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if page, err := lp.List(cctx, lifecycle.ListRequest{}); err == nil {
			for _, sb := range page.Sandboxes {
				_ = lp.Kill(cctx, sb.ID)
			}
		}
		_ = lp.Close(cctx)
		os.RemoveAll(dir)
	}, nil
}

func (r *Report) openSection(b *strings.Builder, res *OpenResult) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## 10. Open of a paused session to the preview's first byte (docs/WAKE.md)\n\n")
	p("Each row creates one session with an app, then %d times: snapshot, and a browser's open of the stable link ", res.Rounds)
	p("(`GET /v1/sessions/{id}/open`, `Accept: text/html`) through the resume function's handler (`apigw`, in process). ")
	p("The open answers the waking page at once and the resume runs in the background (a job of the in-process readiness ")
	p("worker, which then brings the app up); the client follows the session (`GET …/open?wait=25`, re-reading it every ")
	p("%d ms as a stand-in for the waking page's channel push, section 7) and GETs the redirect's `Location` until the ", openPollInterval.Milliseconds())
	p("first byte of the app's answer. The figure runs from the first open's request to that byte; \"waking page\" is ")
	p("how long the first open took to answer. The service runs on memstore; the fakes sleep the resume latency for ")
	p("real and answer 502 \"port is not open\" until the app listens; the local row runs a real HTTP server as the ")
	p("start command in a local sandbox whose pause kills it, its floor measured without Sandman as in section 9.\n\n")
	p("| provider model | floor ms | first byte p50 ms | p95 ms | max ms | over floor p50 ms | over floor p95 ms | waking page p50 ms | p95 ms | failed |\n")
	p("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, x := range res.Profiles {
		p("| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.1f | %.1f | %d |\n", x.Name, x.FloorMS, x.FirstByte.P50MS,
			x.P95MS, x.FirstByte.MaxMS, x.OverP50MS, x.OverP95MS, x.Answer.P50MS, x.AnswerP95, x.Failed)
	}
	p("\n")
}
