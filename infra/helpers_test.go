package infra

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/sandmanhq/sandman/internal/routes"
)

// TestMain stops the jsii kernel process after the tests, which also removes
// its temporary directory. Not under -race: jsii.Close races with the
// kernel's own cmd.Wait goroutine (jsii-runtime-go v1.127.0), so there the
// kernel ends when the test binary exits and closes its stdin. (The kernel
// starts during package initialization, so
// JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION must come from the caller's
// environment to silence Node 20's banner.)
func TestMain(m *testing.M) {
	code := m.Run()
	if !raceEnabled {
		jsii.Close()
	}
	os.Exit(code)
}

// MustFunctionsDir returns a temporary FunctionsDir holding a dummy
// `bootstrap` file per function of routes.Functions, so the stack synthesizes
// without `make build`.
func MustFunctionsDir(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	for _, name := range routes.Functions {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			tb.Fatalf("create function dir: %v", err)
		}
		if err := os.WriteFile(BootstrapPath(dir, name), []byte("dummy bootstrap of "+name+"\n"), 0o755); err != nil {
			tb.Fatalf("write bootstrap: %v", err)
		}
	}
	return dir
}

// cfnTemplate is the part of a CloudFormation template the tests read.
type cfnTemplate struct {
	Resources map[string]cfnResource `json:"Resources"`
	Outputs   map[string]cfnOutput   `json:"Outputs"`
}

// cfnResource is one template resource.
type cfnResource struct {
	Type                string         `json:"Type"`
	Properties          map[string]any `json:"Properties"`
	DeletionPolicy      string         `json:"DeletionPolicy"`
	UpdateReplacePolicy string         `json:"UpdateReplacePolicy"`
	Metadata            map[string]any `json:"Metadata"`
	DependsOn           any            `json:"DependsOn"` // a logical ID or a list of them
}

// cfnOutput is one template output.
type cfnOutput struct {
	Description string `json:"Description"`
	Value       any    `json:"Value"`
}

// synthesized is one stack synthesized with cdk-nag applied: its template
// (through the assertions API and decoded) and its cdk-nag annotations.
type synthesized struct {
	stack    awscdk.Stack
	template assertions.Template
	doc      cfnTemplate
	// errors, warnings and infos are the AwsSolutions-* annotations.
	errors, warnings, infos []annotation
}

// annotation is one synthesis message (cxapi.SynthesisMessage, decoded from
// its JSON form: the Go type is deprecated in favour of a package aws-cdk-go
// does not ship).
type annotation struct {
	// ID is the construct path, e.g. "/SandmanTest/HttpApi/...".
	ID    string `json:"id"`
	Level string `json:"level"`
	Entry struct {
		Type string `json:"type"`
		Data any    `json:"data"`
	} `json:"entry"`
}

// Text returns the annotation's message.
func (a annotation) Text() string {
	if s, ok := a.Entry.Data.(string); ok {
		return s
	}
	return canonical(a.Entry.Data)
}

// mustAnnotations decodes the result of an Annotations.Find* call.
func mustAnnotations(tb testing.TB, found any) []annotation {
	tb.Helper()
	raw, err := json.Marshal(found)
	if err != nil {
		tb.Fatalf("marshal annotations: %v", err)
	}
	var out []annotation
	if err := json.Unmarshal(raw, &out); err != nil {
		tb.Fatalf("decode annotations: %v", err)
	}
	return out
}

// MustSynth builds a fresh app holding NewSandmanStack(props) with the
// AwsSolutions checks (suppressed findings logged as info annotations) and
// synthesizes it. A props without FunctionsDir gets MustFunctionsDir.
func MustSynth(tb testing.TB, props *SandmanStackProps) *synthesized {
	tb.Helper()
	p := SandmanStackProps{}
	if props != nil {
		p = *props
	}
	if p.FunctionsDir == "" {
		p.FunctionsDir = MustFunctionsDir(tb)
	}
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(tb.TempDir())})
	stack := NewSandmanStack(app, "SandmanTest", &p)
	addNagChecks(app, true)

	s := &synthesized{stack: stack}
	annotations := assertions.Annotations_FromStack(stack)
	nagRule := assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))
	s.errors = mustAnnotations(tb, annotations.FindError(jsii.String("*"), nagRule))
	s.warnings = mustAnnotations(tb, annotations.FindWarning(jsii.String("*"), nagRule))
	s.infos = mustAnnotations(tb, annotations.FindInfo(jsii.String("*"), nagRule))

	s.template = assertions.Template_FromStack(stack, nil)
	raw, err := json.Marshal(s.template.ToJSON())
	if err != nil {
		tb.Fatalf("marshal template: %v", err)
	}
	if err := json.Unmarshal(raw, &s.doc); err != nil {
		tb.Fatalf("decode template: %v", err)
	}
	return s
}

