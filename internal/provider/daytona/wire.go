package daytona

import "time"

// The JSON shapes of Daytona's REST API, field names exactly as in
// docs/providers/daytona.md, converted to lifecycle's types at the edge.

// createBody is the body of POST /sandbox.
type createBody struct {
	Snapshot            string            `json:"snapshot,omitempty"`
	BuildInfo           *buildInfoBody    `json:"buildInfo,omitempty"`
	Labels              map[string]string `json:"labels"`
	Public              bool              `json:"public"`
	Target              string            `json:"target,omitempty"`
	AutoStopInterval    *int64            `json:"autoStopInterval,omitempty"`
	AutoPauseInterval   *int64            `json:"autoPauseInterval,omitempty"`
	AutoArchiveInterval *int64            `json:"autoArchiveInterval,omitempty"`
	AutoDeleteInterval  *int64            `json:"autoDeleteInterval,omitempty"`
	TTLMinutes          *int64            `json:"ttlMinutes,omitempty"`
}

// buildInfoBody is create's buildInfo: an image is sent as a one-line
// FROM Dockerfile.
type buildInfoBody struct {
	DockerfileContent string   `json:"dockerfileContent"`
	ContextHashes     []string `json:"contextHashes"`
}

// sandboxBody is Daytona's Sandbox object (get, create, start, stop,
// delete) and a list item (the same without env). Unknown states decode
// as they are and are treated as transitional.
type sandboxBody struct {
	ID                  string            `json:"id"`
	Name                string            `json:"name"`
	State               string            `json:"state"`
	DesiredState        string            `json:"desiredState"`
	ErrorReason         string            `json:"errorReason"`
	Recoverable         bool              `json:"recoverable"`
	Snapshot            string            `json:"snapshot"`
	Labels              map[string]string `json:"labels"`
	AutoStopInterval    int64             `json:"autoStopInterval"`  // minutes, 0 = off
	AutoPauseInterval   int64             `json:"autoPauseInterval"` // minutes, 0 = off
	AutoArchiveInterval int64             `json:"autoArchiveInterval"`
	AutoDeleteInterval  int64             `json:"autoDeleteInterval"`
	CreatedAt           time.Time         `json:"createdAt"`
	UpdatedAt           time.Time         `json:"updatedAt"`
	LastActivityAt      time.Time         `json:"lastActivityAt"`
	SandboxClass        string            `json:"sandboxClass"`
	ToolboxProxyURL     string            `json:"toolboxProxyUrl"`
}

// listBody answers GET /sandbox.
type listBody struct {
	Items      []sandboxBody `json:"items"`
	NextCursor *string       `json:"nextCursor"`
}

// previewBody answers GET /sandbox/{id}/ports/{port}/preview-url.
type previewBody struct {
	SandboxID string `json:"sandboxId"`
	URL       string `json:"url"`
	Token     string `json:"token"`
}

// errorBody is Daytona's error answer.
type errorBody struct {
	StatusCode int    `json:"statusCode"`
	Error      string `json:"error"`
	Message    any    `json:"message"` // a string; validation errors may be an array
	Code       string `json:"code"`
}

// snapshotBody is Daytona's SnapshotDto (GET /snapshots/{idOrName}, the
// items of GET /snapshots).
type snapshotBody struct {
	ID              string    `json:"id"`
	Name            string    `json:"name"`
	State           string    `json:"state"`
	SourceSandboxID string    `json:"sourceSandboxId"`
	Size            *float64  `json:"size"` // GB; null while unknown
	ErrorReason     string    `json:"errorReason"`
	CreatedAt       time.Time `json:"createdAt"`
}

// snapshotPage answers GET /snapshots, paged by number.
type snapshotPage struct {
	Items      []snapshotBody `json:"items"`
	Page       int            `json:"page"`
	TotalPages int            `json:"totalPages"`
}

// executeBody answers POST <toolbox>/process/execute: the exit code
// (exitCode; older toolboxes: code) and stdout and stderr together.
type executeBody struct {
	ExitCode *int   `json:"exitCode"`
	Code     *int   `json:"code"`
	Result   string `json:"result"`
}
