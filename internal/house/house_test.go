// Package house holds the house test: the rules of which package may import
// which (docs/DEVELOPMENT.md "Layout"), checked over `go list -deps -json`
// of the module, so an arrow that points up or sideways fails CI. It has no
// code of its own.
package house

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A component is one adapter or one edge: a name and the package patterns
// it owns. A pattern is a package path relative to the module root
// ("internal/dynamo"), or a tree ("internal/provider/e2b/..." is the
// package and every package below it).
type component struct {
	name     string
	patterns []string
}

// adapters are the adapters, by kind. Each implements a port of the domain
// (lifecycle.Provider, lifecycle.Store, ...) with one technology; none may
// import another, of its kind or of another kind. Shared pieces live in a
// kit beside them (internal/provider/internal/..., internal/sqskit,
// internal/provider/hookwire, internal/dynamo/tabledef), never in an adapter.
var adapters = slices.Concat(
	// the providers
	[]component{
		{"e2b", []string{"internal/provider/e2b/..."}},
		{"daytona", []string{"internal/provider/daytona/..."}},
		{"vercel", []string{"internal/provider/vercel/..."}},
		{"local", []string{"internal/provider/local/..."}},
		{"fake", []string{"internal/provider/fake/..."}},
	},
	// the stores
	[]component{
		{"dynamo", []string{"internal/dynamo", "internal/dynamo/dynamotest"}},
		{"memstore", []string{"internal/lifecycle/memstore"}},
		{"delivery/dynamostore", []string{"internal/delivery/dynamostore"}},
		{"delivery/memstore", []string{"internal/delivery/memstore"}},
		{"governor/dynamostore", []string{"internal/governor/dynamostore"}},
	},
	// the outbox publishers
	[]component{
		{"outbox/eventbridge", []string{"internal/outbox/eventbridge"}},
		{"outbox/jsonl", []string{"internal/outbox/jsonl"}},
	},
	// the queues and timers
	[]component{
		{"timer/sqstimer", []string{"internal/timer/sqstimer"}},
		{"timer/localtimer", []string{"internal/timer/localtimer"}},
		{"readiness/sqsjobs", []string{"internal/readiness/sqsjobs"}},
		{"sweep/sqsrefill", []string{"internal/sweep/sqsrefill"}},
		{"delivery/sqsqueue", []string{"internal/delivery/sqsqueue"}},
		{"checkpoint/sqscheckpoint", []string{"internal/checkpoint/sqscheckpoint"}},
	},
	// the channel's pushers
	[]component{
		{"channel/apigwmgmt", []string{"internal/channel/apigwmgmt"}},
	},
)

// edges are the packages that take an outside event (an HTTP request, a
// WebSocket frame, a queue's batch, the table's stream) and call the
// service. None may import another: what two edges share lives below both
// (internal/httpapi for the HTTP and WebSocket edges, internal/sqskit for
// the SQS ones).
var edges = []component{
	{"apigw", []string{"internal/apigw"}},
	{"providerhook", []string{"internal/providerhook"}},
	{"channel", []string{"internal/channel"}},
	{"outbox", []string{"internal/outbox"}},
	{"timer/sqstimer", []string{"internal/timer/sqstimer"}},
	{"readiness/sqsjobs", []string{"internal/readiness/sqsjobs"}},
	{"sweep/sqsrefill", []string{"internal/sweep/sqsrefill"}},
	{"delivery/sqsqueue", []string{"internal/delivery/sqsqueue"}},
	{"checkpoint/sqscheckpoint", []string{"internal/checkpoint/sqscheckpoint"}},
}

// kits are what adapters or edges share: they sit below them all and import
// none of them.
var kits = []string{
	"internal/httpapi",
	"internal/sqskit",
	"internal/clienttoken",
	"internal/calllimit",
	"internal/governor",
	"internal/provider/internal/...",
	"internal/provider/hookwire/...",
	"internal/provider/registry",
	"internal/dynamo/tabledef",
}

// lab is what only measures (benchmarks, replays, capacity models): no
// product package may import it.
const lab = "internal/lab/..."

// A rule is one line of the house's rules. Either Apart (no component of
// the group depends on another of the group), or From (and not Except)
// must not depend on Deny, or, with StdOnly, on anything outside the
// standard library. "Depends" is the transitive closure of the packages'
// non-test imports: an arrow through a third package counts.
type rule struct {
	Name    string
	Apart   []component
	From    []string
	Except  []string
	Deny    []string
	StdOnly bool
}

