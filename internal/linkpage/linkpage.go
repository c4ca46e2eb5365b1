// Package linkpage renders the pages a person sees when they open a
// session's stable link in a browser (docs/WAKE.md "What a browser
// sees"): the waking page, which follows the session through its real
// steps (waking the sandbox or restoring it from a checkpoint, starting
// the app, opening the preview), and the notices that end a visit (the
// app failed, nothing could be recovered, the session ended, the link's
// token is missing or belongs to another session, the preview cannot wake
// right now). Each page is one HTML document with its style and script
// inline: no external asset, no font or image to fetch (the deployment's
// logo, when configured, is the one exception), light and dark
// (prefers-color-scheme), usable from 320 px wide up, and themed per
// deployment by a Brand (SANDMAN_BRAND_NAME, SANDMAN_BRAND_ACCENT,
// SANDMAN_BRAND_LOGO_URL; docs/CONFIGURATION.md) whose accent is adjusted
// until every text on it or in it reaches a 4.5:1 contrast.
//
// The package only renders: internal/apigw decides which page an open
// answers and with which status.
package linkpage

import (
	"embed"
	"fmt"
	"html/template"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// DefaultAccent is the accent colour of a Brand that names none.
const DefaultAccent = "#4f46e5"

// MaxBrandName is the longest brand name ParseBrand takes, in characters.
const MaxBrandName = 60

// The pages' backgrounds, light and dark, as style.css sets them: the
// accent is made readable against each (Brand.theme).
var (
	lightBackgrounds = []rgb{{255, 255, 255}, {244, 245, 247}} // card, page
	darkBackgrounds  = []rgb{{23, 26, 32}, {14, 16, 20}}
)

// Brand is a deployment's look: the name shown beside its logo and in the
// pages' titles ("" for none), the accent colour of buttons, links and
// progress ("#rgb" or "#rrggbb"; "" for DefaultAccent) and the logo's
// absolute http(s) URL ("" for none). Build it with ParseBrand; the zero
// Brand is the default look.
type Brand struct {
	Name    string
	Accent  string
	LogoURL string
}

// The parts of a Brand, as a BrandError names them.
const (
	PartName    = "name"
	PartAccent  = "accent"
	PartLogoURL = "logo URL"
)

// BrandError is ParseBrand's error: the part it refuses (PartName,
// PartAccent, PartLogoURL) and why.
type BrandError struct {
	Part   string
	Reason string
}

func (e *BrandError) Error() string { return "brand " + e.Part + ": " + e.Reason }

// ParseBrand checks and returns a Brand, each part trimmed (the accent
// lower-cased). Errors (*BrandError): a name longer than MaxBrandName
// characters or with control characters, an accent that is not #rgb or
// #rrggbb, a logo URL that is not an absolute http or https URL.
func ParseBrand(name, accent, logoURL string) (Brand, error) {
	b := Brand{Name: strings.TrimSpace(name), Accent: strings.ToLower(strings.TrimSpace(accent)), LogoURL: strings.TrimSpace(logoURL)}
	if n := utf8.RuneCountInString(b.Name); n > MaxBrandName {
		return Brand{}, &BrandError{PartName, fmt.Sprintf("at most %d characters, got %d", MaxBrandName, n)}
	}
	if strings.ContainsFunc(b.Name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return Brand{}, &BrandError{PartName, "control characters are not allowed"}
	}
	if b.Accent != "" {
		if _, err := parseHex(b.Accent); err != nil {
			return Brand{}, &BrandError{PartAccent, err.Error()}
		}
	}
	if b.LogoURL != "" {
		u, err := url.Parse(b.LogoURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return Brand{}, &BrandError{PartLogoURL, fmt.Sprintf("%q is not an absolute http or https URL", b.LogoURL)}
		}
	}
	return b, nil
}

// theme is the colours style.css takes from the brand: the accent as
// shown on the light and the dark backgrounds, each with the text colour
// of a button filled with it.
type theme struct {
	Accent, OnAccent, AccentDark, OnAccentDark string
}

// theme derives the pages' colours from b's accent: moved toward black on
// the light backgrounds and toward white on the dark ones until it reaches
// minContrast against each (readableOn).
func (b Brand) theme() theme {
	c, err := parseHex(b.Accent)
	if err != nil {
		c, _ = parseHex(DefaultAccent)
	}
	light := readableOn(c, black, lightBackgrounds...)
	dark := readableOn(c, white, darkBackgrounds...)
	return theme{Accent: light.hex(), OnAccent: textOn(light).hex(), AccentDark: dark.hex(), OnAccentDark: textOn(dark).hex()}
}

//go:embed templates
var files embed.FS

var pages = template.Must(template.New("pages").ParseFS(files, "templates/*"))

// view is what a page's template is executed with.
type view struct {
	Kind  string // the page's name, on <body data-page>
	Title string
	Brand Brand
	Theme theme
	Page  any // Waking or Notice
}

// render executes the page template name for p, or writes a one-line page
// when the template fails (a bug the package's tests catch).
func (b Brand) render(name, kind, title string, p any) string {
	var s strings.Builder
	if err := pages.ExecuteTemplate(&s, name, view{Kind: kind, Title: title, Brand: b, Theme: b.theme(), Page: p}); err != nil {
		return "<!doctype html><title>" + template.HTMLEscapeString(title) + "</title><p>" + template.HTMLEscapeString(title) + "</p>"
	}
	return s.String()
}

// Waking is the waking page's data: the link to open again (its path, the
// page adds the query), the client module's path, the client token and
// the WebSocket URL it follows the session with ("" for either: it opens
// the link again every few seconds instead), the session's state and
// readiness as the open found them (the first step shown; later ones come
// from the channel's pushes), and whether the session has an app with the
// time it is given to start (lifecycle.AppSpec.ReadyTimeout; 0 with no
// app).
type Waking struct {
	Link, Script, Token, WSURL string
	State, Readiness           string
	App                        bool
	AppTimeout                 time.Duration
	// Recovery is set while the session is restoring for reason lost
	// (docs/RELIABILITY.md "Recovery"): the page says "Restoring your work
	// from <time>", the checkpoint's created_at (From; zero for on_lost
	// recreate, a fresh sandbox: the page says so instead).
	Recovery *Recovery
}

// Recovery is a lost session's recovery as the waking page tells it.
type Recovery struct {
	From time.Time
}

// The waking page's steps and what it says of each: the label of the
// step in the list, and the sentence the live region announces while it
// is under way.
var (
	stepWake    = wakeStep{"wake", "Wake the sandbox", "Waking the sandbox…"}
	stepRestore = wakeStep{"wake", "Restore from a checkpoint", "Restoring the sandbox from a checkpoint…"}
	stepApp     = wakeStep{"app", "Start the app", "Starting the app…"}
	stepOpen    = wakeStep{"open", "Open the preview", "Opening the preview…"}
)

// wakeStep is one step of the waking page.
type wakeStep struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	Doing string `json:"doing"`
}

