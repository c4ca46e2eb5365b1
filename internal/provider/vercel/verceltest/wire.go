package verceltest

// The JSON shapes the fake answers, field names exactly as in
// docs/providers/vercel.md. Optional fields are omitted when unset,
// never null: @vercel/sandbox 3.5.0 validates every answer and refuses a
// null where it expects an absent field. Times are ms since the epoch and
// durations ms.

type sandboxJSON struct {
	Name               string            `json:"name"`
	ProjectID          string            `json:"projectId"`
	Persistent         bool              `json:"persistent"`
	Status             string            `json:"status"`
	StatusUpdatedAt    int64             `json:"statusUpdatedAt,omitempty"`
	CurrentSessionID   string            `json:"currentSessionId"`
	CurrentSnapshotID  string            `json:"currentSnapshotId,omitempty"`
	Timeout            int64             `json:"timeout,omitempty"`
	ExpiresAt          int64             `json:"expiresAt,omitempty"`
	CreatedAt          int64             `json:"createdAt"`
	UpdatedAt          int64             `json:"updatedAt"`
	Tags               map[string]string `json:"tags,omitempty"`
	Region             string            `json:"region,omitempty"`
	VCPUs              int               `json:"vcpus,omitempty"`
	Memory             int               `json:"memory,omitempty"`
	Image              string            `json:"image,omitempty"`
	Runtime            string            `json:"runtime,omitempty"`
	SnapshotExpiration int64             `json:"snapshotExpiration,omitempty"`
}

type sessionJSON struct {
	ID               string `json:"id"`
	Status           string `json:"status"`
	Timeout          int64  `json:"timeout"`
	Memory           int    `json:"memory"`
	VCPUs            int    `json:"vcpus"`
	Region           string `json:"region"`
	Cwd              string `json:"cwd"`
	RequestedAt      int64  `json:"requestedAt"`
	StartedAt        int64  `json:"startedAt,omitempty"`
	RequestedStopAt  int64  `json:"requestedStopAt,omitempty"`
	StoppedAt        int64  `json:"stoppedAt,omitempty"`
	AbortedAt        int64  `json:"abortedAt,omitempty"`
	SnapshottedAt    int64  `json:"snapshottedAt,omitempty"`
	Duration         int64  `json:"duration,omitempty"`
	CreatedAt        int64  `json:"createdAt"`
	UpdatedAt        int64  `json:"updatedAt"`
	SourceSnapshotID string `json:"sourceSnapshotId,omitempty"`
}

type snapshotJSON struct {
	ID              string `json:"id"`
	SourceSessionID string `json:"sourceSessionId"`
	Region          string `json:"region"`
	Status          string `json:"status"`
	SizeBytes       int64  `json:"sizeBytes"`
	ExpiresAt       int64  `json:"expiresAt,omitempty"`
	CreatedAt       int64  `json:"createdAt"`
	UpdatedAt       int64  `json:"updatedAt"`
	LastUsedAt      int64  `json:"lastUsedAt,omitempty"`
	ParentID        string `json:"parentId,omitempty"`
}

// RouteJSON is one preview route as the API answers it.
type RouteJSON struct {
	URL       string `json:"url"`
	Subdomain string `json:"subdomain"`
	Port      int    `json:"port"`
}

type sandboxAnswer struct {
	Sandbox sandboxJSON `json:"sandbox"`
	Session sessionJSON `json:"session"`
	Routes  []RouteJSON `json:"routes"`
	Resumed bool        `json:"resumed"`
}

type stopAnswer struct {
	Session  sessionJSON   `json:"session"`
	Sandbox  *sandboxJSON  `json:"sandbox,omitempty"`
	Snapshot *snapshotJSON `json:"snapshot,omitempty"`
}

type listAnswer struct {
	Sandboxes  []sandboxJSON `json:"sandboxes"`
	Pagination pagination    `json:"pagination"`
}

type pagination struct {
	Count int     `json:"count"`
	Next  *string `json:"next"` // present always: a cursor or null
}

type createBody struct {
	ProjectID          string            `json:"projectId"`
	Name               string            `json:"name"`
	Image              string            `json:"image"`
	Runtime            string            `json:"runtime"`
	Source             *sourceBody       `json:"source"`
	Resources          *resourcesBody    `json:"resources"`
	Timeout            *int64            `json:"timeout"`
	Ports              []int             `json:"ports"`
	Env                map[string]string `json:"env"`
	Tags               map[string]string `json:"tags"`
	Persistent         *bool             `json:"persistent"`
	SnapshotExpiration *int64            `json:"snapshotExpiration"`
	KeepLastSnapshots  *keepLastJSON     `json:"keepLastSnapshots"`
	Region             string            `json:"region"`
}

// keepLastJSON is keepLastSnapshots: keep the newest Count snapshots of
// the sandbox, deleting the older ones (unless DeleteEvicted is false).
type keepLastJSON struct {
	Count         int   `json:"count"`
	DeleteEvicted *bool `json:"deleteEvicted"`
}

// createKeys are the create body's field names (the sheet's list, plus
// networkId and mounts, which @vercel/sandbox 3.5.0 also sends; accepted
// and ignored); any other key is a 400, so a misspelt field is caught.
var createKeys = []string{"projectId", "name", "image", "runtime", "source", "resources", "timeout",
	"ports", "env", "tags", "persistent", "snapshotExpiration", "keepLastSnapshots", "networkPolicy",
	"region", "failoverRegions", "networkId", "mounts"}

type sourceBody struct {
	Type       string `json:"type"`
	URL        string `json:"url"`
	SnapshotID string `json:"snapshotId"`
}

type resourcesBody struct {
	VCPUs  int `json:"vcpus"`
	Memory int `json:"memory"`
}

type updateBody struct {
	Persistent         *bool             `json:"persistent"`
	Timeout            *int64            `json:"timeout"`
	Ports              []int             `json:"ports"`
	Tags               map[string]string `json:"tags"`
	Resources          *resourcesBody    `json:"resources"`
	SnapshotExpiration *int64            `json:"snapshotExpiration"`
	KeepLastSnapshots  *keepLastJSON     `json:"keepLastSnapshots"`
	CurrentSnapshotID  *string           `json:"currentSnapshotId"`
	Region             *string           `json:"region"`
}

// updateKeys are PATCH's field names, networkId and mounts as for create.
var updateKeys = []string{"persistent", "timeout", "ports", "tags", "resources", "networkPolicy",
	"snapshotExpiration", "keepLastSnapshots", "currentSnapshotId", "region", "failoverRegions",
	"networkId", "mounts"}

type extendBody struct {
	Duration int64 `json:"duration"`
}

type snapshotBody struct {
	Expiration *int64 `json:"expiration"`
}
