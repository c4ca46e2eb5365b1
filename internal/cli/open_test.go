package cli_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/cli"
)

// noRedirect is a client that answers redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// TestOpen: `sandman sessions open` prints the stable link of a session
// that exists (a wrong id fails with not_found); with --token the link
// carries a client token that opens it, and with --path it lands on that
// page of the preview; -o json adds when the token expires.
func TestOpen(t *testing.T) {
	t.Parallel()
	a := MustAPI(t)
	key := apigw.DevAPIKey
	s := mustJSON[cli.Session](t, a.url, key, "create", "--template", "base")

	code, out, errOut := run(t, a.url, key, "open", s.ID)
	if want := a.url + "/v1/sessions/" + s.ID + "/open\n"; code != 0 || out != want {
		t.Fatalf("open: exit %d (%s), %q; want %q", code, errOut, out, want)
	}
	if code, _, _ := run(t, a.url, key, "open", "ses_aaaaaaaaaaaaaaaaaaaaaaaaaa"); code != cli.ExitNotFound {
		t.Errorf("open of an unknown session: exit %d, want %d", code, cli.ExitNotFound)
	}

	code, out, errOut = run(t, a.url, key, "open", s.ID, "--token", "--ttl", "10m", "--path", "/docs/a b")
	link := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(link, a.url+"/v1/sessions/"+s.ID+"/open/docs/a%20b?token=") {
		t.Fatalf("open --token: exit %d (%s), %q", code, errOut, out)
	}
	resp, err := noRedirect.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || !strings.HasSuffix(loc, "/docs/a%20b") ||
		!strings.HasPrefix(loc, *s.PreviewURL) {
		t.Errorf("opening the printed link with no header: %d to %q; want 302 to the preview's /docs/a%%20b", resp.StatusCode, loc)
	}

	type openOut struct {
		URL       string  `json:"url"`
		ExpiresAt *string `json:"expires_at"`
	}
	j := mustJSON[openOut](t, a.url, key, "open", s.ID, "--token")
	u, err := url.Parse(j.URL)
	if err != nil || u.Query().Get("token") == "" || j.ExpiresAt == nil {
		t.Errorf("open --token -o json = %+v", j)
	}
}

// TestClientTokensCreate: `sandman client-tokens create` mints a token for
// the session (the table shows it, when it expires and the channel's URL;
// -o json is the API's answer), which the API then accepts for that
// session's status.
func TestClientTokensCreate(t *testing.T) {
	t.Parallel()
	a := MustAPI(t)
	s := mustJSON[cli.Session](t, a.url, apigw.DevAPIKey, "create", "--template", "base")
	var out, errOut strings.Builder
	env := cli.Env{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string {
		return map[string]string{"SANDMAN_URL": a.url, "SANDMAN_API_KEY": apigw.DevAPIKey}[k]
	}}
	if code := cli.ClientTokensMain(t.Context(), []string{"create", s.ID, "--ttl", "5m"}, env); code != 0 ||
		!strings.Contains(out.String(), "expires_at") || !strings.Contains(out.String(), "ws://") {
		t.Fatalf("table: exit %d, %q %q", code, out.String(), errOut.String())
	}
	out.Reset()
	if code := cli.ClientTokensMain(t.Context(), []string{"create", s.ID, "-o", "json"}, env); code != 0 {
		t.Fatalf("json: exit %d, %s", code, errOut.String())
	}
	tok := strings.Split(strings.Split(out.String(), `"token": "`)[1], `"`)[0]
	req, _ := http.NewRequest(http.MethodGet, a.url+"/v1/sessions/"+s.ID+"/status", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status with the minted token: %d, want 200", resp.StatusCode)
	}
	if code := cli.ClientTokensMain(t.Context(), []string{"create", "ses_aaaaaaaaaaaaaaaaaaaaaaaaaa"}, env); code != cli.ExitNotFound {
		t.Errorf("a token for an unknown session: exit %d, want %d", code, cli.ExitNotFound)
	}
}

// TestListFiltersAndEvents: `sandman sessions list` filters through the
// API (state, provider, template, metadata), and `sandman sessions events`
// prints the timeline, every page with --all.
func TestListFiltersAndEvents(t *testing.T) {
	t.Parallel()
	a := MustAPI(t)
	key := apigw.DevAPIKey
	ada := mustJSON[cli.Session](t, a.url, key, "create", "--template", "base", "--metadata", "user=ada")
	bob := mustJSON[cli.Session](t, a.url, key, "create", "--template", "base", "--metadata", "user=bob")
	mustJSON[cli.PauseResult](t, a.url, key, "pause", bob.ID)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--state", "running"}, ada.ID},
		{[]string{"--state", "paused,pausing"}, bob.ID},
		{[]string{"--metadata", "user=bob", "--provider", "fake", "--template", "base"}, bob.ID},
	} {
		l := mustJSON[cli.SessionList](t, a.url, key, append([]string{"list", "--all"}, tc.args...)...)
		if len(l.Sessions) != 1 || l.Sessions[0].ID != tc.want {
			t.Errorf("list %v = %d sessions; want %s alone", tc.args, len(l.Sessions), tc.want)
		}
	}
	code, out, errOut := run(t, a.url, key, "events", bob.ID)
	if code != 0 || !strings.Contains(out, "TIME") {
		t.Errorf("events table: exit %d (%s)\n%s", code, errOut, out)
	}
	evs := mustJSON[cli.SessionEventList](t, a.url, key, "events", bob.ID, "--all", "--limit", "1")
	if evs.NextCursor != nil {
		t.Errorf("events --all ends with a cursor: %+v", evs)
	}
}
