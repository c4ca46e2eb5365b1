package infra

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/sandmanhq/sandman/internal/archive"
	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/routes"
)

// TestCheckpointJobs pins the AWS side of docs/CHECKPOINTS.md "Jobs": the
// encrypted checkpoint queue with its dead-letter queue, the checkpoint
// function on it one job at a time with batch item failures and a maximum
// concurrency, sqs:SendMessage and the queue URL for exactly the functions
// that may ask for a job, and the alarms on the queue; the checkpoint
// function's Query on the table bounded to session partitions.
func TestCheckpointJobs(t *testing.T) {
	s := MustDefaultStack(t)
	checkJobQueue(t, s, jobQueueWant{
		name: "Checkpoint", visibility: checkpointVisibility, maxReceives: checkpointMaxReceives,
		consumer: routes.Checkpoint, batchSize: checkpointBatchSize, concurrency: DefaultCheckpointConcurrency,
		senders: checkpointSenders, urlEnv: envnames.CheckpointQueueURL, oldestAge: checkpointOldestAgeAlarm,
	})
	if checkpointVisibility <= checkpointTimeout {
		t.Errorf("checkpoint queue visibility %v is not above the function's timeout %v: a running job would be delivered twice", checkpointVisibility, checkpointTimeout)
	}
	fn := s.resource(t, s.functionID(t, routes.Checkpoint), "AWS::Lambda::Function")
	if got, want := prop(fn, "MemorySize"), float64(checkpointMemoryMB); got != want {
		t.Errorf("MemorySize: got %v MB, want %v", got, want)
	}
	for _, st := range s.statements(t)[s.logicalID(t, constructID(routes.Checkpoint)+"Role")] {
		if !slices.Contains(st.actions, "dynamodb:Query") {
			continue
		}
		if cond := canonical(st.raw["Condition"]); !strings.Contains(cond, `"SESSION#*"`) || strings.Count(cond, "#*") != 1 {
			t.Errorf("checkpoint may Query the table with condition %s, want LeadingKeys SESSION#* only", cond)
		}
	}
}

// archiveGrants returns, by function, the s3: and kms: actions its role
// allows, each with the resources it applies to.
func archiveGrants(t *testing.T, s *synthesized) map[string]map[string][]string {
	t.Helper()
	all := s.statements(t)
	out := map[string]map[string][]string{}
	for _, name := range routes.Functions {
		for a, resources := range s.functionActions(t, all, name) {
			if strings.HasPrefix(a, "s3:") || strings.HasPrefix(a, "kms:") {
				if out[name] == nil {
					out[name] = map[string][]string{}
				}
				out[name][a] = sorted(resources)
			}
		}
	}
	return out
}

// functionEnv returns function name's environment variables.
func functionEnv(t *testing.T, s *synthesized, name string) map[string]any {
	t.Helper()
	fn := s.resource(t, s.functionID(t, name), "AWS::Lambda::Function")
	vars, _ := prop(fn, "Environment").(map[string]any)["Variables"].(map[string]any)
	return vars
}

