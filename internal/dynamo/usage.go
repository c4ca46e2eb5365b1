package dynamo

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Usage counters and recent events (lifecycle usage.go), written by the
// publisher from the table's stream:
//
//	account day   pk "ACCOUNT#<account>"  sk "USAGE#D#<day>#<provider>"   running_ms, paused_ms, pauses, resumes,
//	                                                                      checkpoint_mb_ms, archived_mb_ms (N, ADD)
//	session day   pk "ACCOUNT#<account>"  sk "USAGE#S#<day>#<session>"    the same, and provider
//	marker        pk "SESSION#<id>"       sk "USAGE"                      applied_version, applied_part
//	event         pk "SESSION#<id>"       sk "EVENT#<version, 20 digits>" the event, ttl
//
// One transition is one TransactWriteItems: the marker's update, with the
// condition that the session's last applied version is older than the
// event's, the ADDs on the day rows, and the event's put. A redelivered
// event fails the marker's condition and applies nothing. A transition that
// spans more days than fit in one transaction (usageDaysPerWrite, a session
// paused for months) is written in parts, each its own transaction that
// requires the part before it (applied_part), so a redelivery resumes at
// the first part not applied. Concurrent transitions of one account contend
// on its day rows (TransactionConflict) and are retried with a fresh token.
// None of these items is a session item (sk "SESSION"), so the stream
// publisher ignores their own stream records.
const (
	usageDayPrefix     = "USAGE#D#"
	usageSessionPrefix = "USAGE#S#"
	usageMarkerSort    = "USAGE"
	eventSortPrefix    = "EVENT#"
	// usageDaysPerWrite: two rows per day, the marker and the event stay
	// under TransactWriteItems' 100 items.
	usageDaysPerWrite = 40

	attrAppliedVersion = "applied_version"
	attrAppliedPart    = "applied_part"
	attrRunningMS      = "running_ms"
	attrPausedMS       = "paused_ms"
	attrPauses         = "pauses"
	attrResumes        = "resumes"
	attrCheckpointMBMS = "checkpoint_mb_ms"
	attrArchivedMBMS   = "archived_mb_ms"
	attrDay            = "day"
	attrProvider       = "provider"
	attrSessionID      = "session_id"
)

// usageRowItem is a usage row as stored.
type usageRowItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	Day       string `dynamodbav:"day"`
	SessionID string `dynamodbav:"session_id,omitempty"`
	Provider  string `dynamodbav:"provider,omitempty"`
	RunningMS int64  `dynamodbav:"running_ms"` // milliseconds
	PausedMS  int64  `dynamodbav:"paused_ms"`  // milliseconds
	Pauses    int64  `dynamodbav:"pauses"`
	Resumes   int64  `dynamodbav:"resumes"`
	// Stored checkpoint bytes × time, megabyte-milliseconds (absent on
	// rows written before they were counted: 0).
	CheckpointMBMS int64 `dynamodbav:"checkpoint_mb_ms"`
	ArchivedMBMS   int64 `dynamodbav:"archived_mb_ms"`
}

// eventItem is a recorded lifecycle event as stored.
type eventItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	EventID   string `dynamodbav:"event_id"`
	SessionID string `dynamodbav:"session_id"`
	AccountID string `dynamodbav:"account_id"`
	SandboxID string `dynamodbav:"sandbox_id,omitempty"`
	From      string `dynamodbav:"from,omitempty"`
	To        string `dynamodbav:"to"`
	Version   int64  `dynamodbav:"version"`
	Reason    string `dynamodbav:"reason,omitempty"`
	Time      string `dynamodbav:"time"` // timeLayout
	TTL       int64  `dynamodbav:"ttl"`  // epoch seconds (tabledef.TTLAttribute)
	// Since (timeLayout; absent for a create), Actor, Readiness and
	// ReadinessDetail (a readiness event) are lifecycle.Event's.
	Since           string `dynamodbav:"since,omitempty"`
	Actor           string `dynamodbav:"actor,omitempty"`
	Readiness       string `dynamodbav:"readiness,omitempty"`
	ReadinessDetail string `dynamodbav:"readiness_detail,omitempty"`
}

