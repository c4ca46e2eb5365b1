package daytona

import (
	"errors"
	"maps"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Reading Daytona's sandboxes into lifecycle.Sandbox values: what each
// state means (class), the guard timer and the expiry.

// class is what a Daytona state means to Sandman.
type class int

const (
	classTransitional class = iota
	classRunning
	classResumable
	classGone
)

// classify maps a sandbox to its class (see the package doc).
func classify(d sandboxBody) class {
	if d.DesiredState == "destroyed" {
		return classGone // being deleted: nothing brings it back
	}
	switch d.State {
	case "started":
		return classRunning
	case "stopped", "paused", "archived":
		return classResumable
	case "error":
		if d.Recoverable {
			return classResumable
		}
		return classGone
	case "build_failed", "destroyed":
		return classGone
	}
	return classTransitional
}

// goneError reports a sandbox in a state nothing brings back.
func goneError(op string, d sandboxBody) error {
	msg := "sandbox is " + d.State
	if d.DesiredState == "destroyed" && d.State != "destroyed" {
		msg += ", being deleted"
	}
	if d.ErrorReason != "" {
		msg += ": " + d.ErrorReason
	}
	return lifecycle.NewProviderError(lifecycle.ErrSandboxGone, op, d.ID, errors.New(msg))
}

// pollWait returns the wait before the next read of something in a
// transitional state that has been waited for since begun: a tenth of the
// time waited so far in whole milliseconds, at least firstPoll and at most PollInterval (the
// smaller of the two when PollInterval is under firstPoll). A create of
// 1.5 s is seen started within about 150 ms of it (about 14 reads; a
// fixed 1 s interval saw it up to a second late), while a wait of minutes
// (a restore from archive, a snapshot's activation) is read once per
// PollInterval.
func (p *Provider) pollWait(begun time.Time) time.Duration {
	w := max((p.cfg.Clock.Now().Sub(begun) / 10).Truncate(time.Millisecond), firstPoll)
	return min(w, p.cfg.PollInterval)
}

// transitionalError reports a sandbox whose state is still changing.
func (p *Provider) transitionalError(op string, d sandboxBody) error {
	return lifecycle.Transientf(op, d.ID, p.cfg.PollInterval, "sandbox is %s (desired %s)", d.State, d.DesiredState)
}

// guardMinutes returns the guard interval for a provider-side timeout:
// whole minutes rounded up, at least 1.
func guardMinutes(d time.Duration) int64 {
	m := int64((d + time.Minute - 1) / time.Minute)
	return max(m, 1)
}

func minutesOf(d time.Duration) *int64 {
	if d <= 0 {
		return nil
	}
	m := guardMinutes(d)
	return &m
}

// guard returns the sandbox's guard interval in minutes: autoPauseInterval
// in PausePause mode when set, else autoStopInterval.
func (p *Provider) guard(d sandboxBody) int64 {
	if p.cfg.PauseMode == PausePause && d.AutoPauseInterval > 0 {
		return d.AutoPauseInterval
	}
	return d.AutoStopInterval
}

// expiresAt is when Daytona's guard stops (or pauses) a started sandbox:
// lastActivityAt plus the interval; zero when the guard is off.
func (p *Provider) expiresAt(d sandboxBody) time.Time {
	m := p.guard(d)
	if m <= 0 || d.LastActivityAt.IsZero() {
		return time.Time{}
	}
	return d.LastActivityAt.UTC().Add(time.Duration(m) * time.Minute)
}

// sandbox converts a settled running or resumable sandbox to lifecycle's
// Sandbox (without PreviewURL).
func (p *Provider) sandbox(d sandboxBody) lifecycle.Sandbox {
	sb := lifecycle.Sandbox{ID: d.ID, Template: d.Snapshot, StartedAt: d.CreatedAt.UTC(), Metadata: d.Labels}
	if t, ok := d.Labels[TemplateLabel]; ok { // made from a checkpoint's snapshot, or forked
		sb.Template, sb.Metadata = t, maps.Clone(d.Labels)
		delete(sb.Metadata, TemplateLabel)
	}
	if classify(d) == classRunning {
		sb.State, sb.ExpiresAt = lifecycle.SandboxRunning, p.expiresAt(d)
	} else {
		sb.State, sb.PausedAt = lifecycle.SandboxPaused, d.UpdatedAt.UTC()
	}
	return sb
}

// previewPort is the preview port of template.
func (p *Provider) previewPort(template string) int {
	if port, ok := p.cfg.PreviewPorts[template]; ok && port > 0 {
		return port
	}
	return p.cfg.PreviewPort
}
