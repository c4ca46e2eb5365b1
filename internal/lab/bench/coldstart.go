package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/e2b"
	"github.com/sandmanhq/sandman/internal/provider/e2b/e2btest"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/e2bhook"
	"github.com/sandmanhq/sandman/internal/routes"
)

// BuildFlags are the flags `make build` builds every function with; the
// benchmark builds its copies with the same ones.
var BuildFlags = []string{"-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w"}

// runTimeout bounds one cold-start run: process start, init and both
// invocations.
const runTimeout = 60 * time.Second

// deployedFunction is what the stack configures for a function and the
// process sees: its timeout (each invocation's deadline) and memory size.
type deployedFunction struct {
	timeout  time.Duration
	memoryMB int
}

// deployed mirrors functionSpecs of infra/stack.go (the bench does not
// import the CDK app); a function missing here gets defaultDeployed.
var deployed = map[string]deployedFunction{
	routes.Sessions:  {29 * time.Second, 256},
	routes.Status:    {10 * time.Second, 128},
	routes.Resume:    {29 * time.Second, 256},
	routes.Pause:     {29 * time.Second, 256},
	routes.Reconnect: {29 * time.Second, 256},
	routes.Webhook:   {15 * time.Second, 256},
	routes.Sweep:     {4*time.Minute + 50*time.Second, 512},
	routes.Timer:     {time.Minute, 256},
	routes.Readiness: {2 * time.Minute, 256},
	routes.Channel:   {29 * time.Second, 256},
	routes.Notifier:  {30 * time.Second, 128},
	routes.Deliver:   {time.Minute, 256},
	// checkpoint: a job streams a workspace archive through the function.
	routes.Checkpoint: {10 * time.Minute, 2048},
}

var defaultDeployed = deployedFunction{29 * time.Second, 256}

func deployedSpec(fn string) deployedFunction {
	if d, ok := deployed[fn]; ok {
		return d
	}
	return defaultDeployed
}

// ColdStartConfig sizes RunColdStart.
type ColdStartConfig struct {
	// Functions to measure (default routes.Functions, every function).
	Functions []string
	// Runs is how many fresh processes each function is started as
	// (default 11); the report gives medians.
	Runs int
	// OutDir receives bin/<fn>/bootstrap (linux/amd64, run here),
	// lambda-arm64/<fn>/bootstrap and lambda-arm64/<fn>.zip (what is
	// deployed) and coldstart-logs/<fn>-<run>.log (each process's stderr).
	OutDir string
	// Go is the go command (default "go" on PATH).
	Go string
}

func (c ColdStartConfig) withDefaults() ColdStartConfig {
	if len(c.Functions) == 0 {
		c.Functions = routes.Functions
	}
	if c.Runs <= 0 {
		c.Runs = 11
	}
	if c.Go == "" {
		c.Go = "go"
	}
	return c
}

// ColdRun is one fresh process of a function.
type ColdRun struct {
	// InitMS is from just before the process was started to its first
	// GET …/invocation/next.
	InitMS float64 `json:"init_ms"`
	// FirstInvokeMS and SecondInvokeMS are from writing each next answer
	// to receiving its response (or error): the first request of a fresh
	// process, then a warm one.
	FirstInvokeMS  float64 `json:"first_invoke_ms"`
	SecondInvokeMS float64 `json:"second_invoke_ms"`
	// Outcomes describe both answers, e.g. "200" or "error: …".
	Outcomes []string `json:"outcomes"`
	// Errors counts invocations answered on /error.
	Errors int    `json:"errors"`
	Failed string `json:"failed,omitempty"` // the run did not finish: why
}

// FunctionColdStart is one function's sizes and cold-start figures.
type FunctionColdStart struct {
	Function string `json:"function"`
	// ARM64Bytes is the deployed linux/arm64 bootstrap; ZipBytes the zip
	// of it (deflate, as the CDK asset); AMD64Bytes the copy run here.
	ARM64Bytes int64 `json:"arm64_bytes"`
	ZipBytes   int64 `json:"zip_bytes"`
	AMD64Bytes int64 `json:"amd64_bytes"`
	// Event names the payload each invocation got.
	Event string    `json:"event"`
	Runs  []ColdRun `json:"runs"`
	// Medians over the runs that finished.
	InitMedianMS         float64 `json:"init_median_ms"`
	InitMinMS            float64 `json:"init_min_ms"`
	InitMaxMS            float64 `json:"init_max_ms"`
	FirstInvokeMedianMS  float64 `json:"first_invoke_median_ms"`
	SecondInvokeMedianMS float64 `json:"second_invoke_median_ms"`
	// Outcome is the outcomes of the last finished run.
	Outcome string `json:"outcome"`
	// Errors counts /error answers over all runs; Failed counts runs that
	// did not finish.
	Errors int `json:"errors"`
	Failed int `json:"failed"`
}

