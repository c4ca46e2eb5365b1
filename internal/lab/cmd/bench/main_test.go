package main

import (
	"strings"
	"testing"
)

func TestShellJoin(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"Plain", []string{"-out", "bench-results/"}, "-out bench-results/"},
		{"Spaces", []string{"-command", "make bench"}, "-command 'make bench'"},
		{"Quote", []string{"it's"}, `'it'\''s'`},
		{"Empty", []string{""}, "''"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := shellJoin(c.args); got != c.want {
				t.Errorf("shellJoin(%q) = %q, want %q", c.args, got, c.want)
			}
		})
	}
}

func TestDemoteHeadings(t *testing.T) {
	got := demoteHeadings("## Cost\n\ntext # not a heading\n### Method\n")
	if want := "### Cost\n\ntext # not a heading\n#### Method\n"; got != want {
		t.Errorf("demoteHeadings = %q, want %q", got, want)
	}
}

func TestCostReport(t *testing.T) {
	sec, err := costReport()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sec.Markdown, "### ") {
		t.Errorf("cost section starts %q, want a level-3 heading under the report's own", firstLine(sec.Markdown))
	}
	if sec.Raw == nil || !strings.Contains(sec.Note, "costsim.DefaultConfig()") {
		t.Errorf("cost section raw %v note %q, want the replay's report and how it was made", sec.Raw != nil, sec.Note)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
