package app

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sandmanhq/sandman/internal/archive"
	"github.com/sandmanhq/sandman/internal/archive/s3store"
	"github.com/sandmanhq/sandman/internal/checkpoint/sqscheckpoint"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// checkpointWiring is what checkpointSeams gives lifecycle.Config.
type checkpointWiring struct {
	jobs     lifecycle.CheckpointJobs
	archives lifecycle.Archives
	reader   lifecycle.ArchiveReader
	kept     bool
}

// checkpointSeams returns the service's checkpoint jobs and archives
// (docs/CHECKPOINTS.md): deps' when given, else the SQS checkpoint queue
// when its URL is configured and the S3 archive store when a bucket is,
// as cfg.Archive.Access allows (AccessRead: only a reader, the sweep's;
// AccessReadWrite: the whole store, the checkpoint function's), else nil
// (no jobs: the checkpoint routes answer unavailable; no archives: they
// are kept only where the access is AccessJobs, the functions that choose
// a checkpoint's kind but hand its archive to the checkpoint function).
// Errors: the AWS configuration's.
func checkpointSeams(ctx context.Context, src *secretSource, cfg Config, deps Deps) (checkpointWiring, error) {
	w := checkpointWiring{jobs: deps.CheckpointJobs, archives: deps.Archives}
	if w.jobs == nil && cfg.CheckpointQueueURL != "" {
		c, err := src.sqs()
		if err != nil {
			return w, err
		}
		w.jobs = sqscheckpoint.New(c, cfg.CheckpointQueueURL)
	}
	if w.archives == nil && cfg.Archive.Bucket != "" && cfg.Archive.Access != archive.AccessJobs {
		store, err := s3store.FromConfig(ctx, cfg.Archive)
		if err != nil {
			return w, fmt.Errorf("archive bucket %s: %w", cfg.Archive.Bucket, err)
		}
		if cfg.Archive.Access == archive.AccessRead {
			w.reader = archive.NewArchives(store)
		} else {
			w.archives = archive.NewArchives(store)
		}
	}
	w.kept = w.archives != nil || w.reader != nil || cfg.Archive.Access == archive.AccessJobs
	return w, nil
}

// sqs returns an SQS client of the AWS default config (secretSource.aws).
func (s *secretSource) sqs() (*sqs.Client, error) {
	c, err := s.aws()
	if err != nil {
		return nil, err
	}
	return sqs.NewFromConfig(c), nil
}
