package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// StreamsAPI is the part of the DynamoDB Streams client the Poller uses;
// *dynamodbstreams.Client implements it.
type StreamsAPI interface {
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

var _ StreamsAPI = (*dynamodbstreams.Client)(nil)

// DefaultPollInterval is how often Run polls the stream: an event appears
// within about this long after its commit (the issue asks for a second).
const DefaultPollInterval = 200 * time.Millisecond

// maxPagesPerShard bounds the GetRecords calls per shard in one Poll, so one
// busy shard cannot starve the others; the rest is read on the next Poll.
const maxPagesPerShard = 20

// PollerConfig is what a Poller is built from (NewPoller). Streams,
// StreamARN and Publisher are required; every other zero field means the
// default named on it, filled in once by NewPoller.
type PollerConfig struct {
	// Streams reads the stream.
	Streams StreamsAPI
	// StreamARN is the table's LatestStreamArn (see dynamo.EnableStream).
	StreamARN string
	// Publisher receives the transitions found.
	Publisher lifecycle.Publisher
	// CheckpointFile keeps, in the JSON file at this path, the sequence
	// number of the last published record of every shard, so a poller
	// started again (the local stack restarted) continues after it instead
	// of from the start of the stream's retention. The file is rewritten
	// (atomically, by rename) after every Poll that published something.
	// Default "": no file, and a new Poller reads every shard from its
	// oldest record (at least once: consumers dedupe on event_id).
	CheckpointFile string
	// Log receives poll failures. Default slog.Default().
	Log *slog.Logger
}

// Poller reads a table's DynamoDB stream (DynamoDB Local's, locally) shard by
// shard and publishes the transitions it finds, as the publisher function
// does in AWS. Records of one shard are published in order; a record is
// read again, with everything after it in its shard, until its events are
// published. A Poller is not safe for concurrent Polls; Run polls from one
// goroutine.
type Poller struct {
	api            StreamsAPI
	arn            string
	pub            lifecycle.Publisher
	log            *slog.Logger
	checkpointPath string

	shards  map[string]*shardState
	order   []string // shard ids in the order first seen
	dirty   bool     // checkpoints moved since the file was written
	loadErr error
}

// shardState is the poller's position in one shard.
type shardState struct {
	id       string
	parent   string
	iterator string   // "" when one must be asked for
	pending  []Change // read, not yet published
	last     string   // sequence number of the last published record
	ended    bool     // the shard is closed and fully published
}

// checkpointFile is the checkpoint file's content.
type checkpointFile struct {
	StreamARN string            `json:"stream_arn"`
	Shards    map[string]string `json:"shards"` // shard id → last published sequence number
}

// NewPoller returns a Poller of the stream cfg.StreamARN publishing through
// cfg.Publisher, with the defaults of PollerConfig filled in.
func NewPoller(cfg PollerConfig) *Poller {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	p := &Poller{api: cfg.Streams, arn: cfg.StreamARN, pub: cfg.Publisher, log: cfg.Log,
		checkpointPath: cfg.CheckpointFile, shards: map[string]*shardState{}}
	if p.checkpointPath != "" {
		p.loadErr = p.loadCheckpoint()
	}
	return p
}

// Run polls every interval (DefaultPollInterval when interval ≤ 0) until ctx
// ends; failures are logged and retried on the next poll. It returns nil when
// ctx ends.
func (p *Poller) Run(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	if p.loadErr != nil {
		p.log.WarnContext(ctx, "outbox: checkpoint file not used; reading the stream from its start", "err", p.loadErr)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := p.Poll(ctx); err != nil && ctx.Err() == nil {
			p.log.ErrorContext(ctx, "outbox: poll the table's stream", "stream", p.arn, "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Poll makes one pass over the stream: it lists the shards, reads the new
// records of every shard whose parent is done, and publishes their
// transitions. It returns how many events it published. Errors: the stream
// calls' or the publisher's, joined; what was not published is read again by
// the next Poll.
func (p *Poller) Poll(ctx context.Context) (int, error) {
	if err := p.describe(ctx); err != nil {
		return 0, err
	}
	published := 0
	var errs []error
	for _, id := range p.order {
		sh := p.shards[id]
		if sh.ended {
			continue
		}
		if par, ok := p.shards[sh.parent]; ok && !par.ended {
			continue // a child shard waits for its parent: keeps each item's order
		}
		n, err := p.pollShard(ctx, sh)
		published += n
		if err != nil {
			errs = append(errs, fmt.Errorf("shard %s: %w", id, err))
		}
	}
	if p.dirty && p.checkpointPath != "" {
		if err := p.saveCheckpoint(); err != nil {
			errs = append(errs, err)
		} else {
			p.dirty = false
		}
	}
	return published, errors.Join(errs...)
}

// describe lists the stream's shards, in the stream's order (parents
// before their children), adding those not seen yet; shards no longer
// listed (trimmed away) are forgotten.
func (p *Poller) describe(ctx context.Context) error {
	in := &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(p.arn)}
	var order []string
	for {
		out, err := p.api.DescribeStream(ctx, in)
		if err != nil {
			return fmt.Errorf("describe stream %s: %w", p.arn, err)
		}
		for _, s := range out.StreamDescription.Shards {
			id := aws.ToString(s.ShardId)
			sh, ok := p.shards[id]
			if !ok {
				sh = &shardState{id: id}
				p.shards[id] = sh
			}
			sh.parent = aws.ToString(s.ParentShardId)
			order = append(order, id)
		}
		last := out.StreamDescription.LastEvaluatedShardId
		if last == nil {
			break
		}
		in.ExclusiveStartShardId = last
	}
	listed := make(map[string]bool, len(order))
	for _, id := range order {
		listed[id] = true
	}
	for id := range p.shards {
		if !listed[id] {
			delete(p.shards, id)
		}
	}
	p.order = order
	return nil
}

// pollShard reads and publishes one shard's new records.
func (p *Poller) pollShard(ctx context.Context, sh *shardState) (int, error) {
	published := 0
	for page := 0; page < maxPagesPerShard; page++ {
		if len(sh.pending) == 0 {
			if sh.iterator == "" {
				if err := p.seek(ctx, sh); err != nil {
					return published, err
				}
				if sh.ended {
					return published, nil
				}
			}
			out, err := p.api.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(sh.iterator)})
			var expired *streamtypes.ExpiredIteratorException
			if errors.As(err, &expired) {
				sh.iterator = "" // ask again from the checkpoint
				continue
			}
			if err != nil {
				return published, fmt.Errorf("get records: %w", err)
			}
			for _, r := range out.Records {
				sh.pending = append(sh.pending, FromStream(r))
			}
			next := aws.ToString(out.NextShardIterator)
			sh.iterator = next
			if len(sh.pending) == 0 {
				if next == "" {
					sh.ended = true
				}
				return published, nil
			}
		}
		before := countEvents(sh.pending)
		done, err := Publish(ctx, p.pub, sh.pending)
		if done > 0 {
			sh.last, p.dirty = sh.pending[done-1].Sequence, true
		}
		published += before - countEvents(sh.pending[done:])
		sh.pending = sh.pending[done:]
		if err != nil {
			return published, err
		}
		if sh.iterator == "" {
			sh.ended = true
			return published, nil
		}
	}
	return published, nil
}

// seek asks for sh's iterator: after its checkpoint, else from its oldest
// record. A shard that is gone (trimmed away) ends.
func (p *Poller) seek(ctx context.Context, sh *shardState) error {
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(p.arn), ShardId: aws.String(sh.id),
		ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon}
	if sh.last != "" {
		in.ShardIteratorType, in.SequenceNumber = streamtypes.ShardIteratorTypeAfterSequenceNumber, aws.String(sh.last)
	}
	out, err := p.api.GetShardIterator(ctx, in)
	var (
		notFound *streamtypes.ResourceNotFoundException
		trimmed  *streamtypes.TrimmedDataAccessException
	)
	switch {
	case errors.As(err, &notFound):
		sh.ended = true
		return nil
	case errors.As(err, &trimmed) && sh.last != "":
		// The checkpoint fell out of the retention: continue from the oldest.
		sh.last = ""
		return p.seek(ctx, sh)
	case err != nil:
		return fmt.Errorf("get shard iterator: %w", err)
	}
	sh.iterator = aws.ToString(out.ShardIterator)
	if sh.iterator == "" {
		sh.ended = true
	}
	return nil
}

// countEvents returns how many of changes are transitions (or unreadable).
func countEvents(changes []Change) int {
	n := 0
	for _, c := range changes {
		if _, ok, err := c.Event(); ok || err != nil {
			n++
		}
	}
	return n
}

func (p *Poller) loadCheckpoint() error {
	b, err := os.ReadFile(p.checkpointPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read checkpoint: %w", err)
	}
	var cp checkpointFile
	if err := json.Unmarshal(b, &cp); err != nil {
		return fmt.Errorf("read checkpoint %s: %w", p.checkpointPath, err)
	}
	if cp.StreamARN != p.arn {
		return nil // another stream (the table was made again): start over
	}
	for id, seq := range cp.Shards {
		p.shards[id] = &shardState{id: id, last: seq}
	}
	return nil
}

func (p *Poller) saveCheckpoint() error {
	cp := checkpointFile{StreamARN: p.arn, Shards: map[string]string{}}
	for id, sh := range p.shards {
		if sh.last != "" {
			cp.Shards[id] = sh.last
		}
	}
	b, err := json.MarshalIndent(cp, "", "  ")
	if err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	tmp := p.checkpointPath + ".tmp"
	if err := os.MkdirAll(filepath.Dir(p.checkpointPath), 0o755); err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	if err := os.Rename(tmp, p.checkpointPath); err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	return nil
}
