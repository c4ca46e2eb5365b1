// Package s3store keeps archives in an S3 bucket: an archive.Store whose
// object under "acct/ses/chk.tar.zst" is the S3 object of that key. Puts
// stream through the SDK's transfer manager (multipart uploads of
// PartSize parts, a stream of unknown size held PartSize × (Concurrency +
// 1) bytes at a time) and ask for server-side encryption on every object.
package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	tm "github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	tmtypes "github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/sandmanhq/sandman/internal/archive"
)

var _ archive.Store = (*Store)(nil)

// Upload settings. S3 refuses parts under MinPartSize (but the last);
// DefaultPartSize keeps an upload of DefaultConcurrency parts in flight
// within 40 MiB of memory, and allows objects up to 80 GiB (10,000 parts).
const (
	MinPartSize        = 5 << 20
	DefaultPartSize    = 8 << 20
	DefaultConcurrency = 4
	// abortTimeout bounds the abort of a failed multipart upload, which
	// runs on a fresh context when the put's own has ended, so that no
	// uploaded part is left stored (and billed) by a cancelled put.
	abortTimeout = 30 * time.Second
)

// Options configure a Store.
type Options struct {
	Bucket      string // required
	SSE         string // archive.SSES3 (the default) or archive.SSEKMS
	KMSKeyID    string // with archive.SSEKMS: the key; "" is the account's aws/s3 key
	PartSize    int64  // bytes per part, at least MinPartSize; 0 is DefaultPartSize
	Concurrency int    // parts uploaded at once; 0 is DefaultConcurrency
}

// Store is an archive.Store in one S3 bucket.
type Store struct {
	client   *s3.Client
	uploader *tm.Client
	opts     Options
}

// New returns the store of opts.Bucket through client. The bucket is not
// checked: the first call that reaches it fails when it does not exist or
// the caller may not use it.
func New(client *s3.Client, opts Options) (*Store, error) {
	if opts.Bucket == "" {
		return nil, errors.New("archive s3 store: no bucket")
	}
	switch opts.SSE {
	case "":
		opts.SSE = archive.SSES3
	case archive.SSES3, archive.SSEKMS:
	default:
		return nil, fmt.Errorf("archive s3 store: server-side encryption %q: want %q or %q", opts.SSE, archive.SSES3, archive.SSEKMS)
	}
	if opts.KMSKeyID != "" && opts.SSE != archive.SSEKMS {
		return nil, fmt.Errorf("archive s3 store: a KMS key needs server-side encryption %q", archive.SSEKMS)
	}
	if opts.PartSize == 0 {
		opts.PartSize = DefaultPartSize
	}
	if opts.PartSize < MinPartSize {
		return nil, fmt.Errorf("archive s3 store: part size %d bytes is under S3's minimum of %d", opts.PartSize, MinPartSize)
	}
	if opts.Concurrency == 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.Concurrency < 1 {
		return nil, fmt.Errorf("archive s3 store: concurrency %d: want at least 1", opts.Concurrency)
	}
	uploader := tm.New(client, func(o *tm.Options) {
		o.PartSizeBytes = opts.PartSize
		o.MultipartUploadThreshold = opts.PartSize
		o.Concurrency = opts.Concurrency
		o.FailTimeout = abortTimeout
	})
	return &Store{client: client, uploader: uploader, opts: opts}, nil
}

// NewClient returns an S3 client. With endpoint "" it is configured the
// SDK's default way (environment, shared config, the Lambda role), for
// AWS. With an endpoint such as moto's "http://127.0.0.1:N" it ignores the
// developer's AWS configuration: static dummy credentials and region
// us-east-1. pathStyle puts the bucket in the URL's path instead of its
// host name, as moto needs. Requests have no overall time limit (a part
// of a slow upload may take long); the caller's context bounds them.
func NewClient(ctx context.Context, endpoint string, pathStyle bool) (*s3.Client, error) {
	httpClient := awshttp.NewBuildableClient()
	if endpoint != "" {
		return s3.New(s3.Options{
			BaseEndpoint: aws.String(endpoint),
			Region:       "us-east-1",
			Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
			HTTPClient:   httpClient,
			UsePathStyle: pathStyle,
		}), nil
	}
	cfg, err := config.LoadDefaultConfig(ctx, config.WithHTTPClient(httpClient))
	if err != nil {
		return nil, fmt.Errorf("load aws config: %w", err)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = pathStyle }), nil
}

// FromConfig returns the store cfg describes (cfg.Bucket must be set),
// with a client from NewClient.
func FromConfig(ctx context.Context, cfg archive.Config) (*Store, error) {
	client, err := NewClient(ctx, cfg.S3Endpoint, cfg.S3PathStyle)
	if err != nil {
		return nil, err
	}
	return New(client, Options{Bucket: cfg.Bucket, SSE: cfg.SSE, KMSKeyID: cfg.KMSKeyID})
}

// Put streams r to the object under key, asking for the store's
// server-side encryption (archive.Store). A stream longer than one part
// goes up as a multipart upload, which S3 makes visible only when it
// completes; a failed or cancelled one is aborted, its parts deleted.
func (s *Store) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	if err := archive.ValidateKey(key); err != nil {
		return 0, err
	}
	body := &countingReader{r: r}
	in := &tm.UploadObjectInput{
		Bucket:               aws.String(s.opts.Bucket),
		Key:                  aws.String(key),
		Body:                 body,
		ContentType:          aws.String("application/zstd"),
		ServerSideEncryption: tmtypes.ServerSideEncryption(s.opts.SSE),
	}
	if s.opts.KMSKeyID != "" {
		in.SSEKMSKeyID = aws.String(s.opts.KMSKeyID)
	}
	if _, err := s.uploader.UploadObject(ctx, in); err != nil {
		return body.n, fmt.Errorf("put archive %s: %w", key, err)
	}
	return body.n, nil
}

// Get opens the object under key (archive.Store).
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := archive.ValidateKey(key); err != nil {
		return nil, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.opts.Bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("get archive %s: %w", key, notFound(err))
	}
	return out.Body, nil
}

// Head returns the size of the object under key (archive.Store).
func (s *Store) Head(ctx context.Context, key string) (archive.Info, error) {
	if err := archive.ValidateKey(key); err != nil {
		return archive.Info{}, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.opts.Bucket), Key: aws.String(key)})
	if err != nil {
		return archive.Info{}, fmt.Errorf("head archive %s: %w", key, notFound(err))
	}
	return archive.Info{Key: key, Size: aws.ToInt64(out.ContentLength)}, nil
}

// Delete removes the object under key; S3 answers a delete of a missing
// key with success too (archive.Store).
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := archive.ValidateKey(key); err != nil {
		return err
	}
	if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.opts.Bucket), Key: aws.String(key)}); err != nil {
		return fmt.Errorf("delete archive %s: %w", key, err)
	}
	return nil
}

// notFound maps S3's answers for a missing object (NoSuchKey on a get, a
// bare 404 on a head, which has no body) to archive.ErrNotFound. A missing
// bucket stays an error of its own: that is a deployment fault.
func notFound(err error) error {
	var noKey *types.NoSuchKey
	var nf *types.NotFound
	var apiErr smithy.APIError
	var resp *awshttp.ResponseError
	switch {
	case errors.As(err, &noKey), errors.As(err, &nf):
	case errors.As(err, &apiErr) && apiErr.ErrorCode() == "NoSuchBucket":
		return err
	case errors.As(err, &resp) && resp.HTTPStatusCode() == http.StatusNotFound:
	default:
		return err
	}
	return fmt.Errorf("%w (%v)", archive.ErrNotFound, err)
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
