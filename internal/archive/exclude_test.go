package archive

import (
	"errors"
	"testing"
)

func TestExcludesMatch(t *testing.T) {
	ex := MustExcludes("node_modules/.cache", ".git/objects/pack/tmp*", "./build", "*.log", "a?c", "[^x]y")
	for _, tc := range []struct {
		rel  string
		want bool
	}{
		{"node_modules/.cache", true},
		{"web/node_modules/.cache", true}, // unanchored: after any '/'
		{"node_modules/.cache/x", false},  // Match looks at the member alone; walkers skip the folder
		{"node_modules", false},
		{".git/objects/pack/tmp_pack_123", true},
		{".git/objects/pack/pack-1.pack", false},
		{"build", true},
		{"web/build", false}, // "./" anchors at the top
		{"app.log", true},
		{"logs/app.log", true},
		{"logs/app.log.1", false},
		{"abc", true},
		{"a/c", false}, // '?' never matches '/'
		{"ay", true},
		{"/y", false}, // a class never matches '/'
		{".", false},  // the folder itself
		{"", false},
	} {
		if got := ex.Match(tc.rel); got != tc.want {
			t.Errorf("Match(%q) = %v, want %v", tc.rel, got, tc.want)
		}
	}
	if got := (Excludes{}).Match("anything"); got {
		t.Errorf("no patterns matched %q", "anything")
	}
}

func TestParseExcludesRefuses(t *testing.T) {
	for _, p := range []string{"", "/abs", "dir/", "a//b", "a/../b", "..", "a/./b", "[", ".", "./", "*", "?"} {
		if _, err := ParseExcludes([]string{p}); !errors.Is(err, ErrBadPattern) {
			t.Errorf("ParseExcludes(%q) = %v, want ErrBadPattern", p, err)
		}
	}
	if _, err := ParseExcludes(DefaultExcludes()); err != nil {
		t.Errorf("DefaultExcludes: %v", err)
	}
	if got, want := MustExcludes("a", "b").Patterns(), []string{"a", "b"}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Patterns = %q, want %q", got, want)
	}
}
