package infra

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/sandmanhq/sandman/internal/provider"
)

// CDK context keys the app reads (cdk.json "context", or `cdk synth -c
// key=value`). Unset keys keep the SandmanStackProps defaults.
const (
	// ContextStackName is the stack's name. Default DefaultStackName.
	ContextStackName = "sandman:stackName"
	// ContextFunctionsDir is SandmanStackProps.FunctionsDir.
	ContextFunctionsDir = "sandman:functionsDir"
	// ContextProvider is SandmanStackProps.Provider.
	ContextProvider = "sandman:provider"
	// ContextProviders is SandmanStackProps.Providers: a JSON list in
	// cdk.json, or a comma-separated string on the command line.
	ContextProviders = "sandman:providers"
	// ContextProviderSettings is SandmanStackProps.ProviderSettings: a JSON
	// object of strings in cdk.json, e.g. {"SANDMAN_VERCEL_PROJECT_ID": "prj_…"}.
	ContextProviderSettings = "sandman:providerSettings"
	// ContextCORSAllowOrigins is SandmanStackProps.CORSAllowOrigins: a JSON
	// list in cdk.json, or a comma-separated string on the command line.
	ContextCORSAllowOrigins = "sandman:corsAllowOrigins"
	// ContextPauserConcurrency is SandmanStackProps.PauserConcurrency, the
	// bound on the provider's pause rate from timers: a number in
	// cdk.json, or a decimal string on the command line.
	ContextPauserConcurrency = "sandman:pauserConcurrency"
	// ContextShards is SandmanStackProps.Shards (1 to 1024), a number.
	ContextShards = "sandman:shards"
	// ContextGovernorShards is SandmanStackProps.GovernorShards (1 to 64),
	// a number.
	ContextGovernorShards = "sandman:governorShards"
	// ContextGuardHeadroom is SandmanStackProps.GuardHeadroom, a Go
	// duration string such as "27m30s".
	ContextGuardHeadroom = "sandman:guardHeadroom"
	// ContextThrottleRateLimit and ContextThrottleBurstLimit are
	// SandmanStackProps.ThrottleRateLimit and ThrottleBurstLimit, numbers.
	ContextThrottleRateLimit  = "sandman:throttleRateLimit"
	ContextThrottleBurstLimit = "sandman:throttleBurstLimit"
	// ContextPublisherParallelization is
	// SandmanStackProps.PublisherParallelization (1 to 10), a number.
	ContextPublisherParallelization = "sandman:publisherParallelization"
	// ContextEventRetentionDays is SandmanStackProps.EventRetentionDays
	// (1 to 366), a number.
	ContextEventRetentionDays = "sandman:eventRetentionDays"
	// ContextWebSocketAccessLogs is SandmanStackProps.WebSocketAccessLogs:
	// "off" (the default: a first deploy on a fresh account succeeds),
	// "create-role" (the stack creates API Gateway's account-level
	// CloudWatch role) or "account-role" (the account has one already).
	ContextWebSocketAccessLogs = "sandman:webSocketAccessLogs"
	// ContextAlarmTopicArn is SandmanStackProps.AlarmTopicArn: an SNS
	// topic every alarm notifies. Unset: alarms have no action.
	ContextAlarmTopicArn = "sandman:alarmTopicArn"
	// ContextPools is the warm pools (SandmanStackProps.Pools,
	// docs/POOLS.md): a JSON array in cdk.json, or its JSON text on the
	// command line (-c 'sandman:pools=[…]').
	ContextPools = "sandman:pools"
	// ContextBrandName, ContextBrandAccent and ContextBrandLogoURL are
	// SandmanStackProps.BrandName, BrandAccent and BrandLogoURL, strings.
	ContextBrandName    = "sandman:brandName"
	ContextBrandAccent  = "sandman:brandAccent"
	ContextBrandLogoURL = "sandman:brandLogoUrl"
	// ContextLegacyOwnerIndex is SandmanStackProps.KeepLegacyOwnerIndex:
	// true (or "true") for the migration deploy of docs/CAPACITY.md "The
	// by_owner index".
	ContextLegacyOwnerIndex = "sandman:legacyOwnerIndex"
	// ContextHoldBackIndexes is SandmanStackProps.HoldBackIndexes: index
	// names (a JSON list in cdk.json, or a comma-separated string on the
	// command line) the deploy leaves out, for a table more than one index
	// behind (docs/DEPLOY.md "Upgrading a deployed table").
	ContextHoldBackIndexes = "sandman:holdBackIndexes"
	// ContextCheckpointConcurrency is
	// SandmanStackProps.CheckpointConcurrency (2 to 1000), a number.
	ContextCheckpointConcurrency = "sandman:checkpointConcurrency"
	// ContextArchiveEncryption is SandmanStackProps.ArchiveEncryption:
	// "s3" (the default, S3-managed keys) or "kms" (a key the stack
	// creates).
	ContextArchiveEncryption = "sandman:archiveEncryption"
	// ContextArchiveExpirationDays is
	// SandmanStackProps.ArchiveExpirationDays (1 to 3650), a number.
	ContextArchiveExpirationDays = "sandman:archiveExpirationDays"
)

