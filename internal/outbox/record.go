// Package outbox publishes lifecycle events from the sessions table's change
// stream: the committed session item is the record of a transition (an
// outbox), and a stream consumer turns each transition into its
// lifecycle.Event (docs/DESIGN.md "Events out"). Delivery is at least once and
// never depends on the request that made the change.
//
// In AWS, DynamoDB Streams (view type NEW_AND_OLD_IMAGES) invoke the
// publisher function with batches of records (Handler, aws-lambda-go's
// events.DynamoDBEvent); locally a Poller reads DynamoDB Local's stream with
// the dynamodbstreams client. Both decode records into Changes and hand them
// to Publish, which keeps only real transitions:
//
//   - the record is an INSERT or MODIFY of a session item (pk "SESSION#<id>",
//     sk "SESSION"); API keys, claims and removals are not transitions;
//   - or of a checkpoint item (sk "CHECKPOINT#<id>") whose state became
//     ready or failed: a checkpoint event ("Checkpoint Ready" / "Checkpoint
//     Failed", docs/CHECKPOINTS.md "Events", checkpoint.go), with event_id
//     "<checkpoint_id>:<version>";
//   - the new image's state differs from the old image's (an INSERT has no
//     old state: the event's from is ""). Heartbeats, timeout refreshes and
//     other writes that keep the state are not transitions;
//   - or the state stayed running and readiness changed to ready or failed:
//     a readiness event ("Session Ready" / "Session Not Ready",
//     docs/READINESS.md "Events"), timed by updated_at.
//
// The event is built from the new image alone: event_id
// "<session_id>:<version>" (lifecycle.EventID), from (the old image's
// state), to, version, reason, actor, account and sandbox ids, and time (the
// transition's state_changed_at, else updated_at); and from the old image
// alone, Since (when the session entered from) and CheckpointBytes (what
// it stored meanwhile). A record delivered twice
// therefore yields the same event, with the same event_id, twice; consumers
// dedupe on it.
//
// Attribute names are those of internal/dynamo's session item; this package
// reads them from the image without importing the store.
package outbox

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Session item attributes read from a stream image (internal/dynamo's
// sessionItem tags).
const (
	attrID             = "id"
	attrAccountID      = "account_id"
	attrSandboxID      = "sandbox_id"
	attrState          = "state"
	attrVersion        = "version"
	attrReason         = "reason"
	attrLost           = "lost"
	attrActor          = "actor"
	attrUpdatedAt      = "updated_at"
	attrStateChangedAt = "state_changed_at"
	attrProvider       = "provider"
	attrReadiness      = "readiness"
	attrReadyDetail    = "readiness_detail"
	attrCheckpointB    = "checkpoint_bytes"

	sessionPrefix = "SESSION#"
	sessionSort   = "SESSION"
)

// Stream record event names (DynamoDB Streams' eventName).
const (
	OpInsert = "INSERT"
	OpModify = "MODIFY"
	OpRemove = "REMOVE"
)

// Image is the scalar attributes of one item image: attribute name → value
// as text (S values as they are, N values as their decimal text). Other
// attribute types (maps, lists, sets, binary) are left out: no event field
// needs them.
type Image map[string]string

// Change is one stream record, decoded.
type Change struct {
	// Sequence is the record's sequence number within its shard: the
	// ItemIdentifier of a batch item failure and the local checkpoint.
	Sequence string
	// Op is OpInsert, OpModify or OpRemove.
	Op string
	// Old and New are the item before and after the write; nil when the
	// record has none (an INSERT has no Old, a REMOVE no New).
	Old, New Image
}

// FromLambda decodes a record of the event a DynamoDB Streams event source
// mapping sends to a Lambda function.
func FromLambda(r events.DynamoDBEventRecord) Change {
	return Change{
		Sequence: r.Change.SequenceNumber,
		Op:       r.EventName,
		Old:      lambdaImage(r.Change.OldImage),
		New:      lambdaImage(r.Change.NewImage),
	}
}

// FromStream decodes a record returned by the dynamodbstreams GetRecords
// call (DynamoDB Local's stream).
func FromStream(r streamtypes.Record) Change {
	c := Change{Op: string(r.EventName)}
	if d := r.Dynamodb; d != nil {
		if d.SequenceNumber != nil {
			c.Sequence = *d.SequenceNumber
		}
		c.Old, c.New = streamImage(d.OldImage), streamImage(d.NewImage)
	}
	return c
}

func lambdaImage(m map[string]events.DynamoDBAttributeValue) Image {
	if m == nil {
		return nil
	}
	img := make(Image, len(m))
	for k, v := range m {
		switch v.DataType() {
		case events.DataTypeString:
			img[k] = v.String()
		case events.DataTypeNumber:
			img[k] = v.Number()
		}
	}
	return img
}

func streamImage(m map[string]streamtypes.AttributeValue) Image {
	if m == nil {
		return nil
	}
	img := make(Image, len(m))
	for k, v := range m {
		switch v := v.(type) {
		case *streamtypes.AttributeValueMemberS:
			img[k] = v.Value
		case *streamtypes.AttributeValueMemberN:
			img[k] = v.Value
		}
	}
	return img
}

// isSession reports whether img is a session item.
func (img Image) isSession() bool {
	return strings.HasPrefix(img[tabledef.PartitionKey], sessionPrefix) && img[tabledef.SortKey] == sessionSort
}

// Event returns the lifecycle event of c, and false when c is not a
// transition (see the package doc). Errors: a session item whose version or
// times cannot be read (a record no retry will fix).
func (c Change) Event() (lifecycle.Event, bool, error) {
	if c.Op != OpInsert && c.Op != OpModify {
		return lifecycle.Event{}, false, nil
	}
	if c.New.isCheckpoint() {
		return c.checkpointEvent()
	}
	if !c.New.isSession() {
		return lifecycle.Event{}, false, nil
	}
	var from lifecycle.State
	if c.Old != nil {
		from = lifecycle.State(c.Old[attrState])
	}
	to := lifecycle.State(c.New[attrState])
	readiness := lifecycle.Readiness(c.New[attrReadiness])
	readinessEvent := to == from && to == lifecycle.StateRunning && string(readiness) != c.Old[attrReadiness] &&
		(readiness == lifecycle.ReadinessReady || readiness == lifecycle.ReadinessFailed)
	if to == from && !readinessEvent {
		return lifecycle.Event{}, false, nil
	}
	id := c.New[attrID]
	version, err := strconv.ParseInt(c.New[attrVersion], 10, 64)
	if err != nil || id == "" {
		return lifecycle.Event{}, false, fmt.Errorf("stream record %s: session item %q has no readable id and version (%q)",
			c.Sequence, c.New[tabledef.PartitionKey], c.New[attrVersion])
	}
	at := c.New[attrStateChangedAt]
	if at == "" || readinessEvent {
		at = c.New[attrUpdatedAt]
	}
	var t time.Time
	if at != "" {
		if t, err = time.Parse(time.RFC3339Nano, at); err != nil {
			return lifecycle.Event{}, false, fmt.Errorf("stream record %s: session %s: parse %s: %w", c.Sequence, id, attrStateChangedAt, err)
		}
	}
	since, err := sinceOf(c)
	if err != nil {
		return lifecycle.Event{}, false, err
	}
	ev := lifecycle.Event{
		Provider:  c.New[attrProvider],
		Since:     since,
		EventID:   lifecycle.EventID(id, version),
		SessionID: id,
		AccountID: c.New[attrAccountID],
		SandboxID: c.New[attrSandboxID],
		From:      from,
		To:        to,
		Version:   version,
		Reason:    c.New[attrReason],
		Actor:     c.New[attrActor],
		Time:      t.UTC(),
	}
	if b := c.Old[attrCheckpointB]; b != "" {
		if ev.CheckpointBytes, err = strconv.ParseInt(b, 10, 64); err != nil {
			return lifecycle.Event{}, false, fmt.Errorf("stream record %s: session %s: parse %s: %w", c.Sequence, id, attrCheckpointB, err)
		}
	}
	if readinessEvent {
		// Since stays when the session became running: the timeline's wait
		// for the app. The usage counters accrue nothing for a readiness
		// event (lifecycle.UsageDeltas skips it).
		ev.Readiness, ev.ReadinessDetail = readiness, c.New[attrReadyDetail]
	}
	if ev.Reason == lifecycle.ReasonLost {
		ev.Lost = c.New[attrLost] // as lifecycle.NewEvent: how, the checkpoint and its age
	}
	return ev, true, nil
}

// sinceOf returns when the session entered the old image's state: its
// state_changed_at (else updated_at); zero without an old image (a create).
// It feeds the usage counters and the timeline's durations
// (lifecycle.Event.Since).
func sinceOf(c Change) (time.Time, error) {
	at := c.Old[attrStateChangedAt]
	if at == "" {
		at = c.Old[attrUpdatedAt]
	}
	if at == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return time.Time{}, fmt.Errorf("stream record %s: old image: parse %s: %w", c.Sequence, attrStateChangedAt, err)
	}
	return t.UTC(), nil
}
