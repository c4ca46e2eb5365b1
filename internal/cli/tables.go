package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// The tables the commands print without -o json.

// orDash returns *p, or "-" for null or "".
func orDash(p *string) string {
	if p == nil || *p == "" {
		return "-"
	}
	return *p
}

func rows(w io.Writer, kv [][2]string) {
	for _, r := range kv {
		fmt.Fprintf(w, "%s\t%s\n", r[0], r[1])
	}
}

func sessionTable(w io.Writer, s Session) {
	meta := make([]string, 0, len(s.Metadata))
	for k, v := range s.Metadata {
		meta = append(meta, k+"="+v)
	}
	slices.Sort(meta)
	m := strings.Join(meta, ",")
	seconds := func(n int64, zero string) string {
		if n == 0 {
			return zero
		}
		return (time.Duration(n) * time.Second).String()
	}
	// Every field of the API's session (internal/openapi/api.Session).
	rows(w, [][2]string{
		{"id", s.ID}, {"account_id", s.AccountID}, {"state", s.State}, {"reason", s.Reason}, {"provider", s.Provider},
		{"template", s.Template}, {"sandbox_id", orDash(s.SandboxID)}, {"preview_url", orDash(s.PreviewURL)},
		{"idle_timeout", (time.Duration(s.IdleTimeoutSeconds) * time.Second).String()},
		{"max_lifetime", seconds(s.MaxLifetimeSeconds, "none")},
		{"away_timeout", seconds(s.AwayTimeoutSeconds, "off")}, {"away_deadline", orDash(s.AwayDeadline)},
		{"pause_deadline", orDash(s.PauseDeadline)}, {"idle_deadline", orDash(s.IdleDeadline)},
		{"last_activity_at", orDash(s.LastActivityAt)}, {"running_since", orDash(s.RunningSince)},
		{"paused_at", orDash(s.PausedAt)}, {"sandbox_expires_at", orDash(s.SandboxExpiresAt)},
		{"created_at", orDash(s.CreatedAt)}, {"updated_at", orDash(s.UpdatedAt)},
		{"version", fmt.Sprint(s.Version)}, {"metadata", orDash(&m)}, {"app", appSummary(s.App)},
		{"readiness", orDash(s.Readiness)}, {"readiness_detail", orDash(s.ReadinessDetail)}, {"ready_at", orDash(s.ReadyAt)},
		{"resume_on_return", fmt.Sprint(s.ResumeOnReturn)}, {"from_pool", fmt.Sprint(s.FromPool)},
		{"forked_from", forkSummary(s.ForkedFrom)}, {"checkpoint_on_pause", fmt.Sprint(s.CheckpointOnPause)},
		{"checkpoint_every", seconds(s.CheckpointEverySeconds, "off")}, {"checkpoints_keep", fmt.Sprint(s.CheckpointsKeep)},
		{"restore_checkpoint_id", orDash(s.RestoreCheckpointID)}, {"restore_error", orDash(s.RestoreError)},
		{"archive_after", seconds(s.ArchiveAfterSeconds, "never")}, {"delete_after", seconds(s.DeleteAfterSeconds, "never")},
		{"tier_error", orDash(s.TierError)},
		{"idle_policy", s.IdlePolicy}, {"pause_deadline_why", orDash(s.PauseDeadlineWhy)}, {"pre_resume_at", orDash(s.PreResumeAt)},
		{"on_lost", s.OnLost}, {"recovery", recoverySummary(s.Recovery)},
	})
}

// recoverySummary is a lost session's recovery in progress, "-" for none.
func recoverySummary(r *api.Recovery) string {
	if r == nil {
		return "-"
	}
	if r.CheckpointID == nil {
		return r.Lost + ", recreating from the template"
	}
	return r.Lost + ", restoring " + *r.CheckpointID + " of " + orDash(r.CheckpointCreatedAt)
}

// forkSummary is what a fork was made from, "-" for no fork.
func forkSummary(f *api.ForkOrigin) string {
	if f == nil {
		return "-"
	}
	return f.SessionID + " at " + f.CheckpointID
}

// appSummary is one line for a session's app spec: the start command, the
// port and ready path, "-" without an app.
func appSummary(a *api.App) string {
	if a == nil {
		return "-"
	}
	return fmt.Sprintf("%q on port %d, ready at %s within %s", a.StartCommand, a.Port, a.ReadyPath,
		time.Duration(a.ReadyTimeoutSeconds)*time.Second)
}

func statusTable(w io.Writer, s Status) {
	rows(w, [][2]string{
		{"session_id", s.SessionID}, {"state", s.State}, {"sandbox_paused", fmt.Sprint(s.SandboxPaused)},
		{"has_snapshot", fmt.Sprint(s.HasSnapshot)}, {"preview_url", orDash(s.PreviewURL)},
		{"last_activity_at", orDash(s.Lifecycle.LastActivityAt)}, {"pause_deadline", orDash(s.Lifecycle.PauseDeadline)},
		{"sandbox_expires_at", orDash(s.Lifecycle.SandboxExpiresAt)}, {"server_time", orDash(s.Lifecycle.ServerTime)},
	})
}

func listTable(w io.Writer, l SessionList) {
	fmt.Fprintln(w, "ID\tSTATE\tPROVIDER\tTEMPLATE\tCREATED\tPREVIEW_URL")
	for _, s := range l.Sessions {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.State, s.Provider, s.Template, orDash(s.CreatedAt), orDash(s.PreviewURL))
	}
	if l.NextCursor != nil {
		fmt.Fprintf(w, "\nmore: --cursor %s\n", *l.NextCursor)
	}
}

// eventsTable writes one row per timeline entry, newest first.
func eventsTable(w io.Writer, l SessionEventList) {
	fmt.Fprintln(w, "TIME\tFROM\tTO\tREASON\tACTOR\tAFTER\tREADINESS")
	for _, e := range l.Events {
		after := "-"
		if e.DurationMS != nil {
			after = (time.Duration(*e.DurationMS) * time.Millisecond).String()
		}
		from := e.From
		if from == "" {
			from = "(new)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Time, from, e.To, e.Reason, orDash(e.Actor), after,
			oneLine(strings.TrimSpace(orDash(e.Readiness)+" "+derefOr(e.ReadinessDetail, ""))))
	}
	if l.NextCursor != nil {
		fmt.Fprintf(w, "\nmore: --cursor %s\n", *l.NextCursor)
	}
}

// derefOr returns *p, or or for nil.
func derefOr(p *string, or string) string {
	if p == nil {
		return or
	}
	return *p
}