// DefaultStackName is the stack's name when ContextStackName is unset.
const DefaultStackName = "Sandman"

// PropsFromContext reads the stack's name and props from scope's CDK context.
// The stack's environment comes from CDK_DEFAULT_ACCOUNT and
// CDK_DEFAULT_REGION, which the CDK CLI sets when it has credentials; without
// them the stack is environment-agnostic (synthesis works offline).
func PropsFromContext(scope constructs.Construct) (string, *SandmanStackProps, error) {
	node := scope.Node()
	str := func(key string) (string, error) {
		switch v := node.TryGetContext(jsii.String(key)).(type) {
		case nil:
			return "", nil
		case string:
			return v, nil
		default:
			return "", fmt.Errorf("context %s: want a string, got %T", key, v)
		}
	}
	name, err := str(ContextStackName)
	if err != nil {
		return "", nil, err
	}
	if name == "" {
		name = DefaultStackName
	}
	props := &SandmanStackProps{}
	for key, dst := range map[string]*string{
		ContextFunctionsDir:        &props.FunctionsDir,
		ContextProvider:            &props.Provider,
		ContextWebSocketAccessLogs: &props.WebSocketAccessLogs,
		ContextAlarmTopicArn:       &props.AlarmTopicArn,
		ContextArchiveEncryption:   &props.ArchiveEncryption,
		ContextBrandName:           &props.BrandName,
		ContextBrandAccent:         &props.BrandAccent,
		ContextBrandLogoURL:        &props.BrandLogoURL,
	} {
		if *dst, err = str(key); err != nil {
			return "", nil, err
		}
	}
	// Each deployable adapter's secrets name their own context key
	// (registry.Secret.ContextKey), e.g. sandman:providerApiKeySecretName.
	for _, a := range provider.Lambda() {
		for _, s := range a.Secrets() {
			v, err := str(s.ContextKey)
			if err != nil {
				return "", nil, err
			}
			if v != "" {
				if props.SecretNames == nil {
					props.SecretNames = map[string]string{}
				}
				props.SecretNames[s.SecretEnv] = v
			}
		}
	}
	switch v := node.TryGetContext(jsii.String(ContextCORSAllowOrigins)).(type) {
	case nil:
	case string:
		for _, origin := range strings.Split(v, ",") {
			if origin = strings.TrimSpace(origin); origin != "" {
				props.CORSAllowOrigins = append(props.CORSAllowOrigins, origin)
			}
		}
	case []interface{}:
		for _, item := range v {
			origin, ok := item.(string)
			if !ok {
				return "", nil, fmt.Errorf("context %s: want a list of strings, got an item of type %T", ContextCORSAllowOrigins, item)
			}
			props.CORSAllowOrigins = append(props.CORSAllowOrigins, origin)
		}
	default:
		return "", nil, fmt.Errorf("context %s: want a list or a comma-separated string, got %T", ContextCORSAllowOrigins, v)
	}
	if props.Pools, err = contextPools(node); err != nil {
		return "", nil, err
	}
	if props.Providers, err = contextList(node, ContextProviders); err != nil {
		return "", nil, err
	}
	if props.HoldBackIndexes, err = contextList(node, ContextHoldBackIndexes); err != nil {
		return "", nil, err
	}
	if err := checkHoldBackIndexes(props.HoldBackIndexes); err != nil {
		return "", nil, fmt.Errorf("context %s: %w", ContextHoldBackIndexes, err)
	}
	switch v := node.TryGetContext(jsii.String(ContextProviderSettings)).(type) {
	case nil:
	case map[string]interface{}:
		props.ProviderSettings = map[string]string{}
		for k, item := range v {
			s, ok := item.(string)
			if !ok {
				return "", nil, fmt.Errorf("context %s: %s: want a string, got %T", ContextProviderSettings, k, item)
			}
			props.ProviderSettings[k] = s
		}
	default:
		return "", nil, fmt.Errorf("context %s: want an object of strings, got %T", ContextProviderSettings, v)
	}
	switch v := node.TryGetContext(jsii.String(ContextPauserConcurrency)).(type) {
	case nil:
	case float64:
		props.PauserConcurrency = v
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return "", nil, fmt.Errorf("context %s: want a whole number, got %q", ContextPauserConcurrency, v)
		}
		props.PauserConcurrency = float64(n)
	default:
		return "", nil, fmt.Errorf("context %s: want a number, got %T", ContextPauserConcurrency, v)
	}
	if c := props.PauserConcurrency; c != 0 && (c < 2 || c > 1000 || c != float64(int(c))) {
		return "", nil, fmt.Errorf("context %s: %v is outside Lambda's 2 to 1000", ContextPauserConcurrency, c)
	}
	for _, n := range []struct {
		key      string
		dst      *float64
		min, max float64
	}{
		{ContextShards, &props.Shards, 1, 1024},
		{ContextGovernorShards, &props.GovernorShards, 1, 64},
		{ContextThrottleRateLimit, &props.ThrottleRateLimit, 1, 1_000_000},
		{ContextThrottleBurstLimit, &props.ThrottleBurstLimit, 1, 1_000_000},
		{ContextPublisherParallelization, &props.PublisherParallelization, 1, 10},
		{ContextCheckpointConcurrency, &props.CheckpointConcurrency, 2, 1000},
		{ContextArchiveExpirationDays, &props.ArchiveExpirationDays, 1, 3650},
		{ContextEventRetentionDays, &props.EventRetentionDays, 1, 366},
	} {
		if *n.dst, err = contextNumber(node, n.key, n.min, n.max); err != nil {
			return "", nil, err
		}
	}
	switch v := node.TryGetContext(jsii.String(ContextGuardHeadroom)).(type) {
	case nil:
	case string:
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			return "", nil, fmt.Errorf("context %s: want a positive duration such as 27m30s, got %q", ContextGuardHeadroom, v)
		}
		props.GuardHeadroom = d
	default:
		return "", nil, fmt.Errorf("context %s: want a duration string such as \"27m30s\", got %T", ContextGuardHeadroom, v)
	}
	switch v := node.TryGetContext(jsii.String(ContextLegacyOwnerIndex)).(type) {
	case nil:
	case bool:
		props.KeepLegacyOwnerIndex = v
	case string:
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return "", nil, fmt.Errorf("context %s: want true or false, got %q", ContextLegacyOwnerIndex, v)
		}
		props.KeepLegacyOwnerIndex = b
	default:
		return "", nil, fmt.Errorf("context %s: want true or false, got %T", ContextLegacyOwnerIndex, v)
	}
	switch props.ArchiveEncryption {
	case "", ArchiveEncryptionS3, ArchiveEncryptionKMS:
	default:
		return "", nil, fmt.Errorf("context %s: want %q or %q, got %q", ContextArchiveEncryption,
			ArchiveEncryptionS3, ArchiveEncryptionKMS, props.ArchiveEncryption)
	}
	switch props.WebSocketAccessLogs {
	case "", WSAccessLogsOff, WSAccessLogsCreateRole, WSAccessLogsAccountRole:
	default:
		return "", nil, fmt.Errorf("context %s: want %q, %q or %q, got %q", ContextWebSocketAccessLogs,
			WSAccessLogsOff, WSAccessLogsCreateRole, WSAccessLogsAccountRole, props.WebSocketAccessLogs)
	}
	account, region := os.Getenv("CDK_DEFAULT_ACCOUNT"), os.Getenv("CDK_DEFAULT_REGION")
	if account != "" && region != "" {
		props.Env = &awscdk.Environment{Account: jsii.String(account), Region: jsii.String(region)}
	}
	return name, props, nil
}

