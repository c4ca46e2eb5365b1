package e2b

import "time"

// The JSON shapes of E2B's REST API, field names exactly as in
// docs/providers/e2b.md. They stay separate from lifecycle's domain types and are
// converted at the edge.

// newSandboxBody is the body of POST /sandboxes.
type newSandboxBody struct {
	TemplateID string            `json:"templateID"`
	Timeout    int64             `json:"timeout,omitempty"` // seconds; omitted: E2B's default
	AutoPause  bool              `json:"autoPause"`
	AutoResume *autoResumeBody   `json:"autoResume,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	EnvVars    map[string]string `json:"envVars,omitempty"`
	Secure     bool              `json:"secure,omitempty"`
}

// autoResumeBody is create's autoResume object.
type autoResumeBody struct {
	Enabled bool `json:"enabled"`
}

// createdSandbox answers create (201) and connect (200, 201).
type createdSandbox struct {
	SandboxID       string `json:"sandboxID"`
	TemplateID      string `json:"templateID"`
	EnvdVersion     string `json:"envdVersion"`
	EnvdAccessToken string `json:"envdAccessToken"`
	Domain          string `json:"domain"` // may be null: Config.Domain applies
}

// sandboxDetail answers get (200) and is one element of list's array.
type sandboxDetail struct {
	SandboxID  string            `json:"sandboxID"`
	TemplateID string            `json:"templateID"`
	State      string            `json:"state"` // "running" or "paused"
	StartedAt  time.Time         `json:"startedAt"`
	EndAt      time.Time         `json:"endAt"` // running: the timeout; paused: when it paused
	Metadata   map[string]string `json:"metadata"`
	Domain     string            `json:"domain"`
	// EnvdAccessToken is envd's token (get only): an adapter that did not
	// create the sandbox (another function) learns it here.
	EnvdAccessToken string `json:"envdAccessToken"`
}

// timeoutBody is the body of connect and of set timeout.
type timeoutBody struct {
	Timeout int64 `json:"timeout"` // seconds
}

// errorBody is E2B's error answer.
type errorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// snapshotBody is the body of POST /sandboxes/{id}/snapshots.
type snapshotBody struct {
	Name string `json:"name,omitempty"` // omitted: E2B names it <templateID>:default
}

// snapshotInfo answers a snapshot (201) and is one element of
// GET /snapshots' array.
type snapshotInfo struct {
	SnapshotID string   `json:"snapshotID"` // <team-slug>/<name>:<tag> when named
	Names      []string `json:"names"`      // <team-slug>/<name>, with or without its :tag
}

// forkBody is the body of POST /sandboxes/{id}/fork.
type forkBody struct {
	Count   int   `json:"count"`
	Timeout int64 `json:"timeout"` // seconds; omitted, E2B applies 15 s
}

// forkEntry is one element of fork's array: a sandbox or an error.
type forkEntry struct {
	Sandbox *createdSandbox `json:"sandbox"`
	Error   *errorBody      `json:"error"`
}
