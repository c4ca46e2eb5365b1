package infra

import (
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"

	"github.com/sandmanhq/sandman/internal/archive"
	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/routes"
)

// Checkpoints in AWS (docs/CHECKPOINTS.md "Jobs", docs/DEPLOY.md
// "Checkpoints in AWS"): the checkpoint queue of jobs (saves, restores,
// forks, deletes) fed to the checkpoint function, and the bucket Sandman
// keeps its workspace archives in.

// checkpointSenders are the functions that may ask for a checkpoint job
// (lifecycle.CheckpointJobs): the sessions function (the checkpoint routes:
// create, restore, fork, delete, and a delete with purge), those whose
// commits pause a session (pause; the sweep and the timer, whose automatic
// pauses record a checkpoint; the webhook, a pause the provider reports),
// the sweep (checkpoints taken on a schedule, retention, reconcile), those
// that resume a session (resume: the resume route and the stable link;
// channel: a resume over the client channel), whose resume of an archived
// or lost session queues its restore, and the checkpoint function (a fork
// without a checkpoint saves one first). They may send to the checkpoint
// queue (sqs:SendMessage only) and get its URL in
// envnames.CheckpointQueueURL, and each is told what it may do with
// archives (envnames.ArchiveAccess): every one of them may choose a
// checkpoint's kind, which needs to know that the deployment keeps archives.
var checkpointSenders = []string{routes.Sessions, routes.Pause, routes.Webhook, routes.Sweep, routes.Timer, routes.Resume,
	routes.Channel, routes.Checkpoint}

// archiveUsers are the functions that read and write archives: the
// checkpoint function, which streams a workspace into the bucket (save),
// out of it (restore, fork) and deletes it. They get the bucket's name,
// its encryption settings and object access on it (archive.AccessReadWrite).
var archiveUsers = []string{routes.Checkpoint}

// archiveReaders are the functions that read archives but never write or
// delete them: the sweep, which finishes a lost session's restore whose
// job died itself (lifecycle's reconcileRecovery). They get the bucket's
// name, s3:GetObject on its objects (with kms:Decrypt on its key), and
// archive.AccessRead.
var archiveReaders = []string{routes.Sweep}

// archiveDeleters are the functions that delete archives without write
// access to the bucket: the sessions function (an archive checkpoint
// deleted, a purge) and the sweep (the archive of a save that died, a
// session deleted by its retention) queue a delete_archive job
// (lifecycle.CheckpointOpDeleteArchive) for the checkpoint function
// instead, so they are checkpointSenders and get no s3:DeleteObject.
var archiveDeleters = []string{routes.Sessions, routes.Sweep}

// archiveAccess returns what function name may do with archives
// (envnames.ArchiveAccess), "" for a function that has no say in them.
// The checkpoint senders that neither read nor write the bucket get
// archive.AccessJobs: they choose archives for a new checkpoint and hand
// it to the checkpoint function.
func archiveAccess(name string) string {
	switch {
	case slices.Contains(archiveUsers, name):
		return archive.AccessReadWrite
	case slices.Contains(archiveReaders, name):
		return archive.AccessRead
	case slices.Contains(checkpointSenders, name):
		return archive.AccessJobs
	}
	return ""
}

// Settings of the checkpoint queue and the checkpoint function (ours).
const (
	// checkpointTimeout is the checkpoint function's Lambda timeout: a
	// job is a provider snapshot (seconds), or an archive of a workspace
	// streamed through the function (about a minute for a gigabyte at the
	// provider's command stream and S3's upload rates), or a restore that
	// waits for the new sandbox; 10 min is room for several gigabytes,
	// under Lambda's 15 min limit.
	checkpointTimeout = 10 * time.Minute
	// checkpointMemoryMB is the checkpoint function's memory: the zstd
	// encoder and the multipart upload hold about 80 MiB of buffers, and
	// Lambda gives a little over one vCPU at 2048 MB, so compression runs
	// on its own core while the next block is read (archive.Compress).
	checkpointMemoryMB = 2048
	// checkpointBatchSize is one job per invocation: jobs are long, so a
	// batch would make the last job wait for the first.
	checkpointBatchSize = 1
	// checkpointMaxReceives is how many times a failing job is delivered
	// before it moves to the dead-letter queue.
	checkpointMaxReceives = 5
	// checkpointVisibility is the queue's visibility timeout: the
	// function's timeout plus a minute, so a job under way is never
	// handed to a second invocation, and one whose function died comes
	// back soon after.
	checkpointVisibility = checkpointTimeout + time.Minute
	// checkpointOldestAgeAlarm is the age of the oldest job past which
	// its alarm fires: users wait on saves, restores and forks.
	checkpointOldestAgeAlarm = 5 * time.Minute
)