// rules are the house's rules, in one table.
var rules = []rule{
	{Name: "the domain imports only the standard library", From: []string{"internal/lifecycle"}, StdOnly: true},
	{Name: "an adapter imports no other adapter", Apart: adapters},
	{Name: "an edge imports no other edge", Apart: edges},
	{Name: "a kit imports no adapter and no edge", From: kits, Deny: slices.Concat(patternsOf(adapters), patternsOf(edges))},
	{Name: "product code imports no lab code", From: []string{"..."}, Except: []string{lab}, Deny: []string{lab}},
}

func patternsOf(cs []component) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.patterns...)
	}
	return out
}

// pkg is what `go list -deps -json` says of one package.
type pkg struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Module     *struct {
		Path string
		Main bool
	}
	Error *struct{ Err string }
}

// module is the import graph of one module: its own packages and all they
// depend on.
type module struct {
	path string
	pkgs map[string]*pkg
}

// load lists the module at dir (GOWORK=off: the module alone).
func load(dir string) (*module, error) {
	cmd := exec.Command("go", "list", "-deps", "-json", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps -json ./... in %s: %w: %s", dir, err, stderr.String())
	}
	m := &module{pkgs: map[string]*pkg{}}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		p := &pkg{}
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decode go list output: %w", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("package %s: %s", p.ImportPath, p.Error.Err)
		}
		m.pkgs[p.ImportPath] = p
		if p.Module != nil && p.Module.Main {
			m.path = p.Module.Path
		}
	}
	if m.path == "" {
		return nil, fmt.Errorf("go list in %s: no package of the main module", dir)
	}
	return m, nil
}

// rel returns the path of a package of the module relative to its root, and
// whether it is one.
func (m *module) rel(importPath string) (string, bool) {
	p, ok := m.pkgs[importPath]
	if !ok || p.Module == nil || !p.Module.Main {
		return "", false
	}
	if importPath == m.path {
		return ".", true
	}
	return strings.TrimPrefix(importPath, m.path+"/"), true
}

// matches reports whether the relative package path rel matches one of
// patterns.
func matches(rel string, patterns []string) bool {
	for _, pat := range patterns {
		switch tree, isTree := strings.CutSuffix(pat, "/..."); {
		case pat == "...":
			return true
		case isTree && (rel == tree || strings.HasPrefix(rel, tree+"/")):
			return true
		case rel == pat:
			return true
		}
	}
	return false
}

// firstPath returns the shortest import chain from `from` to a package bad
// accepts, or nil when there is none.
func (m *module) firstPath(from string, bad func(*pkg) bool) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		p := m.pkgs[cur]
		if p == nil {
			continue
		}
		for _, imp := range p.Imports {
			if _, seen := prev[imp]; seen {
				continue
			}
			prev[imp] = cur
			if q := m.pkgs[imp]; q != nil && bad(q) {
				var chain []string
				for at := imp; at != ""; at = prev[at] {
					chain = append(chain, at)
				}
				slices.Reverse(chain)
				return chain
			}
			queue = append(queue, imp)
		}
	}
	return nil
}

// check returns one line per broken rule and package: the rule and the
// import chain that breaks it.
func check(m *module, rules []rule) []string {
	var own []string
	for path := range m.pkgs {
		if _, ok := m.rel(path); ok {
			own = append(own, path)
		}
	}
	slices.Sort(own)
	var out []string
	report := func(r rule, chain []string) {
		short := make([]string, len(chain))
		for i, c := range chain {
			if rel, ok := m.rel(c); ok {
				short[i] = rel
			} else {
				short[i] = c
			}
		}
		out = append(out, fmt.Sprintf("%s: %s", r.Name, strings.Join(short, " → ")))
	}
	for _, r := range rules {
		for _, path := range own {
			rel, _ := m.rel(path)
			if r.Apart != nil {
				for _, c := range r.Apart {
					if !matches(rel, c.patterns) {
						continue
					}
					others := patternsOf(slices.DeleteFunc(slices.Clone(r.Apart), func(o component) bool {
						return o.name == c.name || matches(rel, o.patterns)
					}))
					if chain := m.firstPath(path, func(q *pkg) bool {
						qrel, ok := m.rel(q.ImportPath)
						return ok && !matches(qrel, c.patterns) && matches(qrel, others)
					}); chain != nil {
						report(r, chain)
					}
				}
				continue
			}
			if !matches(rel, r.From) || matches(rel, r.Except) {
				continue
			}
			if chain := m.firstPath(path, func(q *pkg) bool {
				if r.StdOnly {
					return !q.Standard
				}
				qrel, ok := m.rel(q.ImportPath)
				return ok && matches(qrel, r.Deny)
			}); chain != nil {
				report(r, chain)
			}
		}
	}
	return out
}

