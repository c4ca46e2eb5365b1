package archive

import (
	"fmt"
	"strconv"

	"github.com/sandmanhq/sandman/internal/envnames"
)

// Server-side encryption settings of the S3 store (Config.SSE).
const (
	SSES3  = "AES256"  // S3-managed keys
	SSEKMS = "aws:kms" // a KMS key (Config.KMSKeyID, or the account's aws/s3 key)
)

// Config.Access values: what a process may do with the archives.
const (
	AccessReadWrite = "readwrite" // save, open and delete (the default)
	AccessRead      = "read"      // open only
	AccessJobs      = "jobs"      // none here: the deployment's checkpoint jobs keep them
)

// DefaultDir is the folder store's root when neither a bucket nor a folder
// is configured: beside the local stack's other state.
const DefaultDir = ".sandman/archives"

// Config says which Store keeps archives and how. With Bucket set it is the
// S3 store (internal/archive/s3store); otherwise the folder store
// (internal/archive/dirstore) under Dir.
type Config struct {
	Bucket      string // S3 bucket; "" selects the folder store
	Dir         string // the folder store's root
	SSE         string // SSES3 or SSEKMS, asked for on every put
	KMSKeyID    string // the key of SSEKMS; "" is the account's aws/s3 key
	S3Endpoint  string // an S3-compatible endpoint (moto); "" is AWS
	S3PathStyle bool   // bucket in the path instead of the host name
	// Access is what this process may do with the archives: AccessReadWrite,
	// AccessRead or AccessJobs (internal/app wires lifecycle.Config.Archives,
	// ArchiveReader or ArchivesKept by it).
	Access string
}

// ConfigFromEnv reads the archive settings (envnames.Archive) through
// getenv (os.Getenv in production): SANDMAN_ARCHIVE_BUCKET,
// SANDMAN_ARCHIVE_DIR (default DefaultDir), SANDMAN_ARCHIVE_SSE (default
// SSES3), SANDMAN_ARCHIVE_KMS_KEY_ID, SANDMAN_ARCHIVE_S3_ENDPOINT,
// SANDMAN_ARCHIVE_S3_PATH_STYLE (default true when an endpoint is set),
// SANDMAN_ARCHIVE_ACCESS (default AccessReadWrite).
// A value it cannot use is an error naming the variable.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		Bucket:     getenv(envnames.ArchiveBucket),
		Dir:        getenv(envnames.ArchiveDir),
		SSE:        getenv(envnames.ArchiveSSE),
		KMSKeyID:   getenv(envnames.ArchiveKMSKeyID),
		S3Endpoint: getenv(envnames.ArchiveS3Endpoint),
		Access:     getenv(envnames.ArchiveAccess),
	}
	switch c.Access {
	case "":
		c.Access = AccessReadWrite
	case AccessReadWrite, AccessRead, AccessJobs:
	default:
		return Config{}, fmt.Errorf("%s=%q: want %q, %q or %q", envnames.ArchiveAccess, c.Access, AccessReadWrite, AccessRead, AccessJobs)
	}
	if c.Dir == "" {
		c.Dir = DefaultDir
	}
	if c.SSE == "" {
		c.SSE = SSES3
	}
	c.S3PathStyle = c.S3Endpoint != ""
	if v := getenv(envnames.ArchiveS3PathStyle); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return Config{}, fmt.Errorf("%s=%q: want true or false", envnames.ArchiveS3PathStyle, v)
		}
		c.S3PathStyle = b
	}
	switch c.SSE {
	case SSES3:
		if c.KMSKeyID != "" {
			return Config{}, fmt.Errorf("%s is set but %s is %q: a KMS key needs %q", envnames.ArchiveKMSKeyID, envnames.ArchiveSSE, c.SSE, SSEKMS)
		}
	case SSEKMS:
	default:
		return Config{}, fmt.Errorf("%s=%q: want %q or %q", envnames.ArchiveSSE, c.SSE, SSES3, SSEKMS)
	}
	return c, nil
}
