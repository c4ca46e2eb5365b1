// Package apigwmgmt is the channel.Pusher of the AWS stack: it sends a
// message to one client of the API Gateway WebSocket API with the API
// Gateway Management API's PostToConnection (POST
// {endpoint}/@connections/{connection_id}, the message as the body),
// docs/DESIGN.md "Client channel".
//
// The endpoint is the WebSocket stage's callback URL,
// https://{api-id}.execute-api.{region}.amazonaws.com/{stage}, which the
// stack sets as SANDMAN_WS_MANAGEMENT_URL (internal/envnames); the caller
// needs execute-api:ManageConnections on that stage's @connections.
//
// Errors: a connection API Gateway no longer holds answers 410
// (GoneException); Push returns it wrapped in channel.ErrGone, so the
// channel deletes the connection record. Every other failure (after the
// SDK's own retries of throttling, 5xx and network errors) is returned
// as it is.
package apigwmgmt

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/apigatewaymanagementapi"
	"github.com/aws/aws-sdk-go-v2/service/apigatewaymanagementapi/types"

	"github.com/sandmanhq/sandman/internal/channel"
)

var (
	_ channel.Pusher = (*Pusher)(nil)
	_ API            = (*apigatewaymanagementapi.Client)(nil)
)

// DefaultTimeout bounds one PostToConnection, SDK retries included: 5 s,
// the local gateway's bound on one push (internal/localstack).
const DefaultTimeout = 5 * time.Second

// API is the part of the Management API client the Pusher uses;
// *apigatewaymanagementapi.Client implements it.
type API interface {
	PostToConnection(ctx context.Context, in *apigatewaymanagementapi.PostToConnectionInput,
		optFns ...func(*apigatewaymanagementapi.Options)) (*apigatewaymanagementapi.PostToConnectionOutput, error)
}

// Config is what New builds a Pusher from.
type Config struct {
	// API is the Management API client, built for the stage's endpoint
	// (NewClient). Required.
	API API
	// Timeout bounds one push, SDK retries included; 0 means
	// DefaultTimeout.
	Timeout time.Duration
}

// Pusher posts messages to WebSocket connections. Safe for concurrent use.
type Pusher struct {
	api     API
	timeout time.Duration
}

// New returns a Pusher. Errors: Config.API is nil.
func New(cfg Config) (*Pusher, error) {
	if cfg.API == nil {
		return nil, errors.New("apigwmgmt: a Management API client is required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	return &Pusher{api: cfg.API, timeout: cfg.Timeout}, nil
}

// NewClient returns a Management API client for the stage whose callback
// URL is endpoint (https://{api-id}.execute-api.{region}.amazonaws.com/{stage}).
// Errors: endpoint is empty.
func NewClient(awsCfg aws.Config, endpoint string) (*apigatewaymanagementapi.Client, error) {
	if endpoint == "" {
		return nil, errors.New("apigwmgmt: the WebSocket stage's callback URL is required")
	}
	return apigatewaymanagementapi.NewFromConfig(awsCfg, func(o *apigatewaymanagementapi.Options) {
		o.BaseEndpoint = aws.String(endpoint)
	}), nil
}

// Push sends msg to connection connID. Errors: channel.ErrGone (wrapped)
// when API Gateway answers 410; otherwise the call's error.
func (p *Pusher) Push(ctx context.Context, connID string, msg []byte) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	_, err := p.api.PostToConnection(ctx, &apigatewaymanagementapi.PostToConnectionInput{
		ConnectionId: aws.String(connID), Data: msg})
	if err == nil {
		return nil
	}
	var gone *types.GoneException
	var resp *awshttp.ResponseError
	if errors.As(err, &gone) || (errors.As(err, &resp) && resp.HTTPStatusCode() == http.StatusGone) {
		return fmt.Errorf("post to connection %s: %w", connID, channel.ErrGone)
	}
	return fmt.Errorf("post to connection %s: %w", connID, err)
}

// deleter is the Management API's DeleteConnection, which
// *apigatewaymanagementapi.Client has (API need not: test fakes).
type deleter interface {
	DeleteConnection(ctx context.Context, in *apigatewaymanagementapi.DeleteConnectionInput,
		optFns ...func(*apigatewaymanagementapi.Options)) (*apigatewaymanagementapi.DeleteConnectionOutput, error)
}

var _ channel.Closer = (*Pusher)(nil)

// Close closes connection connID with DeleteConnection (channel.Closer:
// the channel closes a connection past its message bound). API Gateway
// chooses the close frame; code and reason are not sent. Errors:
// channel.ErrGone (wrapped) for a connection already gone; the call's
// error; an API without DeleteConnection.
func (p *Pusher) Close(ctx context.Context, connID string, _ int, _ string) error {
	d, ok := p.api.(deleter)
	if !ok {
		return fmt.Errorf("close connection %s: the Management API client cannot delete connections", connID)
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	_, err := d.DeleteConnection(ctx, &apigatewaymanagementapi.DeleteConnectionInput{ConnectionId: aws.String(connID)})
	var gone *types.GoneException
	if errors.As(err, &gone) {
		return fmt.Errorf("delete connection %s: %w", connID, channel.ErrGone)
	}
	if err != nil {
		return fmt.Errorf("delete connection %s: %w", connID, err)
	}
	return nil
}

// Load returns a Pusher over a client built from the AWS default
// configuration (the Lambda's role) for the stage endpoint: what the
// channel and notifier functions call once at cold start. Errors: the AWS
// configuration does not load, or endpoint is empty.
func Load(ctx context.Context, endpoint string) (*Pusher, error) {
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load aws config: %w", err)
	}
	client, err := NewClient(awsCfg, endpoint)
	if err != nil {
		return nil, err
	}
	return New(Config{API: client})
}
