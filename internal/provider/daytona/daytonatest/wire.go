package daytonatest

import (
	"maps"
	"time"
)

// The JSON shapes, field names exactly as in daytona.md.

type buildInfo struct {
	DockerfileContent string   `json:"dockerfileContent"`
	ContextHashes     []string `json:"contextHashes"`
}

type createBody struct {
	Snapshot            *string           `json:"snapshot"`
	BuildInfo           *buildInfo        `json:"buildInfo"`
	Name                string            `json:"name"`
	User                string            `json:"user"`
	Env                 map[string]string `json:"env"`
	Labels              map[string]string `json:"labels"`
	Public              bool              `json:"public"`
	Target              string            `json:"target"`
	CPU                 *int              `json:"cpu"`
	GPU                 *int              `json:"gpu"`
	Memory              *int              `json:"memory"`
	Disk                *int              `json:"disk"`
	AutoStopInterval    *int              `json:"autoStopInterval"`
	AutoPauseInterval   *int              `json:"autoPauseInterval"`
	AutoArchiveInterval *int              `json:"autoArchiveInterval"`
	AutoDeleteInterval  *int              `json:"autoDeleteInterval"`
	TTLMinutes          *int              `json:"ttlMinutes"`
	Volumes             []struct {
		VolumeID  string `json:"volumeId"`
		MountPath string `json:"mountPath"`
		Subpath   string `json:"subpath"`
	} `json:"volumes"`
	NetworkBlockAll  *bool   `json:"networkBlockAll"`
	NetworkAllowList *string `json:"networkAllowList"`
	DomainAllowList  any     `json:"domainAllowList"`
}

var createFields = []string{"snapshot", "buildInfo", "name", "user", "env", "labels", "public", "target",
	"cpu", "gpu", "memory", "disk", "autoStopInterval", "autoPauseInterval", "autoArchiveInterval",
	"autoDeleteInterval", "ttlMinutes", "volumes", "networkBlockAll", "networkAllowList", "domainAllowList"}

// sandboxJSON is the Sandbox object of get, create, start, stop, delete and
// (without env) list items.
type sandboxJSON struct {
	ID                  string             `json:"id"`
	OrganizationID      string             `json:"organizationId"`
	Name                string             `json:"name"`
	State               string             `json:"state"`
	DesiredState        string             `json:"desiredState"`
	ErrorReason         *string            `json:"errorReason,omitempty"`
	Recoverable         bool               `json:"recoverable"`
	Snapshot            *string            `json:"snapshot"`
	Labels              map[string]string  `json:"labels"`
	Env                 *map[string]string `json:"env,omitempty"`
	Public              bool               `json:"public"`
	Target              string             `json:"target"`
	CPU                 int                `json:"cpu"`
	GPU                 int                `json:"gpu"`
	Memory              int                `json:"memory"`
	Disk                int                `json:"disk"`
	AutoStopInterval    int                `json:"autoStopInterval"`
	AutoPauseInterval   int                `json:"autoPauseInterval"`
	AutoArchiveInterval int                `json:"autoArchiveInterval"`
	AutoDeleteInterval  int                `json:"autoDeleteInterval"`
	AutoDestroyAt       *string            `json:"autoDestroyAt"`
	CreatedAt           string             `json:"createdAt"`
	UpdatedAt           string             `json:"updatedAt"`
	LastActivityAt      string             `json:"lastActivityAt"`
	SandboxClass        string             `json:"sandboxClass"`
	RunnerID            string             `json:"runnerId"`
	ToolboxProxyURL     string             `json:"toolboxProxyUrl"`
}

func (s *Server) toJSON(sb *Sandbox, withEnv bool) sandboxJSON {
	out := sandboxJSON{
		ID: sb.ID, OrganizationID: s.opts.OrganizationID, Name: sb.Name, State: sb.State,
		DesiredState: sb.DesiredState, Recoverable: sb.Recoverable, Labels: maps.Clone(sb.Labels),
		Public: sb.Public, Target: sb.Target, CPU: sb.CPU, GPU: sb.GPU, Memory: sb.Memory, Disk: sb.Disk,
		AutoStopInterval: sb.AutoStop, AutoPauseInterval: sb.AutoPause,
		AutoArchiveInterval: sb.AutoArchive, AutoDeleteInterval: sb.AutoDelete,
		CreatedAt: iso(sb.CreatedAt), UpdatedAt: iso(sb.UpdatedAt), LastActivityAt: iso(sb.LastActivityAt),
		SandboxClass: sb.Class, RunnerID: "runner-1", ToolboxProxyURL: s.opts.ToolboxProxyURL,
	}
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	out.ErrorReason, out.Snapshot = orNull(sb.ErrorReason), orNull(sb.Snapshot)
	if withEnv {
		env := maps.Clone(sb.Env)
		if env == nil {
			env = map[string]string{}
		}
		out.Env = &env
	}
	if !sb.AutoDestroyAt.IsZero() {
		out.AutoDestroyAt = orNull(iso(sb.AutoDestroyAt))
	}
	return out
}

// orNull is v, nil (null, or omitted) when v is "".
func orNull(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}

func iso(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
