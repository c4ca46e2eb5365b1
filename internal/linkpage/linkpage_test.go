package linkpage

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestEveryAccentIsReadable: whatever accent a deployment names, the
// pages' accent reaches 4.5:1 on each of their backgrounds in light and
// dark mode, and the text on a button filled with it reaches 4.5:1 too.
func TestEveryAccentIsReadable(t *testing.T) {
	var accents []string
	for r := 0; r < 256; r += 51 {
		for g := 0; g < 256; g += 51 {
			for b := 0; b < 256; b += 51 {
				accents = append(accents, fmt.Sprintf("#%02x%02x%02x", r, g, b))
			}
		}
	}
	accents = append(accents, "#facc15", "#777", "#767676", "#fff", "#000", DefaultAccent, "")
	for _, a := range accents {
		th := Brand{Accent: a}.theme()
		for _, pair := range []struct {
			name   string
			fg     string
			bgs    []rgb
			onFill string
		}{{"light", th.Accent, lightBackgrounds, th.OnAccent}, {"dark", th.AccentDark, darkBackgrounds, th.OnAccentDark}} {
			c, err := parseHex(pair.fg)
			if err != nil {
				t.Fatalf("accent %q: %s theme colour %q: %v", a, pair.name, pair.fg, err)
			}
			for _, bg := range pair.bgs {
				if got := contrast(c, bg); got < minContrast {
					t.Errorf("accent %q, %s: %s on %s is %.2f:1, want ≥ %.1f", a, pair.name, pair.fg, bg.hex(), got, minContrast)
				}
			}
			on, _ := parseHex(pair.onFill)
			if got := contrast(on, c); got < minContrast {
				t.Errorf("accent %q, %s: button text %s on %s is %.2f:1, want ≥ %.1f", a, pair.name, pair.onFill, pair.fg, got, minContrast)
			}
		}
	}
}

// TestAReadableAccentIsKept: an accent that is already readable is used
// as the brand gave it.
func TestAReadableAccentIsKept(t *testing.T) {
	if got := (Brand{Accent: "#0f766e"}).theme().Accent; got != "#0f766e" {
		t.Errorf("light accent %s, want #0f766e as given", got)
	}
	if got := (Brand{Accent: "#facc15"}).theme().AccentDark; got != "#facc15" {
		t.Errorf("dark accent %s, want #facc15 as given", got)
	}
}

// TestParseBrand: what a deployment may set, and each refusal naming its
// part.
func TestParseBrand(t *testing.T) {
	b, err := ParseBrand("  Acme  ", "#ABC", " https://acme.test/logo.png ")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Brand{Name: "Acme", Accent: "#abc", LogoURL: "https://acme.test/logo.png"}); b != want {
		t.Errorf("ParseBrand = %+v, want %+v", b, want)
	}
	if b, err := ParseBrand("", "", ""); err != nil || b != (Brand{}) {
		t.Errorf("ParseBrand of nothing = %+v, %v; want the zero Brand", b, err)
	}
	for _, c := range []struct{ name, accent, logo, want string }{
		{strings.Repeat("x", MaxBrandName+1), "", "", "brand name"},
		{"a\nb", "", "", "brand name"},
		{"", "red", "", "brand accent"},
		{"", "#12345", "", "brand accent"},
		{"", "#ggg", "", "brand accent"},
		{"", "", "/logo.png", "logo URL"},
		{"", "", "javascript:alert(1)", "logo URL"},
		{"", "", "data:image/png;base64,AAAA", "logo URL"},
	} {
		if _, err := ParseBrand(c.name, c.accent, c.logo); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseBrand(%q, %q, %q) = %v, want an error naming %q", c.name, c.accent, c.logo, err, c.want)
		}
	}
}

// stepsOf returns the waking page's steps as "label:state" in order.
func stepsOf(t *testing.T, page string) []string {
	t.Helper()
	re := regexp.MustCompile(`<li class="step (\w+)" data-step="(\w+)"[^>]*>.*?<span class="label">([^<]+)</span>`)
	var out []string
	for _, m := range re.FindAllStringSubmatch(page, -1) {
		out = append(out, m[3]+":"+m[1])
	}
	return out
}

