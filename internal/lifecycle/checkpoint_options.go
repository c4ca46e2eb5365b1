package lifecycle

import "time"

// CheckpointOptions are a create's per-session checkpoint options
// (docs/CHECKPOINTS.md "Automatic checkpoints"); a nil field takes the
// deployment's default (Config.CheckpointOnPause, CheckpointEvery,
// CheckpointsKeep).
type CheckpointOptions struct {
	// OnPause: an automatic pause also records a checkpoint.
	OnPause *bool
	// EverySeconds: a checkpoint every that many seconds of activity
	// while running; 0: off, else MinCheckpointEvery..MaxCheckpointEvery.
	EverySeconds *int64
	// Keep: how many automatic checkpoints are kept, 1..MaxCheckpointsKeep.
	Keep *int
}

// Workspace is the folder of a sandbox that an archive keeps, and the
// patterns left out of it (internal/archive's exclude rules).
type Workspace struct {
	Dir      string // absolute in the sandbox
	Excludes []string
}

// DefaultWorkspaceDir is the workspace of a template no configuration
// names (Config.ArchiveWorkspace): the app folder of the providers' base
// images.
const DefaultWorkspaceDir = "/home/user/app"

// applyCheckpointOptions sets sess's checkpoint options from in over the
// deployment's defaults. Errors: invalid naming the field.
func (s *Service) applyCheckpointOptions(sess *Session, in CheckpointOptions) error {
	sess.CheckpointOnPause, sess.CheckpointEvery, sess.CheckpointsKeep = s.cfg.CheckpointOnPause, s.cfg.CheckpointEvery, s.cfg.CheckpointsKeep
	if in.OnPause != nil {
		sess.CheckpointOnPause = *in.OnPause
	}
	if in.EverySeconds != nil {
		d := time.Duration(*in.EverySeconds) * time.Second
		if *in.EverySeconds < 0 || d != 0 && (d < MinCheckpointEvery || d > MaxCheckpointEvery) {
			return Errorf(CodeInvalid, "checkpoint_every_seconds must be 0 (off) or between %d and %d",
				int64(MinCheckpointEvery/time.Second), int64(MaxCheckpointEvery/time.Second))
		}
		sess.CheckpointEvery = d
	}
	if in.Keep != nil {
		if *in.Keep < 1 || *in.Keep > MaxCheckpointsKeep {
			return Errorf(CodeInvalid, "checkpoints_keep must be between 1 and %d", MaxCheckpointsKeep)
		}
		sess.CheckpointsKeep = *in.Keep
	}
	return nil
}

// workspace returns the workspace an archive of template keeps.
func (s *Service) workspace(template string) Workspace {
	if w, ok := s.cfg.ArchiveWorkspaces[template]; ok && w.Dir != "" {
		return w
	}
	return s.cfg.ArchiveWorkspace
}
