package daytonatest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
	"github.com/sandmanhq/sandman/internal/provider/internal/sandboxfs"
)

// Creating, reading and listing sandboxes.

// createBody is POST /sandbox's body, field names exactly as in daytona.md.
type createBody struct {
	Snapshot  *string `json:"snapshot"`
	BuildInfo *struct {
		DockerfileContent string   `json:"dockerfileContent"`
		ContextHashes     []string `json:"contextHashes"`
	} `json:"buildInfo"`
	Name                string                                          `json:"name"`
	User                string                                          `json:"user"`
	Env                 map[string]string                               `json:"env"`
	Labels              map[string]string                               `json:"labels"`
	Public              bool                                            `json:"public"`
	Target              string                                          `json:"target"`
	CPU                 *int                                            `json:"cpu"`
	GPU                 *int                                            `json:"gpu"`
	Memory              *int                                            `json:"memory"`
	Disk                *int                                            `json:"disk"`
	AutoStopInterval    *int                                            `json:"autoStopInterval"`
	AutoPauseInterval   *int                                            `json:"autoPauseInterval"`
	AutoArchiveInterval *int                                            `json:"autoArchiveInterval"`
	AutoDeleteInterval  *int                                            `json:"autoDeleteInterval"`
	TTLMinutes          *int                                            `json:"ttlMinutes"`
	Volumes             []struct{ VolumeID, MountPath, Subpath string } `json:"volumes"` // volumeId, mountPath, subpath
	NetworkBlockAll     *bool                                           `json:"networkBlockAll"`
	NetworkAllowList    *string                                         `json:"networkAllowList"`
	DomainAllowList     any                                             `json:"domainAllowList"`
}

var createFields = fakekit.JSONFields(createBody{})

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	b, err := fakekit.ReadBody(w, r)
	if err != nil {
		s.writeError(w, r, http.StatusRequestEntityTooLarge, "request entity too large")
		return
	}
	if len(b) == 0 {
		b = []byte("{}")
	}
	var in createBody
	unknown, err := fakekit.DecodeObject(b, &in, createFields...)
	if err != nil {
		s.writeError(w, r, http.StatusBadRequest, "invalid body: "+err.Error())
		return
	}
	var bad []string
	switch {
	case in.Snapshot != nil && in.BuildInfo != nil:
		bad = append(bad, "cannot specify both snapshot and buildInfo")
	case in.Snapshot != nil && (in.CPU != nil || in.GPU != nil || in.Memory != nil || in.Disk != nil):
		bad = append(bad, "cannot specify sandbox resources when using a snapshot")
	case in.AutoStopInterval != nil && in.AutoPauseInterval != nil && *in.AutoStopInterval != 0 && *in.AutoPauseInterval != 0:
		bad = append(bad, "autoStopInterval and autoPauseInterval cannot both be set")
	}
	for name, v := range map[string]*int{"autoStopInterval": in.AutoStopInterval, "autoPauseInterval": in.AutoPauseInterval,
		"autoArchiveInterval": in.AutoArchiveInterval, "autoDeleteInterval": in.AutoDeleteInterval, "ttlMinutes": in.TTLMinutes} {
		lowest := 0
		if name == "autoDeleteInterval" {
			lowest = -1 // -1 is off
		}
		if v != nil && *v < lowest {
			bad = append(bad, fmt.Sprintf("%s must not be less than %d", name, lowest))
		}
	}
	if in.BuildInfo != nil && !strings.HasPrefix(strings.TrimSpace(in.BuildInfo.DockerfileContent), "FROM ") {
		bad = append(bad, "buildInfo.dockerfileContent must be a Dockerfile")
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		s.writeError(w, r, http.StatusBadRequest, strings.Join(bad, ", "))
		return
	}
	for _, k := range unknown {
		s.NoteOnce(k) // daytona.md does not list it (Daytona's SDK sends a few)
	}
	s.tick()
	now := s.opts.Clock.Now().UTC()
	snapshot, files, class, refused := "", (*sandboxfs.Mem)(nil), "", ""
	if in.Snapshot != nil {
		snapshot = *in.Snapshot
		files, class, refused = s.fromSnapshot(snapshot, now)
	}
	if refused != "" {
		s.writeError(w, r, http.StatusBadRequest, refused)
		return
	}
	if in.Name != "" && slices.ContainsFunc(s.sandboxes.All(), func(o *Sandbox) bool { return o.Name == in.Name }) {
		s.writeError(w, r, http.StatusConflict, fmt.Sprintf("Sandbox with name %s already exists", in.Name))
		return
	}
	id := uuid(s.sandboxes.Next(), 0x8000)
	sb := &Sandbox{files: files,
		ID: id, Name: cmp.Or(in.Name, id), Snapshot: snapshot, Labels: orEmpty(maps.Clone(in.Labels)),
		Env: maps.Clone(in.Env), Public: in.Public, Target: cmp.Or(in.Target, DefaultTarget),
		Class: cmp.Or(class, s.opts.Class), CPU: 1, Memory: 1, Disk: 3, AutoStop: 15, AutoArchive: 10080, AutoDelete: -1,
		CreatedAt: now, UpdatedAt: now, LastActivityAt: now, Token: s.newToken(), DesiredState: StateStarted,
	}
	if (sb.Class == "linux-vm" || sb.Class == "windows") && in.AutoStopInterval == nil && in.AutoPauseInterval == nil {
		sb.AutoStop, sb.AutoPause = 0, 60 // pause-capable classes pause by default
	}
	for dst, v := range map[*int]*int{&sb.AutoStop: in.AutoStopInterval, &sb.AutoPause: in.AutoPauseInterval,
		&sb.AutoArchive: in.AutoArchiveInterval, &sb.AutoDelete: in.AutoDeleteInterval,
		&sb.CPU: in.CPU, &sb.GPU: in.GPU, &sb.Memory: in.Memory, &sb.Disk: in.Disk} {
		fakekit.Set(dst, v)
	}
	if in.TTLMinutes != nil && *in.TTLMinutes > 0 {
		sb.AutoDestroyAt = now.Add(time.Duration(*in.TTLMinutes) * time.Minute)
	}
	s.sandboxes.Put(sb.ID, sb)
	if in.BuildInfo != nil {
		// Answered at once as pending_build, even with BuildTime 0 (it then
		// settles on the next read).
		s.set(sb, StatePendingBuild, now)
		sb.next, sb.settleAt = StateStarted, now.Add(s.opts.BuildTime)
	} else {
		s.begin(sb, StateCreating, StateStarted, s.restoreTime(snapshot), now)
	}
	s.writeJSON(w, http.StatusOK, s.toJSON(sb, true))
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	if sb := s.lookup(w, r, true); sb != nil {
		s.writeJSON(w, http.StatusOK, s.toJSON(sb, true))
	}
}

