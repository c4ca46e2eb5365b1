// Package dynamostore keeps webhook endpoints and deliveries
// (internal/delivery) in the sessions table (internal/tabledef), next to the
// sessions, under their own key prefixes:
//
//	endpoint  pk "WHEP#<account id>"   sk "<endpoint id>"
//	delivery  pk "WHDLV#<endpoint id>" sk "<delivery id>"   (ttl set: 30 days)
//	parked    pk "WHPARK#<endpoint id>" sk "<delivery id>"  (park.go)
//	watch     pk "WHPARK#<endpoint id>" sk "WATCH"          (park.go)
//
// An account's endpoints are one partition (one Query per event); an
// endpoint's deliveries are one partition whose sort key (the delivery id)
// orders them by event time, so the log is a descending Query. Every write
// is conditional: a create on the key's absence, an update on the stored
// version. The outbox (internal/outbox) ignores these items: they are not
// sessions.
package dynamostore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Key prefixes (see the package doc).
const (
	endpointPrefix = "WHEP#"
	deliveryPrefix = "WHDLV#"
)

// API is the part of the DynamoDB client the Store uses; *dynamodb.Client
// implements it.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// Store is a delivery.Store on the sessions table.
type Store struct {
	client API
	table  string
}

var (
	_ delivery.Store         = (*Store)(nil)
	_ delivery.PendingLister = (*Store)(nil)
)

// New returns a Store on table through client.
func New(client API, table string) *Store { return &Store{client: client, table: table} }

// timeLayout: RFC 3339 UTC with nine fractional digits (as internal/dynamo).
const timeLayout = "2006-01-02T15:04:05.000000000Z"

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeLayout)
}

func parseTime(v string) time.Time {
	if v == "" {
		return time.Time{}
	}
	t, _ := time.Parse(time.RFC3339Nano, v)
	return t.UTC()
}

type endpointItem struct {
	PK                  string   `dynamodbav:"pk"`
	SK                  string   `dynamodbav:"sk"`
	ID                  string   `dynamodbav:"id"`
	AccountID           string   `dynamodbav:"account_id"`
	URL                 string   `dynamodbav:"url"`
	Description         string   `dynamodbav:"description,omitempty"`
	EventTypes          []string `dynamodbav:"event_types,omitempty"`
	Disabled            bool     `dynamodbav:"disabled,omitempty"`
	DisabledReason      string   `dynamodbav:"disabled_reason,omitempty"`
	Secret              string   `dynamodbav:"secret"`
	PreviousSecret      string   `dynamodbav:"previous_secret,omitempty"`
	PreviousSecretUntil string   `dynamodbav:"previous_secret_until,omitempty"`
	// OlderSecrets are the retired secrets after the newest (which is
	// previous_secret, as items have always held it), newest first.
	OlderSecrets []retiredItem `dynamodbav:"older_secrets,omitempty"`
	FailingSince string        `dynamodbav:"failing_since,omitempty"`
	SlowSince    string        `dynamodbav:"slow_since,omitempty"`
	// Holds are delivery.Endpoint.Holds (items from before them carried a
	// single probe_until, a hold of at most 20 s: left unread).
	Holds     []string `dynamodbav:"holds,omitempty"`
	CreatedAt string   `dynamodbav:"created_at"`
	UpdatedAt string   `dynamodbav:"updated_at"`
	Version   int64    `dynamodbav:"version"`
}

// retiredItem is a retired signing secret (delivery.RetiredSecret).
type retiredItem struct {
	Secret string `dynamodbav:"secret"`
	Until  string `dynamodbav:"until"`
}

func toEndpointItem(e *delivery.Endpoint) endpointItem {
	it := endpointItem{PK: endpointPrefix + e.AccountID, SK: e.ID, ID: e.ID, AccountID: e.AccountID, URL: e.URL,
		Description: e.Description, EventTypes: e.EventTypes, Disabled: e.Disabled, DisabledReason: e.DisabledReason,
		Secret: e.Secret, FailingSince: formatTime(e.FailingSince), SlowSince: formatTime(e.SlowSince),
		CreatedAt: formatTime(e.CreatedAt), UpdatedAt: formatTime(e.UpdatedAt), Version: e.Version}
	for _, h := range e.Holds {
		it.Holds = append(it.Holds, formatTime(h))
	}
	for i, r := range e.Retired {
		if i == 0 {
			it.PreviousSecret, it.PreviousSecretUntil = r.Secret, formatTime(r.Until)
			continue
		}
		it.OlderSecrets = append(it.OlderSecrets, retiredItem{Secret: r.Secret, Until: formatTime(r.Until)})
	}
	return it
}

