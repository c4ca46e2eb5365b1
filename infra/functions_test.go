package infra

import (
	"slices"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/sandmanhq/sandman/internal/routes"
)

// TestSweepUnreserved: no function reserves concurrency, so the stack
// creates on accounts at the new-account concurrency quota;
// the sweep is safe under overlap instead.
func TestSweepUnreserved(t *testing.T) {
	s := MustDefaultStack(t)
	for id, fn := range s.ofType("AWS::Lambda::Function") {
		if v, ok := fn.Properties["ReservedConcurrentExecutions"]; ok {
			t.Errorf("function %s reserves concurrency %v", id, v)
		}
	}
}

// TestSystemLogsKeepStartReport: the system log level keeps Lambda's START
// and REPORT lines (duration, memory, init), which WARN drops.
func TestSystemLogsKeepStartReport(t *testing.T) {
	s := MustDefaultStack(t)
	for id, fn := range s.ofType("AWS::Lambda::Function") {
		cfg, _ := fn.Properties["LoggingConfig"].(map[string]any)
		if got := cfg["SystemLogLevel"]; got != "INFO" && got != "DEBUG" {
			t.Errorf("function %s: SystemLogLevel %v, want INFO (START/REPORT kept)", id, got)
		}
	}
}

// deployedFunctionIDs are the construct ids every function was deployed
// under, by its name today: the three renamed functions keep theirs.
var deployedFunctionIDs = map[string]string{
	routes.Sessions:   "SessionsFunction",
	routes.Status:     "StatusFunction",
	routes.Resume:     "ResumeFunction",
	routes.Pause:      "SnapshotFunction",
	routes.Reconnect:  "ReconnectFunction",
	routes.Webhook:    "WebhookFunction",
	routes.Sweep:      "IdlepauseFunction",
	routes.Publisher:  "PublisherFunction",
	routes.Timer:      "PauserFunction",
	routes.Readiness:  "ReadinessFunction",
	routes.Channel:    "ChannelFunction",
	routes.Notifier:   "NotifierFunction",
	routes.Deliver:    "DeliverFunction",
	routes.Checkpoint: "CheckpointFunction",
}

// deployedLogicalIDs are logical ids of the deployed template (`make synth`
// before the functions were renamed) that a renamed function's construct
// id decides: every function's AWS::Lambda::Function, and each resource
// built for the three renamed functions whose id does not also carry the
// stack's name (those were compared on `make synth`'s template when the
// functions were renamed: no logical id lost).
var deployedLogicalIDs = []string{
	"SessionsFunction525B54A5", "StatusFunction598A4497", "ResumeFunction72167BBB",
	"SnapshotFunction36B61B8A", "ReconnectFunction5873A08F", "WebhookFunction59DCB58D",
	"IdlepauseFunctionDEC9A5A6", "PublisherFunctionBEE71BA1", "PauserFunction56A6FE4E",
	"ReadinessFunction474C47D5", "ChannelFunction0DAE5BB6", "NotifierFunctionEB33F81B",
	"DeliverFunction062DB935",
	"CheckpointFunctionE37CEBEF", // added with checkpoints, under its own name

	"SnapshotFunctionRole0AED36D2", "SnapshotFunctionRoleDefaultPolicy8EE26609", "SnapshotFunctionLogs52599605",
	"SnapshotFunctionErrorsAlarm37B5A715", "SnapshotFunctionThrottlesAlarm60D975EF", "SnapshotFunctionErrorLogsFilter41F262D7",
	"HttpApiPOSTv1sessionsidsnapshotSnapshotFunctionIntegrationAD7AED64",
	"HttpApiPOSTv1sessionsidsnapshotSnapshotFunctionIntegrationPermissionC759B70E",

	"IdlepauseFunctionRoleC236725A", "IdlepauseFunctionRoleDefaultPolicy04474E9D", "IdlepauseFunctionLogs177C0765",
	"IdlepauseFunctionErrorsAlarm4C468063", "IdlepauseFunctionThrottlesAlarmCA3D0246", "IdlepauseFunctionErrorLogsFilter0CA25515",
	"IdlepauseFunctionEventInvokeConfig9CB7FE9D",

	"PauserFunctionRole80F24A6C", "PauserFunctionRoleDefaultPolicy057D4C49", "PauserFunctionLogs71803FF4",
	"PauserFunctionErrorsAlarm1AB3A0E4", "PauserFunctionThrottlesAlarm656A7455", "PauserFunctionErrorLogsFilter882387AB",
}

// TestFunctionConstructIDsPinned: functionConstructIDs pins every function
// of routes.Functions to the construct id it was deployed under, and the
// synthesized stack's resources keep the logical ids of the deployed
// template, so renaming a function replaces nothing.
func TestFunctionConstructIDsPinned(t *testing.T) {
	for _, name := range routes.Functions {
		if got, want := constructID(name), deployedFunctionIDs[name]; got != want || want == "" {
			t.Errorf("constructID(%q) = %q, want the deployed %q", name, got, want)
		}
	}
	if got, want := len(functionConstructIDs), len(routes.Functions); got != want {
		t.Errorf("functionConstructIDs has %d rows, want one per function (%d)", got, want)
	}
	s := MustDefaultStack(t)
	for _, id := range deployedLogicalIDs {
		if _, ok := s.doc.Resources[id]; !ok {
			t.Errorf("the deployed resource %s is not in the template: CloudFormation would replace it", id)
		}
	}
	for name, id := range deployedFunctionIDs {
		if got := s.functionID(t, name); !slices.Contains(deployedLogicalIDs, got) {
			t.Errorf("function %s: logical id %s, want one of the deployed template's (%s…)", name, got, id)
		}
	}
}

// TestUnpinnedFunctionRefused: a function of routes.Functions without a
// pinned construct id fails synthesis with an error naming it.
func TestUnpinnedFunctionRefused(t *testing.T) {
	id := functionConstructIDs[routes.Deliver]
	delete(functionConstructIDs, routes.Deliver)
	t.Cleanup(func() { functionConstructIDs[routes.Deliver] = id })

	s := MustSynth(t, nil)
	found := mustAnnotations(t, assertions.Annotations_FromStack(s.stack).FindError(jsii.String("*"),
		assertions.Match_StringLikeRegexp(jsii.String("infra: function "+routes.Deliver+" .*no pinned construct id.*"))))
	if len(found) != 1 {
		t.Errorf("a stack without %s's construct id: %d error annotations naming it, want 1", routes.Deliver, len(found))
	}
}