// contextNumber reads key as a whole number (a JSON number, or a decimal
// string on the command line) from lo to hi; 0 when unset. Errors name the
// key.
func contextNumber(node constructs.Node, key string, lo, hi float64) (float64, error) {
	var n float64
	switch v := node.TryGetContext(jsii.String(key)).(type) {
	case nil:
		return 0, nil
	case float64:
		n = v
	case string:
		i, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return 0, fmt.Errorf("context %s: want a whole number, got %q", key, v)
		}
		n = float64(i)
	default:
		return 0, fmt.Errorf("context %s: want a number, got %T", key, v)
	}
	if n < lo || n > hi || n != float64(int(n)) {
		return 0, fmt.Errorf("context %s: %v is not a whole number from %v to %v", key, n, lo, hi)
	}
	return n, nil
}

// contextList reads key as a JSON list of strings or a comma-separated
// string; blank items are dropped. Errors name the key.
func contextList(node constructs.Node, key string) ([]string, error) {
	var out []string
	switch v := node.TryGetContext(jsii.String(key)).(type) {
	case nil:
	case string:
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
	case []interface{}:
		for _, item := range v {
			s, ok := item.(string)
			if !ok {
				return nil, fmt.Errorf("context %s: want a list of strings, got an item of type %T", key, item)
			}
			out = append(out, s)
		}
	default:
		return nil, fmt.Errorf("context %s: want a list or a comma-separated string, got %T", key, v)
	}
	return out, nil
}

// contextPools reads ContextPools as SANDMAN_POOLS's JSON text: a JSON
// array given in cdk.json is encoded back, a string must hold a JSON array.
// The functions validate the pools themselves at boot; here only the shape.
// Errors name the key.
func contextPools(node constructs.Node) (string, error) {
	switch v := node.TryGetContext(jsii.String(ContextPools)).(type) {
	case nil:
		return "", nil
	case []interface{}:
		b, err := json.Marshal(v)
		if err != nil {
			return "", fmt.Errorf("context %s: %w", ContextPools, err)
		}
		return string(b), nil
	case string:
		var pools []map[string]any
		if err := json.Unmarshal([]byte(v), &pools); err != nil {
			return "", fmt.Errorf("context %s: want a JSON array of pools: %w", ContextPools, err)
		}
		return v, nil
	default:
		return "", fmt.Errorf("context %s: want a JSON array of pools, got %T", ContextPools, v)
	}
}
