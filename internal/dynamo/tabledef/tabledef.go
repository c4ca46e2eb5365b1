// Package tabledef is the one definition of the sessions table's key names,
// indexes and TTL attribute. The DynamoDB store (internal/dynamo), its
// table-creation helper and the CDK stack (infra/) all read it, so the table
// the code expects and the table the stack deploys cannot drift.
//
// Items (single table; pk/sk are strings):
//
//	session         pk "SESSION#<id>"                   sk "SESSION"
//	API key         pk "APIKEY#<sha256 hex>"             sk "APIKEY"
//	claim           pk "CLAIM#<key>"                    sk "CLAIM"    (ttl set)
//	connection      pk "CONN#<connection id>"           sk "CONN"     (ttl set)
//	slot counter    pk "ACCOUNT#<account id>"           sk "RUNNING"
//	usage day       pk "ACCOUNT#<account id>"           sk "USAGE#D#<day>#<provider>"
//	usage session   pk "ACCOUNT#<account id>"           sk "USAGE#S#<day>#<session id>"
//	usage marker    pk "SESSION#<id>"                   sk "USAGE"
//	recent event    pk "SESSION#<id>"                   sk "EVENT#<version>" (ttl set)
//	checkpoint      pk "SESSION#<id>"                   sk "CHECKPOINT#<checkpoint id>"
//	idle histogram  pk "IDLE#<key>"                     sk "IDLE" (lifecycle.IdleKeys; internal/dynamo idle.go)
//	webhook endpoint pk "WHEP#<account id>"             sk "<endpoint id>"   (internal/delivery/dynamostore)
//	webhook delivery pk "WHDLV#<endpoint id>"           sk "<delivery id>"   (ttl set: 30 days)
//	parked delivery pk "WHPARK#<endpoint id>"           sk "<delivery id>"   (ttl set: the delivery's)
//	endpoint watch  pk "WHPARK#<endpoint id>"           sk "WATCH"           (ttl set: 30 days)
//
// Indexes (all sparse: an item carries an index's keys only when it belongs):
//
//	by_sandbox  sandbox_key (S "<provider>#<sandbox id>")             ALL
//	by_owner_keys owner_key (S account id), owner_sort (S created_at#id) KEYS_ONLY, newest first by descending query
//	by_owner_state owner_state (S "<account id>#<state>"), owner_sort  INCLUDE provider, template, metadata: filtered lists
//	idle        idle_shard (N), idle_due_at (N, epoch ms)   running sessions, due at the pause deadline
//	lease       lease_shard (N), lease_due_at (N, epoch ms) transitional sessions, due at the lease expiry
//	paused      paused_shard (N), paused_due_at (N, epoch ms) paused sessions, due at the pause time
//	by_conn_session conn_session (S session id)              client-channel connections of a session
//	checkpoint_lease ckpt_lease_shard (N), ckpt_lease_due_at (N, epoch ms) saving checkpoints, due at the lease expiry
package tabledef

// Key and attribute names.
const (
	PartitionKey = "pk"
	SortKey      = "sk"
	// TTLAttribute holds an item's expiry in epoch seconds (DynamoDB TTL).
	TTLAttribute = "ttl"
)

// StreamViewType is the view type of the table's DynamoDB stream: both
// images, so the outbox (internal/outbox) sees the state before and after
// every write (docs/DESIGN.md "Events out").
const StreamViewType = "NEW_AND_OLD_IMAGES"

// Shards is the default of how many partitions each due index is spread
// over (the shard is a hash of the session id; internal/dynamo
// Config.Shards, SANDMAN_SHARDS). Changing it on a table with data needs a
// backfill of existing items (dynamo.Store.Reshard).
const Shards = 8

// DeployedShards is the shard count the CDK stack deploys by default
// (SANDMAN_SHARDS, context sandman:shards) and the capacity model's:
// docs/CAPACITY.md sizes it for 1,000,000 running sessions heartbeating
// every 30 s, whose idle-index moves (2 WCU per written heartbeat) need
// at least 84 shards to stay under 80 % of 1,000 WCU/s each. A local table
// keeps Shards.
const DeployedShards = 128

// Attribute types, as DynamoDB names them.
const (
	TypeString = "S"
	TypeNumber = "N"
)

// Index describes one global secondary index. SortKey is "" for a
// partition-key-only index.
type Index struct {
	Name          string
	PartitionKey  string
	PartitionType string
	SortKey       string
	SortType      string
	// Projection is ProjectionKeysOnly, ProjectionInclude or ProjectionAll
	// ("" means all).
	Projection string
	// NonKeyAttributes are the attributes a ProjectionInclude index
	// carries besides the keys.
	NonKeyAttributes []string
}

