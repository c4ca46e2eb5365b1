package archive

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// DefaultExcludes returns the patterns an archive of a workspace leaves out
// unless told otherwise: caches a tool rebuilds by itself (npm's, Next.js's,
// Python's bytecode and pytest's), and the temporary files git writes while
// it builds a pack.
func DefaultExcludes() []string {
	return []string{
		"node_modules/.cache",
		".git/objects/pack/tmp*",
		".next/cache",
		"__pycache__",
		".pytest_cache",
	}
}

// Excludes is a validated list of exclude patterns, matched the way GNU tar
// matches --exclude with --wildcards --no-anchored --no-wildcards-match-slash
// (the options TarCommand passes), so that PackTar and the tar command
// leave out the same members.
//
// The rule: every member is named "./<path relative to the folder>". A
// pattern excludes a member when it matches that whole name, or the part
// of it after any '/': "node_modules/.cache" excludes ./node_modules/.cache
// and ./web/node_modules/.cache; a pattern that starts with "./" only
// matches from the folder's top ("./build" excludes ./build, not
// ./web/build). '*' matches any run of characters and '?' any one
// character, '[...]' a class, '\' escapes the next one; none of them
// matches '/', so a pattern matches as many path components as it has.
// Leading dots are not special ('*' matches ".cache"). An excluded folder is
// left out with everything under it.
//
// Patterns are refused (see ParseExcludes) when empty, absolute, ending in
// '/', holding an empty or ".." component, malformed, or matching the
// folder itself (".", "*").
type Excludes struct {
	patterns [][]string // each pattern split into its components
	raw      []string
}

// ErrBadPattern is the error ParseExcludes returns (wrapped) for a pattern
// it refuses.
var ErrBadPattern = errors.New("bad exclude pattern")

// ParseExcludes validates patterns (the rule at Excludes) and returns them
// ready to match. No patterns: nothing is excluded. Errors wrap
// ErrBadPattern and name the pattern.
func ParseExcludes(patterns []string) (Excludes, error) {
	ex := Excludes{raw: append([]string(nil), patterns...)}
	for _, p := range patterns {
		if err := checkPattern(p); err != nil {
			return Excludes{}, fmt.Errorf("%w %q: %s", ErrBadPattern, p, err)
		}
		ex.patterns = append(ex.patterns, strings.Split(p, "/"))
	}
	return ex, nil
}

// MustExcludes is ParseExcludes for patterns known to be valid, such as
// DefaultExcludes; it panics on a bad pattern.
func MustExcludes(patterns ...string) Excludes {
	ex, err := ParseExcludes(patterns)
	if err != nil {
		panic(err)
	}
	return ex
}

func checkPattern(p string) error {
	switch {
	case p == "":
		return errors.New("empty")
	case strings.HasPrefix(p, "/"):
		return errors.New(`absolute; members are named "./…", so anchor a pattern with "./"`)
	case strings.HasSuffix(p, "/"):
		return errors.New("ends in '/', which matches nothing; drop the slash")
	case strings.ContainsRune(p, 0):
		return errors.New("holds a NUL byte")
	}
	for i, c := range strings.Split(p, "/") {
		switch {
		case c == "":
			return errors.New("has an empty component ('//')")
		case c == "..":
			return errors.New("has a '..' component, which no member has")
		case c == "." && i > 0:
			return errors.New("has a '.' component after the first, which no member has")
		}
		if _, err := path.Match(c, ""); err != nil {
			return err
		}
	}
	if matchName(strings.Split(p, "/"), ".") {
		return errors.New("matches the folder itself")
	}
	return nil
}

// Patterns returns the patterns as given.
func (ex Excludes) Patterns() []string { return append([]string(nil), ex.raw...) }

// Match reports whether the member at rel, a slash-separated path relative
// to the folder ("src/app.js"; "" or "." is the folder itself, never
// excluded), is excluded by itself. A member under an excluded folder is
// excluded too, but Match looks at rel alone: walkers skip excluded
// folders whole.
func (ex Excludes) Match(rel string) bool {
	if rel == "" || rel == "." || len(ex.patterns) == 0 {
		return false
	}
	name := "./" + rel
	for _, p := range ex.patterns {
		if matchName(p, name) {
			return true
		}
	}
	return false
}

// matchName reports whether pattern p (split into components) matches
// name or the part of name after any '/', as GNU tar's unanchored
// exclusion does.
func matchName(p []string, name string) bool {
	if matchComponents(p, name) {
		return true
	}
	for i := 0; i < len(name); i++ {
		if name[i] == '/' && i+1 < len(name) && name[i+1] != '/' {
			if matchComponents(p, name[i+1:]) {
				return true
			}
		}
	}
	return false
}

// matchComponents matches p against name component by component: no
// wildcard crosses a '/', as with fnmatch's FNM_PATHNAME (path.Match alone
// would let "[^x]" match '/').
func matchComponents(p []string, name string) bool {
	if strings.Count(name, "/")+1 != len(p) {
		return false
	}
	for i, c := range strings.Split(name, "/") {
		if ok, _ := path.Match(p[i], c); !ok {
			return false
		}
	}
	return true
}