// ColdStartResult is the cold-start figure.
type ColdStartResult struct {
	Runs       int                 `json:"runs"`
	BuildFlags string              `json:"build_flags"`
	BuildSecs  float64             `json:"build_seconds"`
	Functions  []FunctionColdStart `json:"functions"`
	// PutEventsCalls is how many PutEvents requests the loopback fake
	// EventBridge received (from the publisher's runs).
	PutEventsCalls int64 `json:"put_events_calls"`
}

// RunColdStart builds every function twice with BuildFlags (linux/arm64 as
// deployed, zipped to measure the deployment size; linux/amd64 to run
// here), then starts each amd64 bootstrap cfg.Runs times against a fresh
// RuntimeAPI with the environment a deployed function has (table, DynamoDB
// Local endpoint, SANDMAN_PROVIDER=e2b aimed at a loopback fake E2B
// (e2btest; the production functions link no in-memory fake), the webhook
// secret, region, dummy credentials, AWS_LAMBDA_* variables), and serves each process two
// invocations of its function's event (events/api, events/scheduled, or a
// signed E2B delivery). Each run gets fresh sessions to act on.
func RunColdStart(ctx context.Context, env *Env, cfg ColdStartConfig) (ColdStartResult, error) {
	cfg = cfg.withDefaults()
	res := ColdStartResult{Runs: cfg.Runs, BuildFlags: "CGO_ENABLED=0 GOOS=linux " + strings.Join(BuildFlags, " ")}

	env.Printf("coldstart: building %d functions for linux/arm64 and linux/amd64", len(cfg.Functions))
	start := time.Now()
	amd64Dir := filepath.Join(cfg.OutDir, "bin")
	arm64Dir := filepath.Join(cfg.OutDir, "lambda-arm64")
	if err := BuildFunctions(ctx, cfg.Go, env.RepoDir, "arm64", arm64Dir, cfg.Functions); err != nil {
		return ColdStartResult{}, err
	}
	if err := BuildFunctions(ctx, cfg.Go, env.RepoDir, "amd64", amd64Dir, cfg.Functions); err != nil {
		return ColdStartResult{}, err
	}
	res.BuildSecs = seconds(time.Since(start))
	env.Printf("coldstart: built in %.1f s", res.BuildSecs)

	table, drop, err := env.NewTable(ctx, "bench-coldstart")
	if err != nil {
		return ColdStartResult{}, err
	}
	defer drop()
	store := env.Store(table)
	if err := store.PutAPIKey(ctx, lifecycle.APIKey{Hash: apigw.HashAPIKey(apigw.DevAPIKey),
		AccountID: apigw.DevAccountID, CreatedAt: time.Now().UTC()}); err != nil {
		return ColdStartResult{}, fmt.Errorf("store the dev api key: %w", err)
	}
	logDir := filepath.Join(cfg.OutDir, "coldstart-logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return ColdStartResult{}, err
	}
	// The publisher puts its events on EventBridge: a loopback fake that
	// accepts every entry, reached through the SDK's service endpoint
	// variable (what a deployed function has is the real service).
	eb, putEvents := fakeEventBridge()
	defer eb.Close()
	// The provider: E2B's control API as e2btest serves it on loopback, the
	// provider a deployed function would call (docs/providers/e2b.md).
	e2bFake := e2btest.New(e2btest.Config{})
	e2bSrv := httptest.NewServer(e2bFake.Handler())
	defer func() { e2bFake.Close(); e2bSrv.Close() }()

	for _, fn := range cfg.Functions {
		fc := FunctionColdStart{Function: fn}
		arm := filepath.Join(arm64Dir, fn, "bootstrap")
		if fc.ZipBytes, err = ZipBootstrap(arm, filepath.Join(arm64Dir, fn+".zip")); err != nil {
			return ColdStartResult{}, err
		}
		if fc.ARM64Bytes, err = fileSize(arm); err != nil {
			return ColdStartResult{}, err
		}
		bin := filepath.Join(amd64Dir, fn, "bootstrap")
		if fc.AMD64Bytes, err = fileSize(bin); err != nil {
			return ColdStartResult{}, err
		}
		ev := &coldEvents{env: env, store: store, function: fn}
		for run := range cfg.Runs {
			payloads, what, err := ev.payloads(ctx, run)
			if errors.Is(err, errNoColdEvent) {
				// A function this figure has no event for yet: reported as
				// failed runs, the other functions are still measured.
				fc.Event = "none"
				fc.Runs = append(fc.Runs, ColdRun{Failed: err.Error()})
				continue
			}
			if err != nil {
				return ColdStartResult{}, fmt.Errorf("%s: %w", fn, err)
			}
			fc.Event = what
			cr := coldRun(ctx, bin, fn, run, coldEnv(fn, table, env.Endpoint, eb.URL, e2bSrv.URL), logDir, payloads)
			fc.Runs = append(fc.Runs, cr)
		}
		summarizeCold(&fc)
		env.Printf("coldstart: %-9s zip %6.2f MB  init p50 %6.1f ms  first invoke p50 %6.1f ms  (%s)",
			fn, float64(fc.ZipBytes)/1e6, fc.InitMedianMS, fc.FirstInvokeMedianMS, fc.Outcome)
		res.Functions = append(res.Functions, fc)
	}
	res.PutEventsCalls = putEvents.get()
	return res, nil
}