func (it endpointItem) endpoint() *delivery.Endpoint {
	e := &delivery.Endpoint{ID: it.ID, AccountID: it.AccountID, URL: it.URL, Description: it.Description,
		EventTypes: it.EventTypes, Disabled: it.Disabled, DisabledReason: it.DisabledReason, Secret: it.Secret,
		FailingSince: parseTime(it.FailingSince), SlowSince: parseTime(it.SlowSince), CreatedAt: parseTime(it.CreatedAt), UpdatedAt: parseTime(it.UpdatedAt),
		Version: it.Version}
	for _, h := range it.Holds {
		e.Holds = append(e.Holds, parseTime(h))
	}
	if it.PreviousSecret != "" {
		e.Retired = append(e.Retired, delivery.RetiredSecret{Secret: it.PreviousSecret, Until: parseTime(it.PreviousSecretUntil)})
	}
	for _, r := range it.OlderSecrets {
		e.Retired = append(e.Retired, delivery.RetiredSecret{Secret: r.Secret, Until: parseTime(r.Until)})
	}
	return e
}

type attemptItem struct {
	At         string `dynamodbav:"at"`
	StatusCode int    `dynamodbav:"status_code,omitempty"`
	LatencyMS  int64  `dynamodbav:"latency_ms"` // milliseconds
	Error      string `dynamodbav:"error,omitempty"`
	Response   string `dynamodbav:"response,omitempty"` // at most delivery.MaxResponseBody bytes
}

type deliveryItem struct {
	PK            string        `dynamodbav:"pk"`
	SK            string        `dynamodbav:"sk"`
	ID            string        `dynamodbav:"id"`
	EndpointID    string        `dynamodbav:"endpoint_id"`
	AccountID     string        `dynamodbav:"account_id"`
	EventID       string        `dynamodbav:"event_id"`
	EventType     string        `dynamodbav:"event_type"`
	Payload       []byte        `dynamodbav:"payload"`
	Status        string        `dynamodbav:"status"`
	Reason        string        `dynamodbav:"reason,omitempty"`
	Attempts      []attemptItem `dynamodbav:"attempts"`
	RoundStart    int           `dynamodbav:"round_start,omitempty"`
	NextAttemptAt string        `dynamodbav:"next_attempt_at,omitempty"`
	CreatedAt     string        `dynamodbav:"created_at"`
	UpdatedAt     string        `dynamodbav:"updated_at"`
	TTL           int64         `dynamodbav:"ttl"` // epoch seconds (tabledef.TTLAttribute)
	Version       int64         `dynamodbav:"version"`
}

func toDeliveryItem(d *delivery.Delivery) deliveryItem {
	it := deliveryItem{PK: deliveryPrefix + d.EndpointID, SK: d.ID, ID: d.ID, EndpointID: d.EndpointID,
		AccountID: d.AccountID, EventID: d.EventID, EventType: d.EventType, Payload: d.Payload, Status: d.Status,
		Reason: d.Reason, Attempts: make([]attemptItem, 0, len(d.Attempts)), RoundStart: d.RoundStart,
		NextAttemptAt: formatTime(d.NextAttemptAt), CreatedAt: formatTime(d.CreatedAt), UpdatedAt: formatTime(d.UpdatedAt),
		TTL: d.ExpiresAt.Unix(), Version: d.Version}
	for _, a := range d.Attempts {
		it.Attempts = append(it.Attempts, attemptItem{At: formatTime(a.At), StatusCode: a.StatusCode,
			LatencyMS: a.LatencyMS, Error: a.Error, Response: a.Response})
	}
	return it
}

func (it deliveryItem) delivery() *delivery.Delivery {
	d := &delivery.Delivery{ID: it.ID, EndpointID: it.EndpointID, AccountID: it.AccountID, EventID: it.EventID,
		EventType: it.EventType, Payload: it.Payload, Status: it.Status, Reason: it.Reason, RoundStart: it.RoundStart,
		NextAttemptAt: parseTime(it.NextAttemptAt), CreatedAt: parseTime(it.CreatedAt), UpdatedAt: parseTime(it.UpdatedAt),
		ExpiresAt: time.Unix(it.TTL, 0).UTC(), Version: it.Version}
	for _, a := range it.Attempts {
		d.Attempts = append(d.Attempts, delivery.Attempt{At: parseTime(a.At), StatusCode: a.StatusCode,
			LatencyMS: a.LatencyMS, Error: a.Error, Response: a.Response})
	}
	return d
}

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		tabledef.PartitionKey: &types.AttributeValueMemberS{Value: pk},
		tabledef.SortKey:      &types.AttributeValueMemberS{Value: sk},
	}
}

func storeError(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	var ne interface{ Timeout() bool }
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) {
		return &lifecycle.Error{Code: lifecycle.CodeUnavailable, RetryAfter: 2 * time.Second, Err: err,
			Message: "the webhook store did not answer in time; retry later"}
	}
	return err
}

func conditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// put writes item under cond (built with the expression builder).
func (s *Store) put(ctx context.Context, item any, cond expression.ConditionBuilder) error {
	av, err := attributevalue.MarshalMap(item)
	if err != nil {
		return fmt.Errorf("encode item: %w", err)
	}
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("build condition: %w", err)
	}
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: av,
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()})
	return err
}

func notExists() expression.ConditionBuilder {
	return expression.AttributeNotExists(expression.Name(tabledef.PartitionKey))
}

func versionIs(v int64) expression.ConditionBuilder {
	return expression.Name("version").Equal(expression.Value(v))
}

// CreateEndpoint implements delivery.Store. The per-account limit is
// checked by counting first (not atomic: two concurrent creates may pass
// it by one; the limit only bounds an account's fan-out).
func (s *Store) CreateEndpoint(ctx context.Context, e *delivery.Endpoint) error {
	eps, err := s.ListEndpoints(ctx, e.AccountID)
	if err != nil {
		return err
	}
	if len(eps) >= delivery.MaxEndpointsPerAccount {
		return lifecycle.Errorf(lifecycle.CodeConflict, "an account may have at most %d webhook endpoints", delivery.MaxEndpointsPerAccount)
	}
	if err := s.put(ctx, toEndpointItem(e), notExists()); err != nil {
		if conditionFailed(err) {
			return lifecycle.Errorf(lifecycle.CodeConflict, "webhook endpoint %q exists", e.ID)
		}
		return storeError("create webhook endpoint %s: %w", e.ID, err)
	}
	return nil
}

// GetEndpoint implements delivery.Store.
func (s *Store) GetEndpoint(ctx context.Context, accountID, id string) (*delivery.Endpoint, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table),
		Key: key(endpointPrefix+accountID, id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, storeError("get webhook endpoint %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return nil, lifecycle.Errorf(lifecycle.CodeNotFound, "no webhook endpoint %q", id)
	}
	var it endpointItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return nil, fmt.Errorf("decode webhook endpoint %s: %w", id, err)
	}
	return it.endpoint(), nil
}

// ListEndpoints implements delivery.Store (oldest first by creation).
func (s *Store) ListEndpoints(ctx context.Context, accountID string) ([]*delivery.Endpoint, error) {
	kc := expression.Key(tabledef.PartitionKey).Equal(expression.Value(endpointPrefix + accountID))
	expr, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		return nil, err
	}
	var out []*delivery.Endpoint
	p := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{TableName: aws.String(s.table),
		KeyConditionExpression: expr.KeyCondition(), ExpressionAttributeNames: expr.Names(),
		ExpressionAttributeValues: expr.Values(), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, storeError("list webhook endpoints of %s: %w", accountID, err)
		}
		var items []endpointItem
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &items); err != nil {
			return nil, fmt.Errorf("decode webhook endpoints: %w", err)
		}
		for _, it := range items {
			out = append(out, it.endpoint())
		}
	}
	sortByCreated(out)
	return out, nil
}

// UpdateEndpoint implements delivery.Store.
func (s *Store) UpdateEndpoint(ctx context.Context, e *delivery.Endpoint, prevVersion int64) error {
	err := s.put(ctx, toEndpointItem(e), versionIs(prevVersion))
	if conditionFailed(err) {
		if _, gerr := s.GetEndpoint(ctx, e.AccountID, e.ID); gerr != nil {
			return gerr
		}
		return lifecycle.Errorf(lifecycle.CodeConflict, "webhook endpoint %q changed meanwhile", e.ID)
	}
	if err != nil {
		return storeError("update webhook endpoint %s: %w", e.ID, err)
	}
	return nil
}

// DeleteEndpoint implements delivery.Store.
func (s *Store) DeleteEndpoint(ctx context.Context, accountID, id string) error {
	expr, _ := expression.NewBuilder().WithCondition(expression.AttributeExists(expression.Name(tabledef.PartitionKey))).Build()
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.table),
		Key: key(endpointPrefix+accountID, id), ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names()})
	if conditionFailed(err) {
		return lifecycle.Errorf(lifecycle.CodeNotFound, "no webhook endpoint %q", id)
	}
	if err != nil {
		return storeError("delete webhook endpoint %s: %w", id, err)
	}
	return nil
}

// CreateDelivery implements delivery.Store.
func (s *Store) CreateDelivery(ctx context.Context, d *delivery.Delivery) (bool, error) {
	err := s.put(ctx, toDeliveryItem(d), notExists())
	if conditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, storeError("create delivery %s: %w", d.ID, err)
	}
	return true, nil
}

