package vercel

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Reading Vercel's answers into lifecycle.Sandbox values.

// state maps a sandbox's status to a lifecycle state; ok is false when the
// sandbox has lost its state (gone).
func state(sb sandboxJSON) (lifecycle.SandboxState, bool) {
	switch sb.Status {
	case statusRunning, statusPending:
		return lifecycle.SandboxRunning, true
	case statusStopping, statusSnapshotting:
		return lifecycle.SandboxPaused, sb.Persistent
	default: // stopped, failed, aborted, or a status Vercel adds later
		return lifecycle.SandboxPaused, sb.Persistent && sb.CurrentSnapshotID != ""
	}
}

// deadline is a running session's deadline: the sandbox's expiresAt when
// given, else (startedAt, else createdAt) + timeout.
func deadline(sb sandboxJSON, se sessionJSON) time.Time {
	if sb.ExpiresAt > 0 {
		return fromMillis(sb.ExpiresAt)
	}
	start := se.StartedAt
	if start == 0 {
		start = se.CreatedAt
	}
	if start == 0 || se.Timeout == 0 {
		return time.Time{}
	}
	return fromMillis(start + se.Timeout)
}

// sandbox converts an answer of create/get/resume; the preview URL is the
// route of the template's preview port (running only).
func (p *Provider) sandbox(a sandboxAnswer, tmpl Template) (lifecycle.Sandbox, error) {
	st, ok := state(a.Sandbox)
	if !ok {
		return lifecycle.Sandbox{}, fmt.Errorf("sandbox %s is %s without a snapshot to resume from", a.Sandbox.Name, a.Sandbox.Status)
	}
	sb := p.sandboxOf(a.Sandbox, st)
	sb.StartedAt = fromMillis(a.Session.StartedAt)
	if st == lifecycle.SandboxRunning {
		sb.ExpiresAt = deadline(a.Sandbox, a.Session)
		sb.PreviewURL = previewURL(a.Routes, tmpl.previewPort())
	} else if a.Session.StoppedAt > 0 {
		sb.PausedAt = fromMillis(a.Session.StoppedAt)
	}
	return sb, nil
}

// internalTagPrefix starts the tags the adapter keeps for itself: the
// command records (commandTagPrefix) and the checkpoint tag
// (checkpointTag). Sandman's metadata start with "sandman_" instead.
const internalTagPrefix = "sandman-"

// metadataOf returns a sandbox's tags less the adapter's own
// (internalTagPrefix): the metadata Sandman gave it.
func metadataOf(tags map[string]string) map[string]string {
	md := maps.Clone(tags)
	maps.DeleteFunc(md, func(k, _ string) bool { return strings.HasPrefix(k, internalTagPrefix) })
	return md
}

// sandboxOf converts a Sandbox object (as list gives it, without session).
func (p *Provider) sandboxOf(s sandboxJSON, st lifecycle.SandboxState) lifecycle.Sandbox {
	sb := lifecycle.Sandbox{ID: s.Name, Template: p.templateOf(s), State: st, Metadata: metadataOf(s.Tags)}
	switch st {
	case lifecycle.SandboxRunning:
		if s.ExpiresAt > 0 {
			sb.ExpiresAt = fromMillis(s.ExpiresAt)
		}
	case lifecycle.SandboxPaused:
		if s.StatusUpdatedAt > 0 {
			sb.PausedAt = fromMillis(s.StatusUpdatedAt)
		}
	}
	return sb
}

// templateOf names the configured template whose image or runtime the
// sandbox has, or its image when none matches.
func (p *Provider) templateOf(s sandboxJSON) string {
	for _, name := range slices.Sorted(maps.Keys(p.cfg.Templates)) {
		t := p.cfg.Templates[name]
		if (t.Runtime != "" && t.Runtime == s.Runtime) || (t.Image != "" && t.Image == s.Image) {
			return name
		}
	}
	return orString(s.Image, s.Runtime)
}

// previewURL returns the URL of port's route ("" when there is none): its
// url, or https://<subdomain>.vercel.run as the SDK's domain(p) builds it.
func previewURL(routes []route, port int) string {
	for _, r := range routes {
		if r.Port != port {
			continue
		}
		if r.URL != "" {
			return r.URL
		}
		if r.Subdomain != "" {
			return "https://" + r.Subdomain + ".vercel.run"
		}
	}
	return ""
}

// templateFor returns the template a sandbox was made from, or the
// default one (preview port DefaultPreviewPort).
func (p *Provider) templateFor(a sandboxAnswer) Template {
	if t, ok := p.cfg.Templates[p.templateOf(a.Sandbox)]; ok {
		return t
	}
	return Template{}
}

// goneError reports a sandbox that exists but whose state cannot come back.
func goneError(op string, a sandboxAnswer) error {
	return lifecycle.NewProviderError(lifecycle.ErrSandboxGone, op, a.Sandbox.Name,
		fmt.Errorf("its session is %s and there is no snapshot to resume from", a.Sandbox.Status))
}

// validName reports whether name is a Vercel sandbox name: 1 to 128 of
// a-z, A-Z, 0-9, '_' and '-' (docs/providers/vercel.md).
func validName(name string) bool {
	if name == "" || len(name) > 128 {
		return false
	}
	for _, c := range []byte(name) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

// millis returns d in ms.
func millis(d time.Duration) int64 { return d.Milliseconds() }

func fromMillis(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

func orString(s, def string) string {
	if s != "" {
		return s
	}
	return def
}