// summarizeCold fills a function's medians from its finished runs.
func summarizeCold(fc *FunctionColdStart) {
	var inits, firsts, warms []time.Duration
	for _, r := range fc.Runs {
		fc.Errors += r.Errors
		if r.Failed != "" {
			fc.Failed++
			continue
		}
		inits = append(inits, fromMS(r.InitMS))
		firsts = append(firsts, fromMS(r.FirstInvokeMS))
		warms = append(warms, fromMS(r.SecondInvokeMS))
		fc.Outcome = strings.Join(r.Outcomes, ", ")
	}
	if fc.Outcome == "" && len(fc.Runs) > 0 {
		fc.Outcome = "failed: " + fc.Runs[len(fc.Runs)-1].Failed
	}
	if len(inits) == 0 {
		return
	}
	fc.InitMedianMS, fc.InitMinMS, fc.InitMaxMS = ms(Median(inits)), ms(slices.Min(inits)), ms(slices.Max(inits))
	fc.FirstInvokeMedianMS = ms(Median(firsts))
	fc.SecondInvokeMedianMS = ms(Median(warms))
}

func fromMS(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// benchEventBus is the event bus the publisher is configured with.
const benchEventBus = "sandman-bench"

// coldEnv is the environment of a function process: what Lambda sets
// (including the deployed memory size), what the stack sets (table,
// provider, the webhook secret in its local form, the event bus), DynamoDB
// Local, EventBridge at eventBridgeURL (AWS_ENDPOINT_URL_EVENTBRIDGE,
// the SDK's service-specific endpoint variable) and E2B at e2bURL. Nothing is inherited from
// the benchmark's own environment, so no developer AWS configuration leaks
// in.
func coldEnv(fn, table, endpoint, eventBridgeURL, e2bURL string) []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"LANG=en_US.UTF-8",
		"TZ=:UTC",
		"_HANDLER=bootstrap",
		"AWS_REGION=" + dynamo.LocalRegion,
		"AWS_DEFAULT_REGION=" + dynamo.LocalRegion,
		"AWS_ACCESS_KEY_ID=local",
		"AWS_SECRET_ACCESS_KEY=local",
		"AWS_LAMBDA_FUNCTION_NAME=sandman-" + fn,
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=" + strconv.Itoa(deployedSpec(fn).memoryMB),
		"AWS_LAMBDA_LOG_GROUP_NAME=/aws/lambda/sandman-" + fn,
		"AWS_LAMBDA_LOG_STREAM_NAME=bench",
		"AWS_LAMBDA_INITIALIZATION_TYPE=on-demand",
		app.EnvTable + "=" + table,
		app.EnvDynamoEndpoint + "=" + endpoint,
		app.EnvProvider + "=" + e2b.Name,
		e2b.EnvBaseURL + "=" + e2bURL,
		e2b.EnvDomain + "=" + e2btest.Domain,
		e2b.EnvAPIKey + "=" + e2btest.APIKey,
		e2b.EnvWebhookSecret + "=" + benchWebhookSecret,
		app.EnvEventBus + "=" + benchEventBus,
		"AWS_ENDPOINT_URL_EVENTBRIDGE=" + eventBridgeURL,
		// The client channel's functions: a key set file the first start
		// creates, and a Management API endpoint no run posts to (the
		// events below push to no connection).
		app.EnvClientTokenKeysFile + "=" + filepath.Join(os.TempDir(), "sandman-bench-client-token-keys.json"),
		app.EnvWSManagementURL + "=" + eventBridgeURL,
		// The deliver function's queues: URLs no run sends to (its event's
		// account has no webhook endpoint).
		app.EnvWebhookQueueURL + "=" + eventBridgeURL,
		app.EnvWebhookDLQURL + "=" + eventBridgeURL,
	}
}

