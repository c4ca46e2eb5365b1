package webclienttest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func post(t *testing.T, method, url string, into any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode >= 300 {
		t.Fatalf("%s %s: %d", method, url, res.StatusCode)
	}
	if into != nil {
		if err := json.NewDecoder(res.Body).Decode(into); err != nil {
			t.Fatal(err)
		}
	}
}

func TestConsole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := NewConsole()
	hs := httptest.NewServer(c)
	t.Cleanup(hs.Close)

	var created struct{ ID, State string }
	post(t, http.MethodPost, hs.URL+"/console/api/sessions", &created)
	if got, want := created.State, "running"; got != want {
		t.Fatalf("created state = %q, want %q", got, want)
	}
	var tok struct {
		Token string `json:"token"`
		WSURL string `json:"ws_url"`
	}
	post(t, http.MethodPost, hs.URL+"/console/api/sessions/"+created.ID+"/client-tokens", &tok)
	if !strings.HasPrefix(tok.WSURL, "ws://") {
		t.Fatalf("ws_url = %q", tok.WSURL)
	}

	if _, res, err := websocket.Dial(ctx, tok.WSURL+"?token=tok-ses_404", nil); err == nil || res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unknown session token: err %v", err)
	}
	conn, _, err := websocket.Dial(ctx, tok.WSURL+"?token="+tok.Token, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"action":"hello"}`)); err != nil {
		t.Fatal(err)
	}
	state := func() string {
		t.Helper()
		m := read(t, ctx, conn)
		return m["session"].(map[string]any)["state"].(string)
	}
	if got, want := state(), "running"; got != want {
		t.Fatalf("at connect = %q, want %q", got, want)
	}
	post(t, http.MethodPost, hs.URL+"/console/api/sessions/"+created.ID+"/snapshot", nil)
	if got, want := state(), "paused"; got != want {
		t.Fatalf("after snapshot = %q, want %q", got, want)
	}
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"action":"resume"}`)); err != nil {
		t.Fatal(err)
	}
	if got, want := state(), "running"; got != want {
		t.Fatalf("after resume message = %q, want %q", got, want)
	}
	post(t, http.MethodDelete, hs.URL+"/console/api/sessions/"+created.ID, nil)
	if got, want := state(), "killed"; got != want {
		t.Fatalf("after delete = %q, want %q", got, want)
	}
	want := []string{
		"POST /console/api/sessions",
		"POST /console/api/sessions/ses_1/client-tokens",
		"GET /v1/ws",
		"GET /v1/ws",
		"POST /console/api/sessions/ses_1/snapshot",
		"DELETE /console/api/sessions/ses_1",
	}
	if got := c.Requests(); !slices.Equal(got, want) {
		t.Errorf("requests = %q, want %q", got, want)
	}
}