var _ lifecycle.UsageStore = (*Store)(nil)

func eventSort(version int64) string { return fmt.Sprintf("%s%020d", eventSortPrefix, version) }

// RecordTransition applies ev's usage and keeps ev among its session's
// events, at most once per session version (see the comment above).
// Errors: invalid (lifecycle.ValidRecordedEvent), unavailable when the
// table stays contended or throttled, the store's.
func (st *Store) RecordTransition(ctx context.Context, ev lifecycle.Event) error {
	if err := lifecycle.ValidRecordedEvent(ev); err != nil {
		return err
	}
	deltas := lifecycle.UsageDeltas(ev)
	parts := max((len(deltas)+usageDaysPerWrite-1)/usageDaysPerWrite, 1)
	for part := 0; part < parts; part++ {
		chunk := deltas[min(part*usageDaysPerWrite, len(deltas)):min((part+1)*usageDaysPerWrite, len(deltas))]
		items, err := st.usageWrites(ev, part, chunk)
		if err != nil {
			return err
		}
		if err := st.applyUsagePart(ctx, ev, part, items); err != nil {
			return err
		}
	}
	return nil
}

// usageWrites builds one part's transaction items: the marker first.
func (st *Store) usageWrites(ev lifecycle.Event, part int, deltas []lifecycle.UsageDelta) ([]types.TransactWriteItem, error) {
	set := expression.Set(expression.Name(attrAppliedVersion), expression.Value(ev.Version)).
		Set(expression.Name(attrAppliedPart), expression.Value(part))
	var cond expression.ConditionBuilder
	if part == 0 {
		cond = expression.AttributeNotExists(expression.Name(attrAppliedVersion)).
			Or(expression.Name(attrAppliedVersion).LessThan(expression.Value(ev.Version)))
	} else {
		cond = expression.Name(attrAppliedVersion).Equal(expression.Value(ev.Version)).
			And(expression.Name(attrAppliedPart).Equal(expression.Value(part - 1)))
	}
	mx, err := expression.NewBuilder().WithUpdate(set).WithCondition(cond).Build()
	if err != nil {
		return nil, fmt.Errorf("build usage marker update: %w", err)
	}
	items := []types.TransactWriteItem{{Update: &types.Update{
		TableName:                           aws.String(st.table),
		Key:                                 itemKey(sessionPK(ev.SessionID), usageMarkerSort),
		UpdateExpression:                    mx.Update(),
		ConditionExpression:                 mx.Condition(),
		ExpressionAttributeNames:            mx.Names(),
		ExpressionAttributeValues:           mx.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}}
	provider := ev.Provider
	if provider == "" {
		provider = "-"
	}
	add := func(pk, sk string, d lifecycle.UsageDelta, extra func(expression.UpdateBuilder) expression.UpdateBuilder) error {
		u := expression.Add(expression.Name(attrRunningMS), expression.Value(d.RunningMS)).
			Add(expression.Name(attrPausedMS), expression.Value(d.PausedMS)).
			Add(expression.Name(attrPauses), expression.Value(d.Pauses)).
			Add(expression.Name(attrResumes), expression.Value(d.Resumes)).
			Add(expression.Name(attrCheckpointMBMS), expression.Value(d.CheckpointMBMS)).
			Add(expression.Name(attrArchivedMBMS), expression.Value(d.ArchivedMBMS)).
			Set(expression.Name(attrDay), expression.Value(d.Day)).
			Set(expression.Name(attrProvider), expression.Value(provider))
		if extra != nil {
			u = extra(u)
		}
		x, err := expression.NewBuilder().WithUpdate(u).Build()
		if err != nil {
			return fmt.Errorf("build usage update: %w", err)
		}
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName:                 aws.String(st.table),
			Key:                       itemKey(pk, sk),
			UpdateExpression:          x.Update(),
			ExpressionAttributeNames:  x.Names(),
			ExpressionAttributeValues: x.Values(),
		}})
		return nil
	}
	acct := accountPrefix + ev.AccountID
	for _, d := range deltas {
		if err := add(acct, usageDayPrefix+d.Day+"#"+provider, d, nil); err != nil {
			return nil, err
		}
		if err := add(acct, usageSessionPrefix+d.Day+"#"+ev.SessionID, d, func(u expression.UpdateBuilder) expression.UpdateBuilder {
			return u.Set(expression.Name(attrSessionID), expression.Value(ev.SessionID))
		}); err != nil {
			return nil, err
		}
	}
	if part == 0 {
		av, err := attributevalue.MarshalMap(eventItem{
			PK: sessionPK(ev.SessionID), SK: eventSort(ev.Version),
			EventID: ev.EventID, SessionID: ev.SessionID, AccountID: ev.AccountID, SandboxID: ev.SandboxID,
			From: string(ev.From), To: string(ev.To), Version: ev.Version, Reason: ev.Reason,
			Time: formatTime(ev.Time), TTL: ev.Time.Add(st.eventRetention).Unix(),
			Since: formatTime(ev.Since), Actor: ev.Actor, Readiness: string(ev.Readiness), ReadinessDetail: ev.ReadinessDetail,
		})
		if err != nil {
			return nil, fmt.Errorf("encode event item: %w", err)
		}
		items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(st.table), Item: av}})
	}
	return items, nil
}

