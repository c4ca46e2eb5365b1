package app

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/sandmanhq/sandman/internal/archive"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

type givenJobs struct{}

func (givenJobs) EnqueueCheckpoint(context.Context, lifecycle.CheckpointJob) error { return nil }

type givenArchives struct{}

func (givenArchives) Save(context.Context, string, io.Reader) (int64, error) { return 0, nil }
func (givenArchives) Open(context.Context, string) (io.ReadCloser, error)    { return nil, nil }
func (givenArchives) Delete(context.Context, string) error                   { return nil }

// TestCheckpointSeams: the service's checkpoint jobs and archives are
// deps' when given (the local stack's worker and folder store), else the
// SQS queue and the S3 bucket the environment names (the stack's), else
// none.
func TestCheckpointSeams(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-1")
	aws := Config{CheckpointQueueURL: "https://sqs.eu-west-1.amazonaws.com/1/checkpoint",
		Archive: archive.Config{Bucket: "sandman-archives", SSE: archive.SSES3}}
	for _, tc := range []struct {
		name                   string
		cfg                    Config
		deps                   Deps
		wantJobs, wantArchives string
	}{
		{"AWS", aws, Deps{}, "*sqscheckpoint.Jobs", "*archive.Archives"},
		{"Given", aws, Deps{CheckpointJobs: givenJobs{}, Archives: givenArchives{}}, "app.givenJobs", "app.givenArchives"},
		{"None", Config{Archive: archive.Config{Dir: archive.DefaultDir, SSE: archive.SSES3}}, Deps{}, "<nil>", "<nil>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jobs, archives, err := checkpointSeams(t.Context(), &secretSource{ctx: t.Context()}, tc.cfg, tc.deps)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprintf("%T", jobs); got != tc.wantJobs {
				t.Errorf("jobs %s, want %s", got, tc.wantJobs)
			}
			if got := fmt.Sprintf("%T", archives); got != tc.wantArchives {
				t.Errorf("archives %s, want %s", got, tc.wantArchives)
			}
		})
	}
}