var defaultStack struct {
	once sync.Once
	s    *synthesized
}

// MustDefaultStack returns the stack synthesized with default props, built
// once for the whole test binary (synthesis takes seconds).
func MustDefaultStack(tb testing.TB) *synthesized {
	tb.Helper()
	defaultStack.once.Do(func() { defaultStack.s = MustSynth(tb, nil) })
	if defaultStack.s == nil {
		tb.Fatal("the default stack failed to synthesize in an earlier test")
	}
	return defaultStack.s
}

// logicalID returns the logical ID of the CloudFormation resource of the
// construct at path (construct ids from the stack down; an L2 construct
// stands for its default child).
func (s *synthesized) logicalID(tb testing.TB, path ...string) string {
	tb.Helper()
	node := s.stack.Node()
	var child any
	for _, id := range path {
		c := node.TryFindChild(jsii.String(id))
		if c == nil {
			tb.Fatalf("no construct %q under %s", id, *node.Path())
		}
		child, node = c, c.Node()
	}
	if dc := node.DefaultChild(); dc != nil {
		child = dc
	}
	el, ok := child.(awscdk.CfnElement)
	if !ok {
		tb.Fatalf("construct %s is not a CloudFormation element (%T)", strings.Join(path, "/"), child)
	}
	return *s.stack.GetLogicalId(el)
}

// resource returns the resource with logical ID id and checks its type.
func (s *synthesized) resource(tb testing.TB, id, typ string) cfnResource {
	tb.Helper()
	r, ok := s.doc.Resources[id]
	if !ok {
		tb.Fatalf("no resource %s in the template", id)
	}
	if r.Type != typ {
		tb.Fatalf("resource %s: type %s, want %s", id, r.Type, typ)
	}
	return r
}

// ofType returns every resource of type typ by logical ID.
func (s *synthesized) ofType(typ string) map[string]cfnResource {
	out := make(map[string]cfnResource)
	for id, r := range s.doc.Resources {
		if r.Type == typ {
			out[id] = r
		}
	}
	return out
}

// functionID returns the logical ID of function name's AWS::Lambda::Function.
func (s *synthesized) functionID(tb testing.TB, name string) string {
	tb.Helper()
	return s.logicalID(tb, constructID(name))
}

// mustMatch runs a jsii assertion (which panics on a mismatch) and reports
// its failure as a test error.
func mustMatch(tb testing.TB, what string, assert func()) {
	tb.Helper()
	defer func() {
		if r := recover(); r != nil {
			tb.Errorf("%s: %v", what, r)
		}
	}()
	assert()
}

// ref and getAtt build CloudFormation intrinsic functions as they decode.
func ref(id string) any                  { return map[string]any{"Ref": id} }
func getAtt(id, attr string) any         { return map[string]any{"Fn::GetAtt": []any{id, attr}} }
func prop(r cfnResource, key string) any { return r.Properties[key] }

// canonical returns v as canonical JSON (map keys sorted) for comparison.
func canonical(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<unmarshalable %T: %v>", v, err)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", " "); err != nil {
		return string(b)
	}
	return buf.String()
}

// same reports whether got and want have the same JSON form.
func same(got, want any) bool { return canonical(got) == canonical(want) }

// strs returns a CloudFormation string-or-list value as a list.
func strs(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, item := range v {
			out = append(out, fmt.Sprint(item))
		}
		return out
	}
	return nil
}

// sorted returns a sorted copy of list.
func sorted(list []string) []string {
	out := append([]string(nil), list...)
	sort.Strings(out)
	return out
}

// keys returns the sorted keys of a set.
func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
