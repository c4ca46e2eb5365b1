package outbox

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Checkpoint item attributes read from a stream image (internal/dynamo's
// checkpointItem tags); the others are the session's names.
const (
	checkpointSortPrefix = "CHECKPOINT#"
	attrSessionID        = "session_id"
	attrKind             = "kind"
	attrKeeps            = "keeps"
	attrTrigger          = "trigger"
	attrLabel            = "label"
	attrSizeBytes        = "size_bytes"
	attrExpiresAt        = "expires_at"
	attrSourceSandbox    = "source_sandbox_id"
)

// isCheckpoint reports whether img is a checkpoint item.
func (img Image) isCheckpoint() bool {
	return strings.HasPrefix(img[tabledef.PartitionKey], sessionPrefix) &&
		strings.HasPrefix(img[tabledef.SortKey], checkpointSortPrefix)
}

// checkpointEvent returns the event of a checkpoint item's write that made
// it ready or failed (from another state, or on its insert), and false for
// any other write. Errors: an item whose version or times cannot be read.
func (c Change) checkpointEvent() (lifecycle.Event, bool, error) {
	to := lifecycle.CheckpointState(c.New[attrState])
	if to != lifecycle.CheckpointReady && to != lifecycle.CheckpointFailed || c.Old[attrState] == string(to) {
		return lifecycle.Event{}, false, nil
	}
	version, err := strconv.ParseInt(c.New[attrVersion], 10, 64)
	if err != nil || c.New[attrID] == "" {
		return lifecycle.Event{}, false, fmt.Errorf("stream record %s: checkpoint item %q has no readable id and version (%q)",
			c.Sequence, c.New[tabledef.SortKey], c.New[attrVersion])
	}
	cp := &lifecycle.Checkpoint{ID: c.New[attrID], SessionID: c.New[attrSessionID], AccountID: c.New[attrAccountID],
		State: to, Reason: c.New[attrReason], Kind: lifecycle.CheckpointKind(c.New[attrKind]), Keeps: lifecycle.Keeps(c.New[attrKeeps]),
		Trigger: lifecycle.CheckpointTrigger(c.New[attrTrigger]), Label: c.New[attrLabel],
		SourceSandboxID: c.New[attrSourceSandbox], Version: version}
	if v := c.New[attrSizeBytes]; v != "" {
		if cp.SizeBytes, err = strconv.ParseInt(v, 10, 64); err != nil {
			return lifecycle.Event{}, false, fmt.Errorf("stream record %s: checkpoint %s: parse %s: %w", c.Sequence, cp.ID, attrSizeBytes, err)
		}
	}
	for _, f := range []struct {
		name string
		dst  *time.Time
	}{{attrUpdatedAt, &cp.UpdatedAt}, {attrExpiresAt, &cp.ExpiresAt}} {
		if v := c.New[f.name]; v != "" {
			if *f.dst, err = time.Parse(time.RFC3339Nano, v); err != nil {
				return lifecycle.Event{}, false, fmt.Errorf("stream record %s: checkpoint %s: parse %s: %w", c.Sequence, cp.ID, f.name, err)
			}
		}
	}
	return lifecycle.NewCheckpointEvent(cp), true, nil
}