// coldRun starts bin once against a fresh RuntimeAPI serving payloads and
// measures it. A run that fails is returned with Failed set.
func coldRun(ctx context.Context, bin, fn string, run int, environ []string, logDir string, payloads [][]byte) ColdRun {
	api, err := NewRuntimeAPI("sandman-"+fn, deployedSpec(fn).timeout, payloads...)
	if err != nil {
		return ColdRun{Failed: err.Error()}
	}
	defer api.Close()
	logFile, err := os.Create(filepath.Join(logDir, fmt.Sprintf("%s-%d.log", fn, run+1)))
	if err != nil {
		return ColdRun{Failed: err.Error()}
	}
	defer logFile.Close()

	rctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	cmd := exec.Command(bin)
	cmd.Dir = filepath.Dir(bin)
	cmd.Env = append(environ, "AWS_LAMBDA_RUNTIME_API="+api.Addr(), "LAMBDA_TASK_ROOT="+filepath.Dir(bin))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return ColdRun{Failed: fmt.Sprintf("start %s: %v", bin, err)}
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Kill() // our own child, by its handle
		<-exited
	}

	var cr ColdRun
	select {
	case <-api.Done():
		stop()
	case err := <-exited:
		cr.Failed = fmt.Sprintf("process exited before answering: %v (see %s)", err, logFile.Name())
	case <-rctx.Done():
		stop()
		cr.Failed = fmt.Sprintf("no answer within %v", runTimeout)
	}
	if ie := api.InitError(); ie != nil {
		cr.Failed = string(ie)
	}
	if first := api.FirstNext(); !first.IsZero() {
		cr.InitMS = ms(first.Sub(start))
	}
	invs := api.Invocations()
	for i, inv := range invs {
		if inv.Done.IsZero() {
			continue
		}
		switch i {
		case 0:
			cr.FirstInvokeMS = ms(inv.Duration())
		case 1:
			cr.SecondInvokeMS = ms(inv.Duration())
		}
		if inv.Error {
			cr.Errors++
		}
		cr.Outcomes = append(cr.Outcomes, describeOutcome(inv))
	}
	if cr.Failed == "" && len(cr.Outcomes) != len(payloads) {
		cr.Failed = fmt.Sprintf("%d of %d invocations answered", len(cr.Outcomes), len(payloads))
	}
	return cr
}

// describeOutcome summarizes a function's answer: the HTTP status of an API
// Gateway response and the one word that says what happened (webhook
// outcome, error type, reconnect status or session state), "summary" for
// the sweep's, or the error type.
func describeOutcome(inv Invocation) string {
	if inv.Error {
		var e struct {
			ErrorType    string `json:"errorType"`
			ErrorMessage string `json:"errorMessage"`
		}
		_ = json.Unmarshal(inv.Body, &e)
		return "error: " + e.ErrorType + " " + e.ErrorMessage
	}
	var resp struct {
		StatusCode int    `json:"statusCode"`
		Body       string `json:"body"`
		Paused     *int   `json:"paused"`
		// BatchItemFailures answers a stream or queue batch
		// (events.DynamoDBEventResponse, events.SQSEventResponse; null when
		// every record was done).
		BatchItemFailures []json.RawMessage `json:"batchItemFailures"`
	}
	if err := json.Unmarshal(inv.Body, &resp); err != nil {
		return "unreadable response"
	}
	if resp.StatusCode == 0 {
		var keys map[string]json.RawMessage
		_ = json.Unmarshal(inv.Body, &keys)
		_, batch := keys["batchItemFailures"]
		switch {
		case resp.Paused != nil:
			return "summary"
		case batch:
			return fmt.Sprintf("%d batch item failures", len(resp.BatchItemFailures))
		}
		return "ok"
	}
	var body struct {
		Outcome   string `json:"outcome"`
		ErrorType string `json:"error_type"`
		Status    string `json:"status"`
		State     string `json:"state"`
		Session   struct {
			State string `json:"state"`
		} `json:"session"`
	}
	_ = json.Unmarshal([]byte(resp.Body), &body)
	word := body.Outcome
	if word == "" {
		word = body.ErrorType
	}
	if word == "" && body.Status != "ok" && body.Status != "error" {
		word = body.Status
	}
	if word == "" {
		word = body.State
	}
	if word == "" {
		word = body.Session.State
	}
	return strings.TrimSpace(strconv.Itoa(resp.StatusCode) + " " + word)
}