// DefaultCheckpointConcurrency is SandmanStackProps.CheckpointConcurrency's
// default: as many jobs at once as readiness jobs
// (DefaultReadinessConcurrency).
const DefaultCheckpointConcurrency = 20

// checkpointQueueSpec is the checkpoint job queue
// (internal/checkpoint/sqscheckpoint), fed to the checkpoint function one
// job per invocation, at most SandmanStackProps.CheckpointConcurrency at
// once.
var checkpointQueueSpec = jobQueueSpec{
	name:        "Checkpoint",
	visibility:  checkpointVisibility,
	maxReceives: checkpointMaxReceives,
	dlqAlarm:    "Sandman checkpoint jobs the checkpoint function gave up on (dead-letter queue)",
	ageAlarm:    "Sandman checkpoint function behind its queue (oldest job over 5 min)",
	oldestAge:   checkpointOldestAgeAlarm,
}

// SandmanStackProps.ArchiveEncryption values: how the archive bucket's
// objects are encrypted at rest.
const (
	// ArchiveEncryptionS3 is S3-managed keys (SSE-S3, the default): no key
	// to manage or pay for.
	ArchiveEncryptionS3 = "s3"
	// ArchiveEncryptionKMS is a customer managed KMS key the stack creates
	// (rotated yearly, kept when the stack is deleted), with an S3 Bucket
	// Key so a job makes a handful of KMS calls, not one per part.
	ArchiveEncryptionKMS = "kms"
)

// Defaults of the archive bucket's lifecycle rule.
const (
	// DefaultArchiveExpirationDays is SandmanStackProps.ArchiveExpirationDays's
	// default: an archive object is deleted 90 days after it was written,
	// whatever the table says (the checkpoint's own retention is at most
	// this long).
	DefaultArchiveExpirationDays = 90
	// archiveAbortUploadDays is when the parts of a multipart upload that
	// never completed (a checkpoint function that died mid-upload) are
	// deleted: a day, well past any job's 10 min.
	archiveAbortUploadDays = 1
)

// archiveObjectActions are the object actions an archive user may take:
// the calls internal/archive/s3store makes (PutObject also authorises a
// multipart upload's create, parts and completion; GetObject a head).
var archiveObjectActions = []string{"s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"}

// archiveReadActions are the object actions an archive reader may take:
// the get of internal/archive/s3store's Get.
var archiveReadActions = []string{"s3:GetObject"}

// archiveKeyActions are what an archive user may do with the bucket's KMS
// key (ArchiveEncryptionKMS): make a data key to write, decrypt one to
// read or to complete a multipart upload.
var archiveKeyActions = []string{"kms:GenerateDataKey", "kms:Decrypt"}

// archiveReadKeyActions are what an archive reader may do with that key:
// decrypt the data key of an object it gets.
var archiveReadKeyActions = []string{"kms:Decrypt"}

// archiveBucket is the bucket of workspace archives and, with
// ArchiveEncryptionKMS, its key (nil otherwise).
type archiveBucket struct {
	bucket awss3.Bucket
	key    awskms.Key
}

// newArchiveBucket creates the archive bucket: encrypted (S3-managed keys,
// or the stack's KMS key with ArchiveEncryptionKMS), TLS 1.2 or later
// only (a bucket policy denying the rest), all public access blocked,
// ACLs off, not versioned (a deleted checkpoint's archive is gone), kept
// when the stack is deleted, and one lifecycle rule: objects expire
// p.ArchiveExpirationDays after they were written and incomplete multipart
// uploads are aborted after archiveAbortUploadDays.
func newArchiveBucket(stack awscdk.Stack, p SandmanStackProps) archiveBucket {
	var b archiveBucket
	props := &awss3.BucketProps{
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		MinimumTLSVersion: jsii.Number(1.2),
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		Versioned:         jsii.Bool(false),
		RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:                                  jsii.String("ExpireArchives"),
			Enabled:                             jsii.Bool(true),
			Expiration:                          awscdk.Duration_Days(jsii.Number(p.ArchiveExpirationDays)),
			AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(archiveAbortUploadDays)),
		}},
	}
	if p.ArchiveEncryption == ArchiveEncryptionKMS {
		b.key = awskms.NewKey(stack, jsii.String("ArchiveKey"), &awskms.KeyProps{
			Description:       jsii.String("Encrypts Sandman's workspace archives (the archive bucket)"),
			EnableKeyRotation: jsii.Bool(true),
			RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
		})
		props.Encryption = awss3.BucketEncryption_KMS
		props.EncryptionKey = b.key
		props.BucketKeyEnabled = jsii.Bool(true)
	}
	b.bucket = awss3.NewBucket(stack, jsii.String("ArchiveBucket"), props)
	suppress(b.bucket, nagArchiveAccessLogs)
	return b
}

