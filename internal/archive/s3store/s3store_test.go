package s3store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/sandmanhq/sandman/internal/archive"
	"github.com/sandmanhq/sandman/internal/archive/archivetest"
	"github.com/sandmanhq/sandman/internal/archive/s3store"
)

// mustClient returns a client for moto's S3 at S3_ENDPOINT (the test skips
// without it, or fails under SANDMAN_TEST_REQUIRE=1).
func mustClient(t *testing.T) *s3.Client {
	t.Helper()
	endpoint := archivetest.ServerEndpoint(t, "S3_ENDPOINT", "moto's S3 server (scripts/moto.sh)")
	client, err := s3store.NewClient(t.Context(), endpoint, true)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// mustBucket creates a bucket of its own for the test and removes it,
// with whatever it holds, afterwards.
func mustBucket(t *testing.T, client *s3.Client) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	bucket := "sandman-test-" + hex.EncodeToString(b)
	if _, err := client.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		objs, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
		if err == nil {
			for _, o := range objs.Contents {
				_, _ = client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: o.Key})
			}
		}
		if _, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Errorf("delete bucket %s: %v", bucket, err)
		}
	})
	return bucket
}

// newStore makes stores of MinPartSize parts, so that the contract's
// multipart-sized object goes up in three parts.
func newStore(t *testing.T, client *s3.Client, opts s3store.Options) (*s3store.Store, string) {
	t.Helper()
	opts.Bucket = mustBucket(t, client)
	if opts.PartSize == 0 {
		opts.PartSize = s3store.MinPartSize
	}
	s, err := s3store.New(client, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { checkNoUploadsLeft(t, client, opts.Bucket) })
	return s, opts.Bucket
}

// checkNoUploadsLeft fails when a multipart upload is still open in the
// bucket: its parts would stay stored, and billed, for ever.
func checkNoUploadsLeft(t *testing.T, client *s3.Client, bucket string) {
	t.Helper()
	out, err := client.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Errorf("list multipart uploads: %v", err)
		return
	}
	for _, u := range out.Uploads {
		t.Errorf("multipart upload of %s left open (id %s)", aws.ToString(u.Key), aws.ToString(u.UploadId))
		_, _ = client.AbortMultipartUpload(context.Background(), &s3.AbortMultipartUploadInput{Bucket: aws.String(bucket), Key: u.Key, UploadId: u.UploadId})
	}
}

func TestStoreContract(t *testing.T) {
	client := mustClient(t)
	archivetest.Run(t, func(t *testing.T) archive.Store {
		s, _ := newStore(t, client, s3store.Options{})
		return s
	})
}

// TestArchivesContract runs archive.Archives (lifecycle.Archives) over S3
// (moto).
func TestArchivesContract(t *testing.T) {
	client := mustClient(t)
	archivetest.RunArchives(t, func(t *testing.T) archive.Store {
		s, _ := newStore(t, client, s3store.Options{})
		return s
	})
}

// TestPutAsksForEncryption checks that every object, single-part and
// multipart, is stored with the configured server-side encryption.
func TestPutAsksForEncryption(t *testing.T) {
	client := mustClient(t)
	for _, tc := range []struct {
		name string
		opts s3store.Options
		want types.ServerSideEncryption
	}{
		{"Default", s3store.Options{}, types.ServerSideEncryptionAes256},
		{"AES256", s3store.Options{SSE: archive.SSES3}, types.ServerSideEncryptionAes256},
		{"KMS", s3store.Options{SSE: archive.SSEKMS}, types.ServerSideEncryptionAwsKms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, bucket := newStore(t, client, tc.opts)
			for _, size := range []int{archivetest.SmallSize, archivetest.MultipartSize} {
				key, _ := archive.Key("acct", "ses", "chk_"+strings.ToLower(tc.name))
				archivetest.MustPut(t, s, key, archivetest.Bytes(1, size))
				out, err := client.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
				if err != nil {
					t.Fatal(err)
				}
				if got := out.ServerSideEncryption; got != tc.want {
					t.Errorf("%d bytes: stored with encryption %q, want %q", size, got, tc.want)
				}
			}
		})
	}
}

func TestMissingBucketIsNotNotFound(t *testing.T) {
	s, err := s3store.New(mustClient(t), s3store.Options{Bucket: "sandman-test-no-such-bucket"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Get(t.Context(), "acct/ses/chk.tar.zst")
	if err == nil || errors.Is(err, archive.ErrNotFound) {
		t.Errorf("get from a missing bucket = %v, want an error other than ErrNotFound", err)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	client := s3.New(s3.Options{Region: "us-east-1"})
	for name, opts := range map[string]s3store.Options{
		"NoBucket":        {},
		"BadSSE":          {Bucket: "b", SSE: "rot13"},
		"KMSKeyWithout":   {Bucket: "b", KMSKeyID: "alias/k"},
		"SmallParts":      {Bucket: "b", PartSize: 1 << 20},
		"NegativeWorkers": {Bucket: "b", Concurrency: -1},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := s3store.New(client, opts); err == nil {
				t.Errorf("New(%+v) succeeded", opts)
			}
		})
	}
}