// coldEvents builds each run's payloads for one function, with fresh
// sessions so every run does the same work.
type coldEvents struct {
	env      *Env
	store    *dynamo.Store
	function string
}

// payloads returns two payloads for run and what they are.
func (c *coldEvents) payloads(ctx context.Context, run int) ([][]byte, string, error) {
	tag := fmt.Sprintf("%s-%d", c.function, run)
	switch c.function {
	case routes.Sessions:
		// Each create with its own Idempotency-Key, so both create.
		return c.apiEvents("api/sessions-create.json", "", func(req *events.APIGatewayV2HTTPRequest, i int) {
			req.Headers["idempotency-key"] = fmt.Sprintf("bench-%s-%d", tag, i)
		}, "events/api/sessions-create.json (201: a session and its sandbox on the loopback E2B)")
	case routes.Status:
		id, err := c.session(ctx, tag, lifecycle.StateRunning)
		if err != nil {
			return nil, "", err
		}
		return c.apiEvents("api/status.json", id, nil, "events/api/status.json (200)")
	case routes.Resume:
		id, err := c.session(ctx, tag, lifecycle.StateRunning)
		if err != nil {
			return nil, "", err
		}
		return c.apiEvents("api/resume.json", id, nil, "events/api/resume.json on a running session (200, no provider call)")
	case routes.Pause:
		id, err := c.session(ctx, tag, lifecycle.StatePaused)
		if err != nil {
			return nil, "", err
		}
		return c.apiEvents("api/snapshot.json", id, nil, "events/api/snapshot.json on a paused session (200, no provider call)")
	case routes.Reconnect:
		// An expired session: the answer needs no provider call. A running
		// one would measure the probe's deliberate wait instead: the
		// loopback E2B does not know its sandbox, and "gone" is
		// confirmed by a second look after lifecycle.Service.ConfirmGoneDelay.
		id, err := c.session(ctx, tag, lifecycle.StateExpired)
		if err != nil {
			return nil, "", err
		}
		return c.apiEvents("api/reconnect.json", id, nil,
			"events/api/reconnect.json on an expired session (200 expired, no provider call)")
	case routes.Webhook:
		return c.webhookEvents(ctx, tag)
	case routes.Sweep:
		raw, err := c.env.Fixture("scheduled/sweep.json")
		if err != nil {
			return nil, "", err
		}
		return [][]byte{raw, raw}, "events/scheduled/sweep.json (a sweep of the small benchmark table)", nil
	case routes.Publisher:
		raw, err := c.env.Fixture("stream/session-transitions.json")
		if err != nil {
			return nil, "", err
		}
		return [][]byte{raw, raw}, "events/stream/session-transitions.json (a DynamoDB stream batch; its transitions put on a loopback fake EventBridge)", nil
	case routes.Timer:
		raw, err := c.env.Fixture("queue/timer.json")
		if err != nil {
			return nil, "", err
		}
		return [][]byte{raw, raw}, "events/queue/timer.json (an unknown session's timer fires idle, a malformed one is dropped; no provider call)", nil
	case routes.Readiness:
		raw, err := c.env.Fixture("queue/readiness.json")
		if err != nil {
			return nil, "", err
		}
		return [][]byte{raw, raw}, "events/queue/readiness.json (an unknown session's job has nothing to do, a malformed one is dropped; no provider call)", nil
	case routes.Channel:
		raw, err := c.env.Fixture("ws/disconnect.json")
		if err != nil {
			return nil, "", err
		}
		return [][]byte{raw, raw}, "events/ws/disconnect.json (an unknown connection leaves; no push, no provider call)", nil
	case routes.Notifier:
		raw, err := c.env.Fixture("bus/session-paused.json")
		if err != nil {
			return nil, "", err
		}
		return [][]byte{raw, raw}, "events/bus/session-paused.json (a session with no connection; nothing to push)", nil
	case routes.Deliver:
		raw, err := c.env.Fixture("queue/deliver.json")
		if err != nil {
			return nil, "", err
		}
		return [][]byte{raw, raw}, "events/queue/deliver.json (a lifecycle event of an account with no webhook endpoint, a malformed body dropped)", nil
	case routes.Checkpoint:
		raw, err := c.env.Fixture("queue/checkpoint.json")
		if err != nil {
			return nil, "", err
		}
		return [][]byte{raw, raw}, "events/queue/checkpoint.json (a delete job of an unknown session's checkpoint, a malformed body dropped; no provider call)", nil
	}
	return nil, "", fmt.Errorf("function %q: %w", c.function, errNoColdEvent)
}