// TestArchiveBucket pins the archive bucket of the default stack: SSE-S3,
// TLS 1.2 or later only, every public access block on, ACLs off, no
// versioning, kept with the stack, a lifecycle rule that expires archives
// after DefaultArchiveExpirationDays and aborts incomplete multipart
// uploads after a day; object actions on its objects and ListBucket on it
// for the archive users only, naming this bucket and nothing wider, with
// its name and encryption in their environment; and its output.
func TestArchiveBucket(t *testing.T) {
	s := MustDefaultStack(t)
	if got := len(s.ofType("AWS::S3::Bucket")); got != 1 {
		t.Fatalf("buckets: got %d, want 1", got)
	}
	if got := len(s.ofType("AWS::KMS::Key")); got != 0 {
		t.Errorf("KMS keys: got %d, want none with S3-managed encryption", got)
	}
	id := s.logicalID(t, "ArchiveBucket")
	bucket := s.resource(t, id, "AWS::S3::Bucket")

	t.Run("Properties", func(t *testing.T) {
		for key, want := range map[string]any{
			"BucketEncryption": map[string]any{"ServerSideEncryptionConfiguration": []any{
				map[string]any{"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": archive.SSES3}}}},
			"PublicAccessBlockConfiguration": map[string]any{"BlockPublicAcls": true, "BlockPublicPolicy": true,
				"IgnorePublicAcls": true, "RestrictPublicBuckets": true},
			"OwnershipControls": map[string]any{"Rules": []any{map[string]any{"ObjectOwnership": "BucketOwnerEnforced"}}},
			"LifecycleConfiguration": map[string]any{"Rules": []any{map[string]any{
				"Id": "ExpireArchives", "Status": "Enabled", "ExpirationInDays": float64(DefaultArchiveExpirationDays),
				"AbortIncompleteMultipartUpload": map[string]any{"DaysAfterInitiation": float64(archiveAbortUploadDays)},
			}}},
		} {
			if got := prop(bucket, key); !same(got, want) {
				t.Errorf("%s: got %s, want %s", key, canonical(got), canonical(want))
			}
		}
		if v, ok := bucket.Properties["VersioningConfiguration"]; ok {
			t.Errorf("VersioningConfiguration: got %s, want none (a deleted archive is gone)", canonical(v))
		}
		if bucket.DeletionPolicy != "Retain" || bucket.UpdateReplacePolicy != "Retain" {
			t.Errorf("DeletionPolicy %q, UpdateReplacePolicy %q: want Retain (archives outlive the stack)", bucket.DeletionPolicy, bucket.UpdateReplacePolicy)
		}
	})

	t.Run("TLSOnlyPolicy", func(t *testing.T) {
		objects := map[string]any{"Fn::Join": []any{"", []any{getAtt(id, "Arn"), "/*"}}}
		for what, cond := range map[string]any{
			"without TLS":   map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
			"under TLS 1.2": map[string]any{"NumericLessThan": map[string]any{"s3:TlsVersion": 1.2}},
		} {
			mustMatch(t, "the bucket policy denies requests "+what, func() {
				s.template.HasResourceProperties(jsii.String("AWS::S3::BucketPolicy"), map[string]any{
					"Bucket": ref(id),
					"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{map[string]any{
						"Effect": "Deny", "Action": "s3:*", "Condition": cond,
						"Principal": map[string]any{"AWS": "*"}, "Resource": []any{getAtt(id, "Arn"), objects},
					}})},
				})
			})
		}
	})

	t.Run("Grants", func(t *testing.T) {
		objects := canonical(map[string]any{"Fn::Join": []any{"", []any{getAtt(id, "Arn"), "/*"}}})
		list := []string{canonical(getAtt(id, "Arn"))}
		users, readers := map[string][]string{"s3:ListBucket": list}, map[string][]string{"s3:ListBucket": list}
		for _, a := range archiveObjectActions {
			users[a] = []string{objects}
		}
		for _, a := range archiveReadActions {
			readers[a] = []string{objects}
		}
		if !same(archiveReadActions, []string{"s3:GetObject"}) {
			t.Errorf("archive readers may %v, want s3:GetObject only", archiveReadActions)
		}
		got := archiveGrants(t, s)
		for _, name := range routes.Functions {
			w := map[string][]string(nil)
			switch archiveAccess(name) {
			case archive.AccessReadWrite:
				w = users
			case archive.AccessRead:
				w = readers
			}
			if !same(got[name], w) {
				t.Errorf("%s: s3 and kms grants %s, want %s", name, canonical(got[name]), canonical(w))
			}
		}
	})

	t.Run("Deleters", func(t *testing.T) {
		got := archiveGrants(t, s)
		for _, name := range archiveDeleters {
			if !slices.Contains(checkpointSenders, name) {
				t.Errorf("%s deletes archives through checkpoint jobs but may not send them", name)
			}
			for _, a := range []string{"s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"} {
				if _, ok := got[name][a]; ok || slices.Contains(archiveUsers, name) {
					t.Errorf("%s may %s, want not (it hands its archive deletes to the checkpoint function)", name, a)
				}
			}
		}
	})

	// Every function that may ask for a checkpoint chooses its kind, so it
	// is told the deployment keeps archives; only the archive users and
	// readers get the bucket.
	t.Run("Environment", func(t *testing.T) {
		for _, name := range routes.Functions {
			vars := functionEnv(t, s, name)
			access := archiveAccess(name)
			if (access != "") != slices.Contains(checkpointSenders, name) {
				t.Errorf("%s: archive access %q, want one exactly when it sends checkpoint jobs", name, access)
			}
			if got, ok := vars[envnames.ArchiveAccess]; ok != (access != "") || (ok && got != access) {
				t.Errorf("%s: %s = %v (set %v), want %q", name, envnames.ArchiveAccess, got, ok, access)
			}
			bucket := access == archive.AccessReadWrite || access == archive.AccessRead
			if got, ok := vars[envnames.ArchiveBucket]; ok != bucket || (bucket && !same(got, ref(id))) {
				t.Errorf("%s: %s = %v (set %v), want set %v to the bucket", name, envnames.ArchiveBucket, got, ok, bucket)
			}
			if got, ok := vars[envnames.ArchiveSSE]; ok != bucket || (bucket && got != archive.SSES3) {
				t.Errorf("%s: %s = %v (set %v), want set %v to %s", name, envnames.ArchiveSSE, got, ok, bucket, archive.SSES3)
			}
			if got, ok := vars[envnames.ArchiveKMSKeyID]; ok {
				t.Errorf("%s: %s = %v, want unset with S3-managed keys", name, envnames.ArchiveKMSKeyID, got)
			}
		}
		if archiveAccess(routes.Sessions) != archive.AccessJobs || archiveAccess(routes.Sweep) != archive.AccessRead {
			t.Errorf("sessions %q, sweep %q: want %q and %q", archiveAccess(routes.Sessions), archiveAccess(routes.Sweep),
				archive.AccessJobs, archive.AccessRead)
		}
	})

	t.Run("Output", func(t *testing.T) {
		out, ok := s.doc.Outputs["ArchiveBucketName"]
		if !ok || !same(out.Value, ref(id)) || out.Description == "" {
			t.Errorf("ArchiveBucketName output: %+v (present %v), want the bucket's name, described", out, ok)
		}
	})
}