// Projection types, as DynamoDB names them.
const (
	ProjectionAll      = "ALL"
	ProjectionKeysOnly = "KEYS_ONLY"
	ProjectionInclude  = "INCLUDE"
)

// ProjectionType returns ix's projection, ProjectionAll when unset.
func (ix Index) ProjectionType() string {
	if ix.Projection == "" {
		return ProjectionAll
	}
	return ix.Projection
}

// Index names.
const (
	IndexBySandbox = "by_sandbox"
	// IndexByOwner lists an account's sessions (keys only: the list reads
	// the items themselves; docs/CAPACITY.md "The by_owner index").
	IndexByOwner = "by_owner_keys"
	IndexIdle    = "idle"
	IndexLease   = "lease"
	IndexPaused  = "paused"
	// IndexByOwnerState lists an account's sessions of one state, newest
	// first, with the attributes a list filters on besides the state
	// (provider, template, metadata) so that a filter reads the index
	// alone: GET /v1/sessions?state=… (docs/CAPACITY.md "The
	// by_owner_state index"). Its keys move only when a session changes
	// state; heartbeats never write it.
	IndexByOwnerState = "by_owner_state"
)

// IndexByConnSession holds client-channel connections by session, keyed by
// AttrConnSession (docs/DESIGN.md "Client channel").
const (
	IndexByConnSession = "by_conn_session"
	AttrConnSession    = "conn_session"
)

// IndexCheckpointLease holds the saving checkpoints, due at their lease's
// expiry, so the sweep resolves a save that died (lifecycle.Service.ReconcileCheckpoint)
// without a scan.
const (
	IndexCheckpointLease = "checkpoint_lease"
	AttrCheckpointShard  = "ckpt_lease_shard"
	AttrCheckpointDue    = "ckpt_lease_due_at"
)

// Index key attributes.
const (
	AttrSandboxKey  = "sandbox_key"
	AttrOwnerKey    = "owner_key"
	AttrOwnerSort   = "owner_sort"
	AttrOwnerState  = "owner_state"
	AttrIdleShard   = "idle_shard"
	AttrIdleDue     = "idle_due_at"
	AttrLeaseShard  = "lease_shard"
	AttrLeaseDue    = "lease_due_at"
	AttrPausedShard = "paused_shard"
	AttrPausedDue   = "paused_due_at"
)

// Indexes lists every GSI of the table.
var Indexes = []Index{
	{Name: IndexBySandbox, PartitionKey: AttrSandboxKey, PartitionType: TypeString},
	{Name: IndexByOwner, PartitionKey: AttrOwnerKey, PartitionType: TypeString, SortKey: AttrOwnerSort, SortType: TypeString,
		Projection: ProjectionKeysOnly},
	{Name: IndexIdle, PartitionKey: AttrIdleShard, PartitionType: TypeNumber, SortKey: AttrIdleDue, SortType: TypeNumber},
	{Name: IndexLease, PartitionKey: AttrLeaseShard, PartitionType: TypeNumber, SortKey: AttrLeaseDue, SortType: TypeNumber},
	{Name: IndexPaused, PartitionKey: AttrPausedShard, PartitionType: TypeNumber, SortKey: AttrPausedDue, SortType: TypeNumber},
	{Name: IndexByConnSession, PartitionKey: AttrConnSession, PartitionType: TypeString},
	{Name: IndexCheckpointLease, PartitionKey: AttrCheckpointShard, PartitionType: TypeNumber, SortKey: AttrCheckpointDue, SortType: TypeNumber},
	{Name: IndexByOwnerState, PartitionKey: AttrOwnerState, PartitionType: TypeString, SortKey: AttrOwnerSort, SortType: TypeString,
		Projection: ProjectionInclude, NonKeyAttributes: []string{"provider", "template", "metadata"}},
}

// LegacyOwnerIndex is the account index as it was first deployed: by_owner,
// projecting ALL attributes, so every write of a session (a heartbeat
// included) also wrote the account's index partition. A GSI's projection
// cannot change in place, so IndexByOwner is a new index; the stack keeps
// this one only while a deployed table migrates (docs/CAPACITY.md "The
// by_owner index"). No code reads it.
var LegacyOwnerIndex = Index{Name: "by_owner", PartitionKey: AttrOwnerKey, PartitionType: TypeString,
	SortKey: AttrOwnerSort, SortType: TypeString, Projection: ProjectionAll}
