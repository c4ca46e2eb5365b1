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

// checkpointSeams returns the service's checkpoint jobs and archives
// (docs/CHECKPOINTS.md): deps' when given, else the SQS checkpoint queue
// when its URL is configured and the S3 archive store when a bucket is,
// else nil (no jobs: the checkpoint routes answer unavailable; no
// archives: provider snapshots only). Errors: the AWS configuration's.
func checkpointSeams(ctx context.Context, src *secretSource, cfg Config, deps Deps) (lifecycle.CheckpointJobs, lifecycle.Archives, error) {
	jobs, archives := deps.CheckpointJobs, deps.Archives
	if jobs == nil && cfg.CheckpointQueueURL != "" {
		c, err := src.sqs()
		if err != nil {
			return nil, nil, err
		}
		jobs = sqscheckpoint.New(c, cfg.CheckpointQueueURL)
	}
	if archives == nil && cfg.Archive.Bucket != "" {
		store, err := s3store.FromConfig(ctx, cfg.Archive)
		if err != nil {
			return nil, nil, fmt.Errorf("archive bucket %s: %w", cfg.Archive.Bucket, err)
		}
		archives = archive.NewArchives(store)
	}
	return jobs, archives, nil
}

// sqs returns an SQS client of the AWS default config (secretSource.aws).
func (s *secretSource) sqs() (*sqs.Client, error) {
	c, err := s.aws()
	if err != nil {
		return nil, err
	}
	return sqs.NewFromConfig(c), nil
}