// TestArchiveBucketKMS: with ArchiveEncryptionKMS the stack creates a
// rotated key kept with the stack, the bucket encrypts with it through a
// Bucket Key, the archive users (only) may make and decrypt data keys of
// that key, and get aws:kms and the key's ARN in their environment; the
// expiry follows ArchiveExpirationDays; cdk-nag finds nothing new.
func TestArchiveBucketKMS(t *testing.T) {
	s := MustSynth(t, &SandmanStackProps{ArchiveEncryption: ArchiveEncryptionKMS, ArchiveExpirationDays: 30})
	if len(s.errors) != 0 || len(s.warnings) != 0 {
		t.Errorf("cdk-nag: %d errors, %d warnings, want none:\n%s%s", len(s.errors), len(s.warnings), messages(s.errors), messages(s.warnings))
	}
	keyID, id := s.logicalID(t, "ArchiveKey"), s.logicalID(t, "ArchiveBucket")
	key := s.resource(t, keyID, "AWS::KMS::Key")
	if got := prop(key, "EnableKeyRotation"); got != true {
		t.Errorf("EnableKeyRotation: got %v, want true", got)
	}
	if key.DeletionPolicy != "Retain" {
		t.Errorf("key DeletionPolicy %q, want Retain (the archives it encrypts outlive the stack)", key.DeletionPolicy)
	}
	bucket := s.resource(t, id, "AWS::S3::Bucket")
	wantSSE := map[string]any{"ServerSideEncryptionConfiguration": []any{map[string]any{
		"BucketKeyEnabled":              true,
		"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": archive.SSEKMS, "KMSMasterKeyID": getAtt(keyID, "Arn")},
	}}}
	if got := prop(bucket, "BucketEncryption"); !same(got, wantSSE) {
		t.Errorf("BucketEncryption: got %s, want %s", canonical(got), canonical(wantSSE))
	}
	rules := canonical(prop(bucket, "LifecycleConfiguration"))
	if !strings.Contains(rules, `"ExpirationInDays": 30`) {
		t.Errorf("LifecycleConfiguration: got %s, want archives expiring after 30 days", rules)
	}
	keyArn := canonical(getAtt(keyID, "Arn"))
	got := archiveGrants(t, s)
	for _, name := range routes.Functions {
		want := map[string]bool{}
		switch archiveAccess(name) {
		case archive.AccessReadWrite:
			want = map[string]bool{"kms:GenerateDataKey": true, "kms:Decrypt": true}
		case archive.AccessRead:
			want = map[string]bool{"kms:Decrypt": true}
		}
		for _, a := range archiveKeyActions {
			if r, ok := got[name][a]; ok != want[a] || (ok && !same(r, []string{keyArn})) {
				t.Errorf("%s: %s on %v (granted %v), want granted %v on the archive key only", name, a, r, ok, want[a])
			}
		}
		for a := range got[name] {
			if strings.HasPrefix(a, "kms:") && !slices.Contains(archiveKeyActions, a) {
				t.Errorf("%s may %s, want only %v", name, a, archiveKeyActions)
			}
		}
		vars := functionEnv(t, s, name)
		if len(want) > 0 && (vars[envnames.ArchiveSSE] != archive.SSEKMS || !same(vars[envnames.ArchiveKMSKeyID], getAtt(keyID, "Arn"))) {
			t.Errorf("%s: %s = %v, %s = %v; want %s and the key's ARN", name, envnames.ArchiveSSE, vars[envnames.ArchiveSSE],
				envnames.ArchiveKMSKeyID, canonical(vars[envnames.ArchiveKMSKeyID]), archive.SSEKMS)
		}
	}
}

// TestArchiveSettingsRefused: an archive encryption or expiry synthesis
// cannot use is an error annotation naming it.
func TestArchiveSettingsRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props SandmanStackProps
		want  string
	}{
		{"Encryption", SandmanStackProps{ArchiveEncryption: "dsse"}, `archive encryption "dsse"`},
		{"Expiration", SandmanStackProps{ArchiveExpirationDays: 4000}, "archive expiration of 4000 days"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := checkArchive(tc.props.withDefaults()); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("checkArchive = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if err := checkArchive((&SandmanStackProps{}).withDefaults()); err != nil {
		t.Errorf("checkArchive(defaults) = %v, want nil", err)
	}
}