// list serves GET /sandbox: labels (URL-encoded JSON object, all pairs
// must match), states (repeated; destroyed refused), name and id
// prefixes, limit (1-200, default 100), cursor (opaque, issued here),
// sort and order (createdAt by default, ascending).
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var labels map[string]string
	if v := q.Get("labels"); v != "" && json.Unmarshal([]byte(v), &labels) != nil {
		s.writeError(w, r, http.StatusBadRequest, "Invalid labels JSON format")
		return
	}
	want := map[string]bool{}
	for _, st := range strings.Split(strings.Join(q["states"], ","), ",") {
		if st != "" && (st == StateDestroyed || !slices.Contains(states, st)) {
			s.writeError(w, r, http.StatusBadRequest, fmt.Sprintf("each value in states must be one of the non-destroyed states, got %q", st))
			return
		}
		want[st] = st != ""
	}
	limit, ok := fakekit.Limit(q.Get("limit"), 100, 1, 200)
	if !ok {
		s.writeError(w, r, http.StatusBadRequest, "limit must not be less than 1, limit must not be greater than 200")
		return
	}
	sortBy, order := cmp.Or(q.Get("sort"), "createdAt"), cmp.Or(q.Get("order"), "asc")
	if !slices.Contains([]string{"createdAt", "lastActivityAt", "name", "cpu", "memoryGib", "diskGib"}, sortBy) ||
		(order != "asc" && order != "desc") {
		s.writeError(w, r, http.StatusBadRequest, "sort or order is not valid")
		return
	}
	from := 0
	if v := q.Get("cursor"); v != "" {
		c, ok := fakekit.ReadCursor(v, "c:")
		if n, err := strconv.Atoi(c); ok && err == nil && n >= 0 {
			from = n
		} else {
			s.writeError(w, r, http.StatusBadRequest, "Invalid cursor")
			return
		}
	}
	s.tick()
	all := s.sandboxes.All()
	for _, t := range s.tombstones {
		all = append(all, &t.sb)
	}
	all = slices.DeleteFunc(all, func(sb *Sandbox) bool {
		return (len(q["states"]) > 0 && !want[sb.State]) || !fakekit.HasAll(sb.Labels, labels) ||
			!strings.HasPrefix(sb.Name, q.Get("name")) || !strings.HasPrefix(sb.ID, q.Get("id"))
	})
	slices.SortStableFunc(all, func(a, b *Sandbox) int {
		c := 0
		switch sortBy {
		case "lastActivityAt":
			c = a.LastActivityAt.Compare(b.LastActivityAt)
		case "name":
			c = strings.Compare(a.Name, b.Name)
		}
		if c = cmp.Or(c, s.sandboxes.Of(a.ID)-s.sandboxes.Of(b.ID)); order == "desc" {
			return -c
		}
		return c
	})
	all = all[min(from, len(all)):]
	var next *string
	if len(all) > limit {
		c := fakekit.Cursor("c:", strconv.Itoa(from+limit))
		next, all = &c, all[:limit]
	}
	items := make([]sandboxJSON, 0, len(all))
	for _, sb := range all {
		items = append(items, s.toJSON(sb, false))
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"items": items, "nextCursor": next})
}