// grant gives fn the archive access access (archiveAccess) and puts it in
// fn's environment (envnames.ArchiveAccess). archive.AccessReadWrite: read,
// write and delete the bucket's objects (and list the bucket, so that a
// missing archive answers 404 rather than 403) and use its key;
// archive.AccessRead: get its objects, list it, and decrypt with its key.
// Both get the bucket's name and encryption (envnames.Archive*), which the
// functions read with internal/archive.ConfigFromEnv; archive.AccessJobs
// gets no grant and no bucket.
func (b archiveBucket) grant(fn awslambda.Function, access string) {
	fn.AddEnvironment(jsii.String(envnames.ArchiveAccess), jsii.String(access), nil)
	objects, keyActions := archiveObjectActions, archiveKeyActions
	switch access {
	case archive.AccessJobs:
		return
	case archive.AccessRead:
		objects, keyActions = archiveReadActions, archiveReadKeyActions
	}
	suppress(fn.Role(), nagArchiveObjects)
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(objects...),
		Resources: jsii.Strings(*b.bucket.ArnForObjects(jsii.String("*"))),
	}))
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:ListBucket"),
		Resources: jsii.Strings(*b.bucket.BucketArn()),
	}))
	fn.AddEnvironment(jsii.String(envnames.ArchiveBucket), b.bucket.BucketName(), nil)
	if b.key == nil {
		fn.AddEnvironment(jsii.String(envnames.ArchiveSSE), jsii.String(archive.SSES3), nil)
		return
	}
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(keyActions...),
		Resources: jsii.Strings(*b.key.KeyArn()),
	}))
	fn.AddEnvironment(jsii.String(envnames.ArchiveSSE), jsii.String(archive.SSEKMS), nil)
	fn.AddEnvironment(jsii.String(envnames.ArchiveKMSKeyID), b.key.KeyArn(), nil)
}

// The archive bucket's accepted findings.
var (
	nagArchiveAccessLogs = NagSuppression{
		RuleID: "AwsSolutions-S1",
		Reason: "The bucket holds only Sandman's workspace archives, read and written by the checkpoint function alone, " +
			"whose logs record every save, restore and delete with its session and checkpoint; server access logs " +
			"would need a second bucket and repeat them. CloudTrail data events can be turned on per deployment.",
		On: "the archive bucket",
	}
	nagArchiveObjects = NagSuppression{
		RuleID:    "AwsSolutions-IAM5",
		AppliesTo: `/^Resource::<ArchiveBucket[0-9A-F]+\.Arn>\/\*$/`,
		Reason: "Archive keys are made per checkpoint at run time (<account>/<session>/<checkpoint>.tar.zst), so object " +
			"access names the archive bucket's objects, that bucket only; the actions are listed, not wildcarded.",
		On: "the roles of the functions that read or write archives",
	}
)

// checkArchive reports archive settings synthesis cannot use: an unknown
// ArchiveEncryption, or an ArchiveExpirationDays outside 1 to 3650.
func checkArchive(p SandmanStackProps) error {
	switch p.ArchiveEncryption {
	case ArchiveEncryptionS3, ArchiveEncryptionKMS:
	default:
		return fmt.Errorf("infra: archive encryption %q: want %q or %q", p.ArchiveEncryption, ArchiveEncryptionS3, ArchiveEncryptionKMS)
	}
	if d := p.ArchiveExpirationDays; d < 1 || d > 3650 || d != float64(int(d)) {
		return fmt.Errorf("infra: archive expiration of %v days: want a whole number from 1 to 3650", d)
	}
	return nil
}
