package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/sandmanhq/sandman/internal/dynamo"
)

// tableTimeout bounds creating or deleting one benchmark table.
const tableTimeout = 2 * time.Minute

// Env is what every figure runs with: DynamoDB Local, a counting client on
// it, the repository (for the events/ fixtures and functions/), a quiet
// logger for the code under test, and a progress log.
type Env struct {
	// Endpoint is DynamoDB Local's endpoint, e.g. "http://127.0.0.1:8000".
	Endpoint string
	// Client is a client built as dynamo.NewClient builds it, with every
	// request counted by Ops.
	Client *dynamodb.Client
	Ops    *OpCounter
	// RepoDir is the repository root: events/ and functions/ are read from
	// it.
	RepoDir string
	// Log is the logger handed to the code under test. The benchmarks use
	// warn level so that what they time is the path, not the log encoder
	// (a deployed function logs at info: one JSON line per request).
	Log *slog.Logger
	// Progress receives one line per step, for the person waiting.
	Progress io.Writer
}

// NewEnv returns an Env on the DynamoDB Local at endpoint, the repository at
// repoDir, logging the code under test at warn level to logOut and progress
// to progress.
func NewEnv(ctx context.Context, endpoint, repoDir string, logOut, progress io.Writer) (*Env, error) {
	if endpoint == "" {
		return nil, fmt.Errorf("no DynamoDB endpoint: set DYNAMODB_ENDPOINT or run `make bench`, which starts DynamoDB Local")
	}
	ops := NewOpCounter()
	client, err := NewCountingClient(ctx, endpoint, ops)
	if err != nil {
		return nil, err
	}
	return &Env{
		Endpoint: endpoint,
		Client:   client,
		Ops:      ops,
		RepoDir:  repoDir,
		Log:      slog.New(slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Progress: progress,
	}, nil
}

// Printf writes one progress line, prefixed with "bench: ".
func (e *Env) Printf(format string, args ...any) {
	if e.Progress != nil {
		fmt.Fprintf(e.Progress, "bench: "+format+"\n", args...)
	}
}

// NewStreamTable is NewTable with the table's stream enabled: it returns the
// table, its drop function, the stream's ARN and a streams client on the
// bench's endpoint (what the outbox poller reads).
func (e *Env) NewStreamTable(ctx context.Context, prefix string) (table string, drop func(), arn string, streams *dynamodbstreams.Client, err error) {
	if table, drop, err = e.NewTable(ctx, prefix); err != nil {
		return "", nil, "", nil, err
	}
	if arn, err = dynamo.EnableStream(ctx, e.Client, table); err == nil {
		streams, err = dynamo.NewStreamsClient(ctx, e.Endpoint)
	}
	if err != nil {
		drop()
		return "", nil, "", nil, err
	}
	return table, drop, arn, streams, nil
}

// NewTable creates a fresh sessions table named prefix plus a random suffix
// (dynamo.CreateTable: the table the store and the stack use) and returns
// its name and a function that deletes it.
func (e *Env) NewTable(ctx context.Context, prefix string) (string, func(), error) {
	var suffix [4]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return "", nil, fmt.Errorf("table suffix: %w", err)
	}
	name := prefix + "-" + hex.EncodeToString(suffix[:])
	cctx, cancel := context.WithTimeout(ctx, tableTimeout)
	defer cancel()
	if err := dynamo.CreateTable(cctx, e.Client, name); err != nil {
		return "", nil, err
	}
	drop := func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tableTimeout)
		defer cancel()
		if err := dynamo.DeleteTable(dctx, e.Client, name); err != nil {
			e.Printf("warning: %v", err)
		}
	}
	return name, drop, nil
}

// Store returns the session store on table as a deployment without a
// running quota builds it (SANDMAN_MAX_RUNNING 0, the default; internal/app
// sets dynamo.Config.WithoutRunningSlots then): each session write is one
// conditional PutItem, with no per-account counter item in a transaction.
func (e *Env) Store(table string) *dynamo.Store {
	return dynamo.New(dynamo.Config{Client: e.Client, Table: table, Log: e.Log, WithoutRunningSlots: true})
}

// Fixture reads events/<rel> from the repository.
func (e *Env) Fixture(rel string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(e.RepoDir, "events", rel))
	if err != nil {
		return nil, fmt.Errorf("read fixture: %w", err)
	}
	return b, nil
}

// withSessionID returns a copy of an API fixture addressed to session id:
// path parameter, raw path and request-context path.
func withSessionID(req events.APIGatewayV2HTTPRequest, fixtureID, id string) events.APIGatewayV2HTTPRequest {
	out := req
	out.PathParameters = maps.Clone(req.PathParameters)
	if out.PathParameters == nil {
		out.PathParameters = map[string]string{}
	}
	out.PathParameters["id"] = id
	out.RawPath = replaceID(req.RawPath, fixtureID, id)
	out.RequestContext.HTTP.Path = replaceID(req.RequestContext.HTTP.Path, fixtureID, id)
	return out
}

func replaceID(path, from, to string) string {
	if from == "" {
		return path
	}
	return strings.Replace(path, from, to, 1)
}
