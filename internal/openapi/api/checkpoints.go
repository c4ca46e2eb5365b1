package api

// Checkpoint is a checkpoint as the API shows it (docs/CHECKPOINTS.md):
// a saved state of one session's sandbox. state is saving, ready, failed
// or expired; reason says why a failed or expired one is so (null
// otherwise); kind is snapshot (the provider's) or archive (Sandman's tar
// + zstd of the workspace); keeps is filesystem or filesystem+memory
// ("" while saving); trigger is api, pause or schedule; size_bytes is 0
// while unknown; expires_at is null for one kept until deleted.
type Checkpoint struct {
	ID        string            `json:"id"`
	SessionID string            `json:"session_id"`
	CreatedAt *string           `json:"created_at"`
	Label     string            `json:"label"`
	Metadata  map[string]string `json:"metadata"`
	Kind      string            `json:"kind"`
	Keeps     string            `json:"keeps"`
	SizeBytes int64             `json:"size_bytes"`
	State     string            `json:"state"`
	Reason    *string           `json:"reason"`
	ExpiresAt *string           `json:"expires_at"`
	Pinned    bool              `json:"pinned"`
	Trigger   string            `json:"trigger"`
}

// CheckpointList is one page of GET /v1/sessions/{id}/checkpoints, newest
// first; next_cursor is null on the last page.
type CheckpointList struct {
	Checkpoints []Checkpoint `json:"checkpoints"`
	NextCursor  *string      `json:"next_cursor"`
}

// ForkOrigin is what a fork was made from: the source session and its
// checkpoint.
type ForkOrigin struct {
	SessionID    string `json:"session_id"`
	CheckpointID string `json:"checkpoint_id"`
}
