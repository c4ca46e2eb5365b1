package envnames_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The documentation every setting must appear in, relative to the module
// root, and what counts as a name of ours.
const configurationDoc = "docs/CONFIGURATION.md"

var (
	envName    = regexp.MustCompile(`^(SANDMAN|DYNAMODB)_[A-Z0-9_]+$`)
	contextKey = regexp.MustCompile(`^sandman:[A-Za-z]+$`)
	// docName finds names in the document's text; \b keeps SANDMAN_TABLE
	// from matching inside a longer name.
	docName = regexp.MustCompile(`\b(SANDMAN|DYNAMODB)_[A-Z0-9_]+\b`)
	docKey  = regexp.MustCompile(`sandman:[A-Za-z]+`)
)

// TestConfigurationDocListsEverySetting fails when a setting the code reads
// is missing from docs/CONFIGURATION.md: every string constant of
// internal/envnames that is a variable name, every such string literal in a
// Go file of the module outside the tests (os.Getenv("…"), getenv("…"),
// constants of other packages), every literal passed to os.Getenv or
// os.LookupEnv in a test, and every CDK context key of infra, of the
// provider adapters' declarations (internal/provider) and of cdk.json.
// The message names each missing setting and where it is read.
func TestConfigurationDocListsEverySetting(t *testing.T) {
	root := moduleRoot(t)
	doc := readDoc(t, root)
	documented := setOf(docName.FindAllString(doc, -1))
	documentedKeys := setOf(docKey.FindAllString(doc, -1))

	read := readSettings(t, root)
	var missing []string
	for name, where := range read.env {
		if !documented[name] {
			missing = append(missing, name+" (named at "+strings.Join(where, ", ")+")")
		}
	}
	for key, where := range read.keys {
		if !documentedKeys[key] {
			missing = append(missing, key+" (named at "+strings.Join(where, ", ")+")")
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		t.Errorf("%s does not name %d setting(s) the code reads; add a row (name | default | meaning | who reads it) for each:\n  %s",
			configurationDoc, len(missing), strings.Join(missing, "\n  "))
	}
}

// TestConfigurationDocNamesNothingUnread fails when docs/CONFIGURATION.md
// names a SANDMAN_ variable or a sandman: context key that nothing reads:
// no Go file of the module, script, Makefile or browser test mentions it.
// A renamed or removed setting must leave the document too.
func TestConfigurationDocNamesNothingUnread(t *testing.T) {
	root := moduleRoot(t)
	doc := readDoc(t, root)
	read := readSettings(t, root)
	mentioned := read.mentioned
	for _, f := range nonGoReaders(t, root) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range docName.FindAllString(string(b), -1) {
			mentioned[n] = true
		}
	}
	var unread []string
	for n := range setOf(docName.FindAllString(doc, -1)) {
		if strings.HasPrefix(n, "SANDMAN_") && !mentioned[n] && read.env[n] == nil {
			unread = append(unread, n)
		}
	}
	for k := range setOf(docKey.FindAllString(doc, -1)) {
		if read.keys[k] == nil {
			unread = append(unread, k)
		}
	}
	if len(unread) > 0 {
		sort.Strings(unread)
		t.Errorf("%s names %d setting(s) that no code, script or Makefile reads; remove them or fix their spelling:\n  %s",
			configurationDoc, len(unread), strings.Join(unread, "\n  "))
	}
}

// settings are the names the module's Go code reads, each with where
// ("path:line", relative to the module root), and every name of ours any
// Go file mentions as a string, tests included.
type settings struct {
	env       map[string][]string
	keys      map[string][]string
	mentioned map[string]bool
}

func readSettings(t *testing.T, root string) settings {
	t.Helper()
	s := settings{env: map[string][]string{}, keys: map[string][]string{}, mentioned: map[string]bool{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		isTest := strings.HasSuffix(path, "_test.go")
		at := func(n ast.Node) string { return rel + ":" + strconv.Itoa(fset.Position(n.Pos()).Line) }
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				v, ok := stringValue(n)
				if !ok {
					return true
				}
				if envName.MatchString(v) {
					s.mentioned[v] = true
					if !isTest {
						s.env[v] = append(s.env[v], at(n))
					}
				}
				if !isTest && contextKey.MatchString(v) && (strings.HasPrefix(rel, "infra/") || strings.HasPrefix(rel, "internal/provider/")) {
					s.keys[v] = append(s.keys[v], at(n))
				}
			case *ast.CallExpr:
				// A test's own knobs: os.Getenv("SANDMAN_…") in a test file.
				if !isTest || len(n.Args) == 0 || !isEnvRead(n.Fun) {
					return true
				}
				if lit, ok := n.Args[0].(*ast.BasicLit); ok {
					if v, ok := stringValue(lit); ok && envName.MatchString(v) {
						s.env[v] = append(s.env[v], at(lit))
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.env) == 0 || len(s.keys) == 0 {
		t.Fatalf("found %d variables and %d context keys in the module: the scan is broken", len(s.env), len(s.keys))
	}
	// cdk.json's context holds keys the stack reads; a key there that infra
	// does not read is caught by the second test through the document.
	if b, err := os.ReadFile(filepath.Join(root, "cdk.json")); err == nil {
		for _, k := range docKey.FindAllString(string(b), -1) {
			if s.keys[k] == nil {
				s.keys[k] = []string{"cdk.json"}
			}
		}
	}
	return s
}

// isEnvRead reports whether fun is os.Getenv or os.LookupEnv.
func isEnvRead(fun ast.Expr) bool {
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "os" && (sel.Sel.Name == "Getenv" || sel.Sel.Name == "LookupEnv")
}

func stringValue(lit *ast.BasicLit) (string, bool) {
	if lit.Kind != token.STRING {
		return "", false
	}
	v, err := strconv.Unquote(lit.Value)
	return v, err == nil
}

// skipDir reports whether a folder holds no code of ours: hidden folders
// (.git, .tools, .sandman), installed packages and build output.
func skipDir(name string) bool {
	return strings.HasPrefix(name, ".") || name == "node_modules" || name == "cdk.out" || name == "build" || name == "testdata"
}

// nonGoReaders lists the files besides Go code that read settings: the
// scripts, the Makefile and the browser tests (.mjs).
func nonGoReaders(t *testing.T, root string) []string {
	t.Helper()
	files := []string{filepath.Join(root, "Makefile")}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "cdk.out" || d.Name() == "build") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if strings.HasPrefix(filepath.ToSlash(rel), "scripts/") || strings.HasSuffix(path, ".mjs") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func readDoc(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, configurationDoc))
	if err != nil {
		t.Fatalf("%s: %v (it lists every environment variable and CDK context key)", configurationDoc, err)
	}
	return string(b)
}

// moduleRoot is the folder holding go.mod, above this package's folder.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}

func setOf(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