// applyUsagePart writes one part; a part already applied (the marker at or
// past it) is skipped.
func (st *Store) applyUsagePart(ctx context.Context, ev lifecycle.Event, part int, items []types.TransactWriteItem) error {
	// The token names the table, the event and the part (DynamoDB scopes
	// tokens to the AWS account, not the table): a retried call with it is
	// answered from DynamoDB's idempotency window, not applied twice.
	sum := sha256.Sum256(fmt.Appendf(nil, "usage:%s:%s:%d", st.table, ev.EventID, part))
	token := hex.EncodeToString(sum[:16])
	for attempt := 0; ; attempt++ {
		_, err := st.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			ClientRequestToken: aws.String(token),
			TransactItems:      items,
		})
		var tc *types.TransactionCanceledException
		if !errors.As(err, &tc) {
			if err != nil {
				return storeError("record usage of event %s: %w", ev.EventID, err)
			}
			return nil
		}
		reasons := tc.CancellationReasons
		codes := make([]string, len(reasons))
		conflict, throttled := false, false
		for i, r := range reasons {
			codes[i] = aws.ToString(r.Code)
			conflict = conflict || codes[i] == reasonTxConflict
			throttled = throttled || codes[i] == reasonThrottled
		}
		switch {
		case len(codes) > 0 && codes[0] == reasonConditionFailed:
			v, p, err := appliedMarker(reasons[0].Item)
			if err != nil {
				return storeError("record usage of event %s: %w", ev.EventID, err)
			}
			if v > ev.Version || v == ev.Version && p >= part {
				return nil // applied before: a redelivery
			}
			return storeError("record usage of event %s part %d: the session's usage is at version %d part %d (an earlier part is missing)",
				ev.EventID, part, v, p)
		case (conflict || throttled) && attempt < slotConflictRetries:
			sum := sha256.Sum256(fmt.Appendf(nil, "usage:%s:%s:%d:%d", st.table, ev.EventID, part, attempt+1))
			token = hex.EncodeToString(sum[:16]) // a new token: the cancelled transaction applied nothing
			if err := sleepJitter(ctx, attempt); err != nil {
				return storeError("record usage of event %s: %w", ev.EventID, err)
			}
		case conflict || throttled:
			return &lifecycle.Error{Code: lifecycle.CodeUnavailable, RetryAfter: StoreRetryAfter,
				Message: "the session store is busy; retry later",
				Err:     fmt.Errorf("record usage of event %s: reasons %s: %w", ev.EventID, strings.Join(codes, ","), err)}
		default:
			return storeError("record usage of event %s (reasons %s): %w", ev.EventID, strings.Join(codes, ","), err)
		}
	}
}