// stepView is a step as rendered: its state (done, current, todo) and the
// words a screen reader hears after its label.
type stepView struct {
	wakeStep
	State, Said string
}

// wakingConfig is what the page's script reads (the JSON of
// <script id="sandman-link">): the link and the channel, the steps'
// words, and whether the session has an app.
type wakingConfig struct {
	// RestoringFrom is the recovery's checkpoint time (RFC 3339), which the
	// script writes in the reader's own time zone; "" for none.
	RestoringFrom string              `json:"restoring_from,omitempty"`
	Link          string              `json:"link"`
	Script        string              `json:"script"`
	Token         string              `json:"token"`
	WSURL         string              `json:"ws_url"`
	App           bool                `json:"app"`
	Steps         map[string]wakeStep `json:"steps"`
}

// wakingView is the waking page's template data.
type wakingView struct {
	Steps     []stepView
	Restoring bool // the first step is the restore's
	// Recovery: the sentence that says where the work comes back from
	// ("" without a recovery), and its time's RFC 3339 form and UTC words.
	Recovery, RecoveryAt, RecoveryWhen string
	Status                             string
	Hint                               string
	Config                             wakingConfig
}

// current returns the waking page's current step for a session in state
// with readiness: the sandbox's (restoring when state is "restoring"),
// the app's while it starts, else opening the preview.
func current(state, readiness string, app bool) wakeStep {
	switch {
	case state == "restoring":
		return stepRestore
	case state != "running":
		return stepWake
	case app && readiness == "starting":
		return stepApp
	}
	return stepOpen
}

