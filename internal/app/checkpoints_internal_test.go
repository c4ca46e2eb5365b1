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
// SQS queue and the S3 bucket the environment names (the stack's), as the
// function's archive access allows: the whole store (the checkpoint
// function), a reader (the sweep), or none while archives are kept (the
// functions that only choose the kind); else none.
func TestCheckpointSeams(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-1")
	queue := "https://sqs.eu-west-1.amazonaws.com/1/checkpoint"
	withAccess := func(access string) Config {
		return Config{CheckpointQueueURL: queue, Archive: archive.Config{Bucket: "sandman-archives", SSE: archive.SSES3, Access: access}}
	}
	aws := withAccess(archive.AccessReadWrite)
	for _, tc := range []struct {
		name                               string
		cfg                                Config
		deps                               Deps
		wantJobs, wantArchives, wantReader string
		wantKept                           bool
	}{
		{"AWS", aws, Deps{}, "*sqscheckpoint.Jobs", "*archive.Archives", "<nil>", true},
		{"Read", withAccess(archive.AccessRead), Deps{}, "*sqscheckpoint.Jobs", "<nil>", "*archive.Archives", true},
		{"Jobs", Config{CheckpointQueueURL: queue, Archive: archive.Config{Access: archive.AccessJobs}}, Deps{},
			"*sqscheckpoint.Jobs", "<nil>", "<nil>", true},
		{"Given", aws, Deps{CheckpointJobs: givenJobs{}, Archives: givenArchives{}}, "app.givenJobs", "app.givenArchives", "<nil>", true},
		{"None", Config{Archive: archive.Config{Dir: archive.DefaultDir, SSE: archive.SSES3, Access: archive.AccessReadWrite}}, Deps{},
			"<nil>", "<nil>", "<nil>", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := checkpointSeams(t.Context(), &secretSource{ctx: t.Context()}, tc.cfg, tc.deps)
			if err != nil {
				t.Fatal(err)
			}
			for what, pair := range map[string][2]string{
				"jobs":     {fmt.Sprintf("%T", w.jobs), tc.wantJobs},
				"archives": {fmt.Sprintf("%T", w.archives), tc.wantArchives},
				"reader":   {fmt.Sprintf("%T", w.reader), tc.wantReader},
			} {
				if pair[0] != pair[1] {
					t.Errorf("%s %s, want %s", what, pair[0], pair[1])
				}
			}
			if w.kept != tc.wantKept {
				t.Errorf("kept %v, want %v", w.kept, tc.wantKept)
			}
		})
	}
}