// appliedMarker reads a marker item's applied version and part (0, -1 when
// it has none).
func appliedMarker(item map[string]types.AttributeValue) (version int64, part int, err error) {
	var m struct {
		Version *int64 `dynamodbav:"applied_version"`
		Part    *int   `dynamodbav:"applied_part"`
	}
	if err := attributevalue.UnmarshalMap(item, &m); err != nil {
		return 0, 0, fmt.Errorf("decode usage marker: %w", err)
	}
	if m.Version == nil {
		return 0, -1, nil
	}
	if m.Part == nil {
		return *m.Version, 0, nil
	}
	return *m.Version, *m.Part, nil
}

// UsageRows returns q's rows with one Query on the account's partition.
// Errors: invalid (no account, a limit out of range, a foreign cursor), the
// store's.
func (st *Store) UsageRows(ctx context.Context, q lifecycle.UsageQuery) (lifecycle.UsagePage, error) {
	if q.AccountID == "" {
		return lifecycle.UsagePage{}, lifecycle.Errorf(lifecycle.CodeInvalid, "account id is required")
	}
	prefix := usageDayPrefix
	if q.BySession {
		prefix = usageSessionPrefix
		if q.Limit < 1 || q.Limit > 1000 {
			return lifecycle.UsagePage{}, lifecycle.Errorf(lifecycle.CodeInvalid, "limit must be between 1 and 1000")
		}
	}
	// "~" sorts after "#" and every day and id character: the whole last day.
	lo, hi := prefix+q.From, prefix+q.To+"~"
	keyCond := expression.Key(tabledef.PartitionKey).Equal(expression.Value(accountPrefix + q.AccountID)).
		And(expression.Key(tabledef.SortKey).Between(expression.Value(lo), expression.Value(hi)))
	x, err := expression.NewBuilder().WithKeyCondition(keyCond).Build()
	if err != nil {
		return lifecycle.UsagePage{}, fmt.Errorf("build usage query: %w", err)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(st.table),
		KeyConditionExpression:    x.KeyCondition(),
		ExpressionAttributeNames:  x.Names(),
		ExpressionAttributeValues: x.Values(),
	}
	if q.BySession {
		// One row more than asked: a page is the last when it is not there.
		in.Limit = aws.Int32(int32(q.Limit + 1))
		if q.Cursor != "" {
			b, err := base64.RawURLEncoding.DecodeString(q.Cursor)
			sk := string(b)
			if err != nil || !strings.HasPrefix(sk, usageSessionPrefix) || sk < lo || sk > hi {
				return lifecycle.UsagePage{}, errBadCursor()
			}
			in.ExclusiveStartKey = itemKey(accountPrefix+q.AccountID, sk)
		}
	}
	var (
		page lifecycle.UsagePage
		sks  []string
	)
	for {
		out, err := st.client.Query(ctx, in)
		if err != nil {
			return lifecycle.UsagePage{}, storeError("query usage of account %s: %w", q.AccountID, err)
		}
		for _, av := range out.Items {
			var it usageRowItem
			if err := attributevalue.UnmarshalMap(av, &it); err != nil {
				return lifecycle.UsagePage{}, fmt.Errorf("decode usage row %v: %w", av[tabledef.SortKey], err)
			}
			page.Rows = append(page.Rows, lifecycle.UsageRow{Day: it.Day, SessionID: it.SessionID, Provider: strings.TrimPrefix(it.Provider, "-"),
				RunningMS: it.RunningMS, PausedMS: it.PausedMS, Pauses: it.Pauses, Resumes: it.Resumes,
				CheckpointMBMS: it.CheckpointMBMS, ArchivedMBMS: it.ArchivedMBMS})
			sks = append(sks, it.SK)
		}
		if q.BySession && len(page.Rows) > q.Limit {
			page.Rows = page.Rows[:q.Limit]
			page.Cursor = base64.RawURLEncoding.EncodeToString([]byte(sks[q.Limit-1]))
			return page, nil
		}
		if len(out.LastEvaluatedKey) == 0 {
			return page, nil
		}
		if q.BySession {
			in.Limit = aws.Int32(int32(q.Limit + 1 - len(page.Rows)))
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// SessionEvents returns one page of q.SessionID's recorded events, newest
// first: a Query on the session's partition (sort keys EVENT#<version>,
// descending), leaving out with a filter the events whose TTL has passed at
// q.Now that DynamoDB has not deleted yet. It reads one event more than the
// page to know whether another page follows. Errors: invalid
// (lifecycle.ValidEventQuery, a foreign cursor), the store's.
func (st *Store) SessionEvents(ctx context.Context, q lifecycle.EventQuery) (lifecycle.EventPage, error) {
	if err := lifecycle.ValidEventQuery(q); err != nil {
		return lifecycle.EventPage{}, err
	}
	pk := sessionPK(q.SessionID)
	var start map[string]types.AttributeValue
	if q.Cursor != "" {
		v, err := lifecycle.ParseEventCursor(q.Cursor, q.SessionID)
		if err != nil {
			return lifecycle.EventPage{}, err
		}
		start = itemKey(pk, eventSort(v))
	}
	b := expression.NewBuilder().WithKeyCondition(expression.Key(tabledef.PartitionKey).Equal(expression.Value(pk)).
		And(expression.Key(tabledef.SortKey).BeginsWith(eventSortPrefix)))
	if !q.Now.IsZero() {
		b = b.WithFilter(expression.Name(tabledef.TTLAttribute).GreaterThan(expression.Value(q.Now.Unix())))
	}
	x, err := b.Build()
	if err != nil {
		return lifecycle.EventPage{}, fmt.Errorf("build events query: %w", err)
	}
	page := lifecycle.EventPage{Events: []lifecycle.Event{}}
	for {
		out, err := st.client.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(st.table),
			KeyConditionExpression:    x.KeyCondition(),
			FilterExpression:          x.Filter(),
			ExpressionAttributeNames:  x.Names(),
			ExpressionAttributeValues: x.Values(),
			ScanIndexForward:          aws.Bool(false),
			ExclusiveStartKey:         start,
			Limit:                     aws.Int32(int32(q.Limit + 1 - len(page.Events))),
		})
		if err != nil {
			return lifecycle.EventPage{}, storeError("query events of session %s: %w", q.SessionID, err)
		}
		for _, av := range out.Items {
			ev, err := decodeEvent(av)
			if err != nil {
				return lifecycle.EventPage{}, fmt.Errorf("decode event of session %s: %w", q.SessionID, err)
			}
			page.Events = append(page.Events, ev)
		}
		if len(page.Events) > q.Limit {
			page.Events = page.Events[:q.Limit]
			page.Cursor = lifecycle.EventCursor(q.SessionID, page.Events[q.Limit-1].Version)
			return page, nil
		}
		if len(out.LastEvaluatedKey) == 0 {
			return page, nil
		}
		start = out.LastEvaluatedKey
	}
}

// decodeEvent converts a stored event item back to the domain type.
func decodeEvent(av map[string]types.AttributeValue) (lifecycle.Event, error) {
	var it eventItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return lifecycle.Event{}, err
	}
	t, err := parseTime("time", it.Time)
	if err != nil {
		return lifecycle.Event{}, fmt.Errorf("event %s: %w", it.EventID, err)
	}
	since, err := parseTime("since", it.Since)
	if err != nil {
		return lifecycle.Event{}, fmt.Errorf("event %s: %w", it.EventID, err)
	}
	return lifecycle.Event{EventID: it.EventID, SessionID: it.SessionID, AccountID: it.AccountID,
		SandboxID: it.SandboxID, From: lifecycle.State(it.From), To: lifecycle.State(it.To),
		Version: it.Version, Reason: it.Reason, Time: t, Since: since, Actor: it.Actor,
		Readiness: lifecycle.Readiness(it.Readiness), ReadinessDetail: it.ReadinessDetail}, nil
}
