package infra

import (
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/sandmanhq/sandman/internal/routes"
)

// messages returns the annotations' paths and first lines, one per line.
func messages(list []annotation) string {
	var b strings.Builder
	for _, a := range list {
		b.WriteString(a.ID + ": " + strings.SplitN(strings.TrimSpace(a.Text()), "\n", 2)[0] + "\n")
	}
	return b.String()
}

func TestNag(t *testing.T) {
	s := MustDefaultStack(t)

	t.Run("NoErrors", func(t *testing.T) {
		if got := len(s.errors); got != 0 {
			t.Errorf("cdk-nag AwsSolutions errors: got %d, want 0:\n%s", got, messages(s.errors))
		}
	})

	t.Run("NoWarnings", func(t *testing.T) {
		t.Logf("cdk-nag AwsSolutions warnings: %d", len(s.warnings))
		if got := len(s.warnings); got != 0 {
			t.Errorf("cdk-nag AwsSolutions warnings: got %d, want 0:\n%s", got, messages(s.warnings))
		}
	})

	// With LogIgnores every suppressed finding is an info annotation: the
	// accepted findings are exactly these, so a new one cannot hide behind
	// an existing suppression.
	t.Run("SuppressedFindings", func(t *testing.T) {
		suppressed := regexp.MustCompile(`(AwsSolutions-[A-Za-z0-9]+) was triggered but suppressed`)
		got := make(map[string]int)
		for _, m := range s.infos {
			if match := suppressed.FindStringSubmatch(m.Text()); match != nil {
				got[match[1]]++
			}
		}
		want := map[string]int{
			// X-Ray per function role (table indexes are named); the
			// publisher's ListStreams shares X-Ray's "*".
			// publisher's ListStreams shares X-Ray's "*"; the channel's and
			// the notifier's ManageConnections on the stage's @connections.
			// and the archive users' and readers' object access in the archive bucket.
			"AwsSolutions-IAM5": len(routes.Functions) + len(pushers) + len(archiveUsers) + len(archiveReaders),
			// the HTTP routes and the WebSocket API's three.
			"AwsSolutions-APIG4": len(routes.Table) + 3,
			// the schedule's, the stream's and the notifier's DLQ; the timer
			// queue's DLQ is named in its queue's redrive policy, so SQS3
			// does not fire.
			"AwsSolutions-SQS3": 3,
			// the client-token key set, rotated by hand (two keys).
			"AwsSolutions-SMG4": 1,
			// the WebSocket stage's access logs, off until the account's
			// CloudWatch role is provided (sandman:webSocketAccessLogs).
			"AwsSolutions-APIG1": 1,
			// the archive bucket's server access logs.
			"AwsSolutions-S1": 1,
		}
		if !same(got, want) {
			t.Errorf("suppressed findings by rule: got %v, want %v\n%s", got, want, messages(s.infos))
		}
	})

	t.Run("EverySuppressionHasAReason", func(t *testing.T) {
		known := make(map[string]bool)
		for _, sup := range NagSuppressions() {
			known[sup.RuleID] = true
			if len(sup.Reason) < 40 {
				t.Errorf("suppression %s: reason %q is too short to explain anything", sup.RuleID, sup.Reason)
			}
		}
		n := 0
		for id, r := range s.doc.Resources {
			meta, _ := r.Metadata["cdk_nag"].(map[string]any)
			rules, _ := meta["rules_to_suppress"].([]any)
			for _, item := range rules {
				n++
				rule := item.(map[string]any)
				if reason, _ := rule["reason"].(string); len(reason) < 40 {
					t.Errorf("resource %s: suppression %v has reason %q", id, rule["id"], reason)
				}
				if id, _ := rule["id"].(string); !known[id] {
					t.Errorf("resource %s: suppression of %s is not in NagSuppressions()", id, id)
				}
			}
		}
		if n == 0 {
			t.Error("no suppressions found in the template metadata")
		}
	})

	// The checks must be able to fail: an unencrypted queue that is not a DLQ
	// and allows plain HTTP is an error under the same pack.
	t.Run("ChecksCanFail", func(t *testing.T) {
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
		stack := awscdk.NewStack(app, jsii.String("Bad"), nil)
		awssqs.NewQueue(stack, jsii.String("Queue"), &awssqs.QueueProps{Encryption: awssqs.QueueEncryption_UNENCRYPTED})
		AddNagChecks(app)
		errs := assertions.Annotations_FromStack(stack).FindError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*")))
		text := messages(mustAnnotations(t, errs))
		for _, rule := range []string{"AwsSolutions-SQS2", "AwsSolutions-SQS3", "AwsSolutions-SQS4"} {
			if !strings.Contains(text, rule) {
				t.Errorf("errors: got\n%s\nwant %s", text, rule)
			}
		}
	})
}