// TestTheWakingPageShowsTheRealSteps: the steps shown for each state the
// open can find the session in: waking or restoring the sandbox, starting
// the app (only with an app), opening the preview; the one under way is
// aria-current and is what the live region says.
func TestTheWakingPageShowsTheRealSteps(t *testing.T) {
	for _, c := range []struct {
		name, state, readiness string
		app                    bool
		steps                  []string
		status                 string
	}{
		{"Paused", "paused", "", true, []string{"Wake the sandbox:current", "Start the app:todo", "Open the preview:todo"}, "Waking the sandbox…"},
		{"Resuming", "resuming", "", false, []string{"Wake the sandbox:current", "Open the preview:todo"}, "Waking the sandbox…"},
		{"Restoring", "restoring", "", true, []string{"Restore from a checkpoint:current", "Start the app:todo", "Open the preview:todo"}, "Restoring the sandbox from a checkpoint…"},
		{"AppStarting", "running", "starting", true, []string{"Wake the sandbox:done", "Start the app:current", "Open the preview:todo"}, "Starting the app…"},
		{"Ready", "running", "ready", true, []string{"Wake the sandbox:done", "Start the app:done", "Open the preview:current"}, "Opening the preview…"},
	} {
		t.Run(c.name, func(t *testing.T) {
			page := Brand{}.WakingPage(Waking{Link: "/v1/sessions/s/open", Script: "/v1/sandman.js", State: c.state, Readiness: c.readiness, App: c.app})
			if got := stepsOf(t, page); strings.Join(got, ", ") != strings.Join(c.steps, ", ") {
				t.Errorf("steps %q, want %q", got, c.steps)
			}
			if n := strings.Count(page, `aria-current="step"`); n != 1 {
				t.Errorf("%d steps are aria-current, want 1", n)
			}
			if want := `role="status">` + c.status + `</p>`; !strings.Contains(page, want) {
				t.Errorf("the live region does not say %q", c.status)
			}
		})
	}
}

// TestTheWakingPageSaysWhereTheWorkComesBackFrom: a session restoring for
// reason lost says "Restoring your work from <time>" (the checkpoint's
// created_at, which the script rewrites in the reader's zone), in the
// page and its live region; a recreate says a fresh sandbox is made; an
// ordinary wake says neither (docs/RELIABILITY.md "Recovery").
func TestTheWakingPageSaysWhereTheWorkComesBackFrom(t *testing.T) {
	at := time.Date(2026, 12, 6, 17, 5, 0, 0, time.UTC)
	page := Brand{}.WakingPage(Waking{State: "restoring", Recovery: &Recovery{From: at}})
	for _, want := range []string{`Restoring your work from <time datetime="2026-12-06T17:05:00Z">6 Dec 2026, 17:05 UTC</time>`,
		`role="status">Restoring your work from 6 Dec 2026, 17:05 UTC…</p>`, `"restoring_from":"2026-12-06T17:05:00Z"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the recovering page lacks %q:\n%s", want, page)
		}
	}
	if page := (Brand{}).WakingPage(Waking{State: "restoring", Recovery: &Recovery{}}); !strings.Contains(page, "a fresh one is being made") {
		t.Errorf("a recreate's page does not say a fresh sandbox is made: %s", page)
	}
	if page := (Brand{}).WakingPage(Waking{State: "paused"}); strings.Contains(page, `id="recovery"`) {
		t.Error("a plain wake says it restores work")
	}
}

// TestTheWakingPageSaysHowLongTheAppMayTake: with an app, the hint names
// its ready timeout; without one, it says the page goes on by itself.
func TestTheWakingPageSaysHowLongTheAppMayTake(t *testing.T) {
	page := Brand{}.WakingPage(Waking{State: "paused", App: true, AppTimeout: 90 * time.Second})
	if !strings.Contains(page, "up to 1 minute 30 seconds to start") {
		t.Errorf("the hint does not name the app's timeout: %s", page)
	}
	page = Brand{}.WakingPage(Waking{State: "paused"})
	if !strings.Contains(page, "goes on to the preview by itself") {
		t.Errorf("the hint without an app: %s", page)
	}
}

// TestPagesEscapeWhatTheyShow: the brand's name, an app's output and the
// link are escaped for where they land (text, attribute, JSON).
func TestPagesEscapeWhatTheyShow(t *testing.T) {
	b := Brand{Name: `<b>"Acme"</b>`}
	page := b.NoticePage(Notice{Kind: KindFailed, Title: "T", Sentence: "S", Output: "</pre><script>x</script>", Action: `/o?token=a"b`, ActionLabel: "Try again"})
	for _, bad := range []string{"<b>", "<script>x", `token=a"b`} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q unescaped", bad)
		}
	}
	waking := b.WakingPage(Waking{Link: "/v1/sessions/s/open", Token: "</script><script>alert(1)</script>", State: "paused"})
	if strings.Contains(waking, "</script><script>alert") {
		t.Errorf("the token broke out of the page's JSON: %s", waking)
	}
}

// TestHumanDuration and TestSentence: the words the pages use.
func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{time.Second: "1 second", 45 * time.Second: "45 seconds", time.Minute: "1 minute",
		2 * time.Minute: "2 minutes", 61 * time.Second: "1 minute 1 second", 150 * time.Second: "2 minutes 30 seconds"} {
		if got := humanDuration(d); got != want {
			t.Errorf("humanDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestSentence(t *testing.T) {
	for in, want := range map[string]string{"the command exited": "The command exited.", "Done.": "Done.", "": "", " why? ": "Why?"} {
		if got := Sentence(in); got != want {
			t.Errorf("Sentence(%q) = %q, want %q", in, got, want)
		}
	}
}
