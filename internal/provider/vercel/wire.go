package vercel

// The JSON shapes of Vercel's named-sandbox API, field names exactly as in
// docs/providers/vercel.md. Times are ms since the epoch, durations ms.
// They stay separate from lifecycle's domain types.

// createBody is the body of POST /v3/sandboxes (and /v2/sandboxes).
type createBody struct {
	ProjectID          string            `json:"projectId"`
	Name               string            `json:"name"`
	Image              string            `json:"image,omitempty"`
	Runtime            string            `json:"runtime,omitempty"`
	Source             *sourceJSON       `json:"source,omitempty"` // excludes Image and Runtime
	Resources          *resources        `json:"resources,omitempty"`
	Timeout            int64             `json:"timeout,omitempty"` // ms; omitted: Vercel's 300000
	Ports              []int             `json:"ports,omitempty"`
	Tags               map[string]string `json:"tags,omitempty"`
	Persistent         bool              `json:"persistent"`
	SnapshotExpiration int64             `json:"snapshotExpiration,omitempty"` // ms
}

// sourceJSON is create's source: here always a snapshot.
type sourceJSON struct {
	Type       string `json:"type"` // "snapshot"
	SnapshotID string `json:"snapshotId"`
}

type resources struct {
	VCPUs int `json:"vcpus"`
}

// sandboxJSON is the API's Sandbox.
type sandboxJSON struct {
	Name              string            `json:"name"`
	Persistent        bool              `json:"persistent"`
	Status            string            `json:"status"`
	StatusUpdatedAt   int64             `json:"statusUpdatedAt"`
	CurrentSessionID  string            `json:"currentSessionId"`
	CurrentSnapshotID string            `json:"currentSnapshotId"`
	Timeout           int64             `json:"timeout"`
	ExpiresAt         int64             `json:"expiresAt"`
	CreatedAt         int64             `json:"createdAt"`
	Tags              map[string]string `json:"tags"`
	Image             string            `json:"image"`
	Runtime           string            `json:"runtime"`
}

// sessionJSON is the API's Session.
type sessionJSON struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	Timeout   int64  `json:"timeout"` // ms
	StartedAt int64  `json:"startedAt"`
	CreatedAt int64  `json:"createdAt"`
	StoppedAt int64  `json:"stoppedAt"`
}

// route is one entry of routes: the public URL of a port.
type route struct {
	URL       string `json:"url"`
	Subdomain string `json:"subdomain"`
	Port      int    `json:"port"`
}

// sandboxAnswer answers create, get and resume.
type sandboxAnswer struct {
	Sandbox sandboxJSON `json:"sandbox"`
	Session sessionJSON `json:"session"`
	Routes  []route     `json:"routes"`
	Resumed bool        `json:"resumed"`
}

// listAnswer answers GET /v2/sandboxes.
type listAnswer struct {
	Sandboxes  []sandboxJSON `json:"sandboxes"`
	Pagination struct {
		Count int     `json:"count"`
		Next  *string `json:"next"`
	} `json:"pagination"`
}

// sessionAnswer answers extend-timeout and stop.
type sessionAnswer struct {
	Session sessionJSON `json:"session"`
}

// extendBody is the body of extend-timeout.
type extendBody struct {
	Duration int64 `json:"duration"` // ms, ≥ 1000
}

// snapshotJSON is the API's Snapshot.
type snapshotJSON struct {
	ID              string `json:"id"`
	SourceSessionID string `json:"sourceSessionId"`
	Status          string `json:"status"` // created, deleted or failed
	SizeBytes       int64  `json:"sizeBytes"`
	ExpiresAt       int64  `json:"expiresAt"` // absent: never
	CreatedAt       int64  `json:"createdAt"`
}

// snapshotAnswer answers a snapshot's get and delete, and the snapshot
// call (which also carries the stopped session).
type snapshotAnswer struct {
	Snapshot snapshotJSON `json:"snapshot"`
}

// snapshotsAnswer answers GET /v2/sandboxes/snapshots.
type snapshotsAnswer struct {
	Snapshots  []snapshotJSON `json:"snapshots"`
	Pagination struct {
		Next *string `json:"next"`
	} `json:"pagination"`
}

// expirationBody is the body of a session's snapshot call.
type expirationBody struct {
	Expiration int64 `json:"expiration"` // ms after last use; 0: never
}

// errorBody is Vercel's error answer.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}