// TestHouseRules: the module's import graph keeps every rule of the table.
func TestHouseRules(t *testing.T) {
	if testing.Short() {
		t.Skip("go list -deps of the whole module")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	m, err := load(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range check(m, rules) {
		t.Error(line)
	}
}

// plant writes a module named example.com/house into dir: one package per
// key of pkgs (a path relative to the root), each blank-importing the
// packages of its value (module-relative paths "internal/...", or any
// other import path). It requires one module beside it, example.com/rate
// (package rate, standing for golang.org/x/time/rate), from a folder.
func plant(tb testing.TB, dir string, pkgs map[string][]string) {
	tb.Helper()
	files := map[string]string{
		"go.mod":       "module example.com/house\n\ngo 1.22\n\nrequire example.com/rate v0.0.0\n\nreplace example.com/rate => ./rate\n",
		"rate/go.mod":  "module example.com/rate\n\ngo 1.22\n",
		"rate/rate.go": "package rate\n",
	}
	for name, text := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	for rel, imports := range pkgs {
		var b strings.Builder
		fmt.Fprintf(&b, "package %s\n\n", filepath.Base(rel))
		for _, imp := range imports {
			if strings.HasPrefix(imp, "internal/") {
				imp = "example.com/house/" + imp
			}
			fmt.Fprintf(&b, "import _ %q\n", imp)
		}
		if err := os.MkdirAll(filepath.Join(dir, rel), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel, "p.go"), []byte(b.String()), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestHouseRulesCatchPlantedImports: the checker, run over a tiny module
// laid out as Sandman is, finds nothing in it as built, and names the rule
// and the import chain of each bad import planted in it.
func TestHouseRulesCatchPlantedImports(t *testing.T) {
	if testing.Short() {
		t.Skip("go list of a planted module")
	}
	clean := map[string][]string{
		"internal/lifecycle":                 {"fmt"},
		"internal/envnames":                  nil,
		"internal/httpapi":                   {"internal/lifecycle"},
		"internal/sqskit":                    {"internal/lifecycle"},
		"internal/apigw":                     {"internal/httpapi"},
		"internal/channel":                   {"internal/httpapi"},
		"internal/statusview":                {"internal/lifecycle"},
		"internal/sweep":                     {"internal/lifecycle"},
		"internal/dynamo":                    {"internal/lifecycle"},
		"internal/outbox/eventbridge":        {"internal/lifecycle"},
		"internal/provider/hookwire/e2bhook": {"internal/lifecycle"},
		"internal/provider/e2b":              {"internal/lifecycle", "internal/provider/hookwire/e2bhook"},
		"internal/provider/e2b/e2btest":      {"internal/provider/e2b"},
		"internal/provider/local":            {"internal/lifecycle", "internal/provider/hookwire/e2bhook"},
		"internal/lab/bench":                 {"internal/apigw", "internal/provider/local", "internal/provider/e2b"},
	}
	for _, tc := range []struct {
		name    string
		planted map[string][]string // packages replaced or added
		want    []string
	}{
		{"Clean", nil, nil},
		{"DomainImportsAModulePackage",
			map[string][]string{"internal/lifecycle": {"fmt", "internal/envnames"}},
			[]string{"the domain imports only the standard library: internal/lifecycle → internal/envnames"}},
		{"DomainImportsAnotherModule",
			map[string][]string{"internal/lifecycle": {"fmt", "example.com/rate"}},
			[]string{"the domain imports only the standard library: internal/lifecycle → example.com/rate"}},
		{"AdapterImportsAdapter",
			map[string][]string{"internal/provider/local": {"internal/lifecycle", "internal/provider/e2b"}},
			[]string{"an adapter imports no other adapter: internal/provider/local → internal/provider/e2b"}},
		{"AdapterImportsAnotherKindOfAdapter",
			map[string][]string{"internal/dynamo": {"internal/lifecycle", "internal/outbox/eventbridge"}},
			[]string{"an adapter imports no other adapter: internal/dynamo → internal/outbox/eventbridge"}},
		{"EdgeImportsEdgeThroughAThirdPackage",
			map[string][]string{"internal/statusview": {"internal/apigw"}, "internal/channel": {"internal/statusview"}},
			[]string{"an edge imports no other edge: internal/channel → internal/statusview → internal/apigw"}},
		{"KitImportsEdge",
			map[string][]string{"internal/sqskit": {"internal/channel"}},
			[]string{"a kit imports no adapter and no edge: internal/sqskit → internal/channel"}},
		{"ProductImportsLab",
			map[string][]string{"internal/sweep": {"internal/lifecycle", "internal/lab/bench"}},
			[]string{"product code imports no lab code: internal/sweep → internal/lab/bench"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			pkgs := maps.Clone(clean)
			maps.Copy(pkgs, tc.planted)
			plant(t, dir, pkgs)
			m, err := load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := check(m, rules), tc.want; !slices.Equal(got, want) {
				t.Errorf("check =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
