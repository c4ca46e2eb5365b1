// Package dynamo is the DynamoDB adapter: Store implements lifecycle.Store on
// the single table that internal/dynamo/tabledef defines, CreateTable and DeleteTable
// manage that table (tests, the local stack, docs), and NewClient builds the
// SDK client for AWS or for DynamoDB Local.
//
// # Items
//
// Every item has the string keys pk and sk (tabledef.PartitionKey,
// tabledef.SortKey):
//
//	session  pk "SESSION#<id>"       sk "SESSION"
//	API key  pk "APIKEY#<sha256 hex>" sk "APIKEY"   hash, account_id, created_at
//	claim    pk "CLAIM#<key>"        sk "CLAIM"     value, claimed_at, ttl (N, epoch seconds)
//	checkpoint pk "SESSION#<id>"     sk "CHECKPOINT#<checkpoint id>" (checkpoint.go)
//
// A session item (sessionItem) holds id, account_id, provider, template,
// metadata (M of S), sandbox_id, preview_url, state, version (N), reason,
// idle_timeout_ms and max_lifetime_ms (N, durations in milliseconds), and the
// times created_at, updated_at, last_activity_at, idle_deadline, hold_until,
// running_since, paused_at, lease_expires_at, sandbox_expires_at,
// last_provider_event_at, state_changed_at.
//
// Times are stored as fixed-width RFC 3339 UTC strings with nanoseconds,
// "2006-01-02T15:04:05.000000000Z" (timeLayout): exact to the nanosecond and
// ordered the same way as strings and as times, so a condition such as
// idle_deadline <= :new compares them directly. A zero time is stored as no
// attribute. Empty strings and empty metadata are not stored either.
//
// # Indexes
//
// All indexes are sparse: an item carries an index's key attributes only while
// it belongs to it, and a write that takes a session out of an index removes
// them (UpdateSession writes the whole item with PutItem, so an attribute the
// new item lacks is gone).
//
//	by_sandbox  sandbox_key = "<provider>#<sandbox id>"          while sandbox_id != ""
//	by_owner_keys owner_key = account id,
//	            owner_sort = created_at (timeLayout) + "#" + id  every session (keys only)
//	idle        idle_shard, idle_due_at (+ pause_deadline)       while running, due at Session.PauseDeadline()
//	lease       lease_shard, lease_due_at                        while State.Transitional(), due at LeaseExpiresAt
//	                                                             (resuming with ResumeQueued: at the earlier of it and
//	                                                             StateChangedAt + ResumeRequeueAfter);
//	                                                             while running with its app starting, due at
//	                                                             StateChangedAt + ReadinessRequeueAfter, and
//	                                                             while running with a scheduled checkpoint, at
//	                                                             NextCheckpointAt at the latest (Session.LeaseDue)
//	paused      paused_shard, paused_due_at                      two lifecycle indexes in one (due.go pausedIndexKey):
//	                                                             while a tier transition is due (Session.NextTier:
//	                                                             paused, archived, deleted), at its time (>= 0:
//	                                                             lifecycle.IndexTier); else while paused, at
//	                                                             PausedAt - 10^14 ms (< 0: lifecycle.IndexPaused,
//	                                                             dormancy)
//	checkpoint_lease ckpt_lease_shard, ckpt_lease_due_at         checkpoint items while saving, due at their lease (checkpoint.go)
//
// by_owner_keys projects only the keys, so a write that keeps a session's
// owner keys (a heartbeat, a pause) does not write the account's index
// partition; ListSessions reads the page's items with one consistent
// BatchGetItem. (The first by_owner projected ALL: docs/CAPACITY.md "The
// by_owner index".)
//
// (A due index also requires its due time to be set: a running session with
// no pause deadline is never due, and so is in no due index.)
//
// A due index's shard (N) is Shard(id) = fnv32a(id) % tabledef.Shards and its
// due time (N) is in epoch milliseconds (time.Time.UnixMilli, rounded down).
// FindDue bounds the query by Before rounded down the same way, then drops the
// few sessions due after Before within its millisecond, so it is exact to the
// nanosecond. A session in the idle index also carries pause_deadline, the
// exact Session.PauseDeadline() in timeLayout, for Guard.DueBy's condition.
//
// # Cursors
//
// ListSessions and FindDue cursors are base64url (no padding) of a small JSON
// object: the index name, the shard (FindDue) and the key of the last item
// returned in DynamoDB's attribute-value form. A cursor is checked against the
// index's key schema (and, for ListSessions, the account) before use; any
// other string is CodeInvalid "cursor is not valid".
//
// # Consistency
//
// GetSession and GetAPIKey read strongly consistent. ListSessions,
// FindBySandbox and FindDue read global secondary indexes, which DynamoDB keeps
// eventually consistent: a write may take a moment to show there, and callers
// re-check what they find with a conditional write (Guard.DueBy).
package dynamo