// GetDelivery implements delivery.Store; an item past its TTL that DynamoDB
// has not removed yet counts as gone.
func (s *Store) GetDelivery(ctx context.Context, endpointID, id string) (*delivery.Delivery, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table),
		Key: key(deliveryPrefix+endpointID, id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, storeError("get delivery %s: %w", id, err)
	}
	var it deliveryItem
	if len(out.Item) > 0 {
		if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
			return nil, fmt.Errorf("decode delivery %s: %w", id, err)
		}
	}
	if len(out.Item) == 0 || time.Now().Unix() >= it.TTL {
		return nil, lifecycle.Errorf(lifecycle.CodeNotFound, "no delivery %q", id)
	}
	return it.delivery(), nil
}

// UpdateDelivery implements delivery.Store.
func (s *Store) UpdateDelivery(ctx context.Context, d *delivery.Delivery, prevVersion int64) error {
	err := s.put(ctx, toDeliveryItem(d), versionIs(prevVersion))
	if conditionFailed(err) {
		if _, gerr := s.GetDelivery(ctx, d.EndpointID, d.ID); gerr != nil {
			return gerr
		}
		return lifecycle.Errorf(lifecycle.CodeConflict, "delivery %q changed meanwhile", d.ID)
	}
	if err != nil {
		return storeError("update delivery %s: %w", d.ID, err)
	}
	return nil
}

// ListDeliveries implements delivery.Store: a descending Query; the cursor
// is base64url of the last delivery id of the page.
func (s *Store) ListDeliveries(ctx context.Context, endpointID string, limit int, cursor string) ([]*delivery.Delivery, string, error) {
	kc := expression.Key(tabledef.PartitionKey).Equal(expression.Value(deliveryPrefix + endpointID))
	expr, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		return nil, "", err
	}
	in := &dynamodb.QueryInput{TableName: aws.String(s.table), KeyConditionExpression: expr.KeyCondition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ScanIndexForward: aws.Bool(false), Limit: aws.Int32(int32(limit))}
	if cursor != "" {
		last, err := decodeCursor(cursor)
		if err != nil {
			return nil, "", err
		}
		in.ExclusiveStartKey = key(deliveryPrefix+endpointID, last)
	}
	out, err := s.client.Query(ctx, in)
	if err != nil {
		return nil, "", storeError("list deliveries of %s: %w", endpointID, err)
	}
	var items []deliveryItem
	if err := attributevalue.UnmarshalListOfMaps(out.Items, &items); err != nil {
		return nil, "", fmt.Errorf("decode deliveries: %w", err)
	}
	ds := make([]*delivery.Delivery, 0, len(items))
	now := time.Now().Unix()
	for _, it := range items {
		if now < it.TTL {
			ds = append(ds, it.delivery())
		}
	}
	next := ""
	if len(out.LastEvaluatedKey) > 0 && len(items) > 0 {
		next = encodeCursor(items[len(items)-1].SK)
	}
	return ds, next, nil
}

// PendingDeliveries implements delivery.PendingLister with a Scan of the
// whole table: for the local stack's recovery on DynamoDB Local only (the
// deliver function's role has no dynamodb:Scan; in AWS the jobs live in
// SQS).
func (s *Store) PendingDeliveries(ctx context.Context) ([]*delivery.Delivery, error) {
	filt := expression.Name(tabledef.PartitionKey).BeginsWith(deliveryPrefix).
		And(expression.Name("status").Equal(expression.Value(delivery.StatusPending)))
	expr, err := expression.NewBuilder().WithFilter(filt).Build()
	if err != nil {
		return nil, err
	}
	var out []*delivery.Delivery
	p := dynamodb.NewScanPaginator(s.client, &dynamodb.ScanInput{TableName: aws.String(s.table), FilterExpression: expr.Filter(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, storeError("scan pending deliveries: %w", err)
		}
		var items []deliveryItem
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &items); err != nil {
			return nil, fmt.Errorf("decode deliveries: %w", err)
		}
		for _, it := range items {
			out = append(out, it.delivery())
		}
	}
	return out, nil
}

type cursorJSON struct {
	Last string `json:"l"`
}

func encodeCursor(last string) string {
	b, _ := json.Marshal(cursorJSON{Last: last})
	return base64.RawURLEncoding.EncodeToString(b)
}

// deliveryIDPattern is the form of every delivery id (delivery.DeliveryID).
var deliveryIDPattern = regexp.MustCompile(`^dlv_[0-9a-f]{28}$`)

// decodeCursor reads a cursor encodeCursor made. The caller may forge one:
// only a delivery id is accepted as the key to start after (a longer one
// would reach DynamoDB as a sort key over its 1024-byte limit, a
// ValidationException the caller would see as an internal error).
func decodeCursor(s string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	var c cursorJSON
	if err != nil || json.Unmarshal(b, &c) != nil || !deliveryIDPattern.MatchString(c.Last) {
		return "", lifecycle.Errorf(lifecycle.CodeInvalid, "cursor is not valid")
	}
	return c.Last, nil
}