// errNoColdEvent: the cold-start figure has no event for a function.
var errNoColdEvent = errors.New("no cold-start event")

// session writes a session of the dev account in state, with a sandbox id
// of its own, and returns its id.
func (c *coldEvents) session(ctx context.Context, tag string, state lifecycle.State) (string, error) {
	now := time.Now().UTC()
	s := &lifecycle.Session{
		ID: lifecycle.NewSessionID(), AccountID: apigw.DevAccountID, Provider: e2b.Name, Template: "base",
		SandboxID: "cold_" + tag, State: state, Reason: lifecycle.ReasonRequest, IdleTimeout: 10 * time.Minute,
		CreatedAt: now, UpdatedAt: now, LastActivityAt: now, IdleDeadline: now.Add(10 * time.Minute),
	}
	switch state {
	case lifecycle.StateRunning:
		s.RunningSince, s.SandboxExpiresAt = now, now.Add(12*time.Minute)
	case lifecycle.StatePaused:
		s.PausedAt = now
	case lifecycle.StateExpired:
		s.SandboxID = "" // expiry clears it
	}
	if err := c.store.CreateSession(ctx, s); err != nil {
		return "", err
	}
	return s.ID, nil
}

// apiEvents returns two copies of an events/api fixture addressed to
// session id ("" keeps the fixture's), each passed through edit.
func (c *coldEvents) apiEvents(fixture, id string, edit func(*events.APIGatewayV2HTTPRequest, int), what string) ([][]byte, string, error) {
	raw, err := c.env.Fixture(fixture)
	if err != nil {
		return nil, "", err
	}
	var out [][]byte
	for i := range 2 {
		var req events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(raw, &req); err != nil {
			return nil, "", fmt.Errorf("decode %s: %w", fixture, err)
		}
		if id != "" {
			req = withSessionID(req, fixtureSessionID, id)
		}
		if req.Headers == nil {
			req.Headers = map[string]string{}
		}
		if edit != nil {
			edit(&req, i)
		}
		b, err := json.Marshal(req)
		if err != nil {
			return nil, "", err
		}
		out = append(out, b)
	}
	return out, what, nil
}

// webhookEvents returns a signed paused then resumed delivery for a fresh
// running session.
func (c *coldEvents) webhookEvents(ctx context.Context, tag string) ([][]byte, string, error) {
	id, err := c.session(ctx, tag, lifecycle.StateRunning)
	if err != nil {
		return nil, "", err
	}
	raw, err := c.env.Fixture("webhooks/apigw-e2b-paused.json")
	if err != nil {
		return nil, "", err
	}
	var tmpl events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(raw, &tmpl); err != nil {
		return nil, "", fmt.Errorf("decode events/webhooks/apigw-e2b-paused.json: %w", err)
	}
	base := time.Now().UTC()
	var out [][]byte
	for i, typ := range []lifecycle.ProviderEventType{lifecycle.ProviderEventPaused, lifecycle.ProviderEventResumed} {
		body := e2bhook.NewBody(lifecycle.ProviderEvent{
			ID: fmt.Sprintf("cold-%s-%d", tag, i), Type: typ, SandboxID: "cold_" + tag,
			Timestamp: base.Add(time.Duration(i+1) * time.Millisecond),
		}, map[string]string{lifecycle.MetadataSessionID: id})
		rawBody, err := e2bhook.Build(body)
		if err != nil {
			return nil, "", err
		}
		b, err := json.Marshal(signedDelivery(tmpl, rawBody, fmt.Sprintf("cold-%s-%d", tag, i)))
		if err != nil {
			return nil, "", err
		}
		out = append(out, b)
	}
	return out, "signed E2B deliveries like events/webhooks/apigw-e2b-paused.json: paused, then resumed (200 applied)", nil
}