// WakingPage renders the waking page (docs/WAKE.md "The waking page").
// Its script (templates/waking.js) follows the session over the client
// channel and moves the steps as the pushes say, announcing each in a
// live region, and opens the link again (with ?reopen=1) the moment the
// session is usable, its app failed or it ended.
func (b Brand) WakingPage(w Waking) string {
	cur := current(w.State, w.Readiness, w.App)
	first := stepWake
	if cur == stepRestore {
		first = stepRestore
	}
	order := []wakeStep{first}
	if w.App {
		order = append(order, stepApp)
	}
	order = append(order, stepOpen)
	v := wakingView{Status: cur.Doing, Restoring: first == stepRestore, Config: wakingConfig{Link: w.Link, Script: w.Script, Token: w.Token, WSURL: w.WSURL, App: w.App,
		Steps: map[string]wakeStep{"wake": stepWake, "restore": stepRestore, "app": stepApp, "open": stepOpen}}}
	done := true
	for _, s := range order {
		sv := stepView{wakeStep: s, State: "todo", Said: "(to do)"}
		if s.ID == cur.ID {
			sv.State, sv.Said, done = "current", "(under way)", false
		} else if done {
			sv.State, sv.Said = "done", "(done)"
		}
		v.Steps = append(v.Steps, sv)
	}
	if r := w.Recovery; r != nil && cur == stepRestore {
		if r.From.IsZero() {
			v.Recovery = "Your sandbox was lost, so a fresh one is being made from its template."
			v.Status = v.Recovery
		} else {
			v.RecoveryAt, v.RecoveryWhen = r.From.UTC().Format(time.RFC3339), r.From.UTC().Format("2 Jan 2006, 15:04 UTC")
			v.Recovery = "Restoring your work from"
			v.Status = "Restoring your work from " + v.RecoveryWhen + "…"
			v.Config.RestoringFrom = v.RecoveryAt
		}
	}
	v.Hint = "There's nothing to do: this page goes on to the preview by itself."
	if w.App && w.AppTimeout > 0 {
		v.Hint = "The app has up to " + humanDuration(w.AppTimeout) + " to start; this page goes on by itself, or says what went wrong."
	}
	return b.render("waking.html", "waking", "Waking up the preview", v)
}

// humanDuration writes d as "45 seconds", "2 minutes" or "1 minute 30
// seconds".
func humanDuration(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	unit := func(n int, one string) string {
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %ss", n, one)
	}
	switch {
	case s < 60:
		return unit(s, "second")
	case s%60 == 0:
		return unit(s/60, "minute")
	}
	return unit(s/60, "minute") + " " + unit(s%60, "second")
}

// The notices' kinds: each has its icon and its name on <body data-page>.
const (
	KindFailed    = "failed"    // the app failed, nothing to show, nothing could be recovered
	KindEnded     = "ended"     // the session was deleted (410)
	KindSignIn    = "signin"    // no valid token (401), another session's (403)
	KindNotFound  = "not-found" // no such session (404)
	KindPaused    = "paused"    // the page's own re-open found it paused (409 sandbox_paused)
	KindRetryable = "error"     // the preview cannot wake now (429, 503, 500)
)

// Notice is a page that ends a visit: its kind (KindFailed, ...), its
// title, what happened in one sentence, what the person can do, and a
// link to follow (Action, labelled ActionLabel; "" for none), with the
// app's exit code and last output lines for a failed app ("" for none).
type Notice struct {
	Kind        string
	Title       string
	Sentence    string
	Advice      string
	Action      string
	ActionLabel string
	ExitCode    string
	Output      string
}

// NoticePage renders n.
func (b Brand) NoticePage(n Notice) string {
	return b.render("notice.html", n.Kind, n.Title, n)
}

// Sentence returns s as a sentence: its first letter upper case and a
// final full stop (an error message of the lifecycle, "the session's app
// failed: …", reads as one).
func Sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	r, size := utf8.DecodeRuneInString(s)
	s = strings.ToUpper(string(r)) + s[size:]
	if !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "!") && !strings.HasSuffix(s, "?") {
		s += "."
	}
	return s
}
