package infra

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/sandmanhq/sandman/internal/provider/e2b"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/e2bhook"
)

func TestPropsFromContext(t *testing.T) {
	newApp := func(t *testing.T, ctx map[string]any) awscdk.App {
		t.Helper()
		return awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(t.TempDir())})
	}

	t.Run("Defaults", func(t *testing.T) {
		t.Setenv("CDK_DEFAULT_ACCOUNT", "")
		t.Setenv("CDK_DEFAULT_REGION", "")
		name, props, err := PropsFromContext(newApp(t, map[string]any{}))
		if err != nil {
			t.Fatalf("PropsFromContext: %v", err)
		}
		if got, want := name, DefaultStackName; got != want {
			t.Errorf("name: got %q, want %q", got, want)
		}
		if got, want := canonical(props.withDefaults().CORSAllowOrigins), canonical([]string{"*"}); got != want {
			t.Errorf("CORSAllowOrigins: got %s, want %s", got, want)
		}
		if props.Env != nil {
			t.Errorf("Env: got %v, want nil (environment-agnostic)", props.Env)
		}
	})

	t.Run("OK", func(t *testing.T) {
		t.Setenv("CDK_DEFAULT_ACCOUNT", "123456789012")
		t.Setenv("CDK_DEFAULT_REGION", "eu-west-1")
		name, props, err := PropsFromContext(newApp(t, map[string]any{
			ContextStackName:                  "SandmanDev",
			ContextFunctionsDir:               "/tmp/fns",
			ContextProvider:                   "local",
			e2b.Adapter.Key.ContextKey:        "dev/key",
			e2bhook.Webhook.Secret.ContextKey: "dev/hook",
			ContextCORSAllowOrigins:           "https://a.example, https://b.example",
		}))
		if err != nil {
			t.Fatalf("PropsFromContext: %v", err)
		}
		if got, want := name, "SandmanDev"; got != want {
			t.Errorf("name: got %q, want %q", got, want)
		}
		for _, c := range []struct{ got, want string }{
			{props.FunctionsDir, "/tmp/fns"},
			{props.Provider, "local"},
			{props.SecretNames[e2b.EnvAPIKeySecret], "dev/key"},
			{props.SecretNames[e2b.EnvWebhookSecretSecret], "dev/hook"},
		} {
			if c.got != c.want {
				t.Errorf("got %q, want %q", c.got, c.want)
			}
		}
		if got, want := canonical(props.CORSAllowOrigins), canonical([]string{"https://a.example", "https://b.example"}); got != want {
			t.Errorf("CORSAllowOrigins: got %s, want %s", got, want)
		}
		if props.Env == nil || *props.Env.Account != "123456789012" || *props.Env.Region != "eu-west-1" {
			t.Errorf("Env: got %+v, want 123456789012/eu-west-1", props.Env)
		}
	})

	t.Run("OriginsList", func(t *testing.T) {
		_, props, err := PropsFromContext(newApp(t, map[string]any{ContextCORSAllowOrigins: []any{"https://a.example"}}))
		if err != nil {
			t.Fatalf("PropsFromContext: %v", err)
		}
		if got, want := canonical(props.CORSAllowOrigins), canonical([]string{"https://a.example"}); got != want {
			t.Errorf("CORSAllowOrigins: got %s, want %s", got, want)
		}
	})

	t.Run("PauserConcurrency", func(t *testing.T) {
		for _, value := range []any{40, "40"} {
			_, props, err := PropsFromContext(newApp(t, map[string]any{ContextPauserConcurrency: value}))
			if err != nil {
				t.Fatalf("PropsFromContext(%v): %v", value, err)
			}
			if got, want := props.PauserConcurrency, 40.0; got != want {
				t.Errorf("PauserConcurrency from %#v: got %v, want %v", value, got, want)
			}
		}
		_, props, err := PropsFromContext(newApp(t, map[string]any{}))
		if err != nil {
			t.Fatalf("PropsFromContext: %v", err)
		}
		if got, want := props.withDefaults().PauserConcurrency, float64(DefaultPauserConcurrency); got != want {
			t.Errorf("default PauserConcurrency: got %v, want %v", got, want)
		}
	})

	t.Run("CapacitySettings", func(t *testing.T) {
		_, props, err := PropsFromContext(newApp(t, map[string]any{ContextShards: "256", ContextThrottleRateLimit: 8000,
			ContextThrottleBurstLimit: "16000", ContextPublisherParallelization: 4, ContextCheckpointConcurrency: "50", ContextEventRetentionDays: "90",
			ContextArchiveExpirationDays: 30, ContextArchiveEncryption: ArchiveEncryptionKMS}))
		if err != nil {
			t.Fatalf("PropsFromContext: %v", err)
		}
		for _, c := range []struct {
			name      string
			got, want float64
		}{
			{"Shards", props.Shards, 256}, {"ThrottleRateLimit", props.ThrottleRateLimit, 8000},
			{"ThrottleBurstLimit", props.ThrottleBurstLimit, 16000}, {"PublisherParallelization", props.PublisherParallelization, 4},
			{"CheckpointConcurrency", props.CheckpointConcurrency, 50}, {"ArchiveExpirationDays", props.ArchiveExpirationDays, 30}, {"EventRetentionDays", props.EventRetentionDays, 90},
		} {
			if c.got != c.want {
				t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
			}
		}
		if props.ArchiveEncryption != ArchiveEncryptionKMS {
			t.Errorf("ArchiveEncryption: got %q, want %q", props.ArchiveEncryption, ArchiveEncryptionKMS)
		}
		_, props, err = PropsFromContext(newApp(t, map[string]any{}))
		if err != nil {
			t.Fatalf("PropsFromContext: %v", err)
		}
		d := props.withDefaults()
		if d.Shards != 128 || d.ThrottleRateLimit != DefaultThrottleRateLimit || d.PublisherParallelization != 10 {
			t.Errorf("defaults: shards %v, rate %v, parallelization %v; want 128, %v, 10",
				d.Shards, d.ThrottleRateLimit, d.PublisherParallelization, float64(DefaultThrottleRateLimit))
		}
		if d.CheckpointConcurrency != DefaultCheckpointConcurrency || d.ArchiveExpirationDays != DefaultArchiveExpirationDays ||
			d.ArchiveEncryption != ArchiveEncryptionS3 {
			t.Errorf("defaults: checkpoint concurrency %v, archive expiry %v days, encryption %q; want %v, %v, %q",
				d.CheckpointConcurrency, d.ArchiveExpirationDays, d.ArchiveEncryption,
				DefaultCheckpointConcurrency, DefaultArchiveExpirationDays, ArchiveEncryptionS3)
		}
	})

	t.Run("HoldBackIndexes", func(t *testing.T) {
		for _, value := range []any{"by_owner_state", " by_owner_state ,", []any{"by_owner_state"}} {
			_, props, err := PropsFromContext(newApp(t, map[string]any{ContextHoldBackIndexes: value}))
			if err != nil {
				t.Fatalf("PropsFromContext(%#v): %v", value, err)
			}
			if got, want := canonical(props.HoldBackIndexes), canonical([]string{"by_owner_state"}); got != want {
				t.Errorf("HoldBackIndexes from %#v: got %s, want %s", value, got, want)
			}
		}
		if _, _, err := PropsFromContext(newApp(t, map[string]any{ContextHoldBackIndexes: "by_nothing"})); err == nil {
			t.Error("an unknown index was accepted")
		}
	})

	t.Run("LegacyOwnerIndex", func(t *testing.T) {
		for _, value := range []any{true, "true"} {
			_, props, err := PropsFromContext(newApp(t, map[string]any{ContextLegacyOwnerIndex: value}))
			if err != nil {
				t.Fatalf("PropsFromContext(%v): %v", value, err)
			}
			if !props.KeepLegacyOwnerIndex {
				t.Errorf("KeepLegacyOwnerIndex from %#v: got false, want true", value)
			}
		}
		if _, _, err := PropsFromContext(newApp(t, map[string]any{ContextLegacyOwnerIndex: "maybe"})); err == nil {
			t.Errorf("PropsFromContext(maybe): got no error")
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		for _, c := range []struct {
			key   string
			value any
		}{
			{ContextFunctionsDir, 42},
			{ContextCORSAllowOrigins, []any{1, 2}},
			{ContextPauserConcurrency, 1},
			{ContextPauserConcurrency, 1001},
			{ContextPauserConcurrency, "five"},
			{ContextPauserConcurrency, 2.5},
			{ContextShards, 0},
			{ContextShards, 1025},
			{ContextPublisherParallelization, 11},
			{ContextEventRetentionDays, 0},
			{ContextEventRetentionDays, 367},
			{ContextThrottleRateLimit, "fast"},
			{ContextCheckpointConcurrency, 1},
			{ContextArchiveExpirationDays, 0},
			{ContextArchiveExpirationDays, 3651},
			{ContextArchiveEncryption, "aes"},
		} {
			if _, _, err := PropsFromContext(newApp(t, map[string]any{c.key: c.value})); err == nil {
				t.Errorf("context %s=%v: got nil, want an error", c.key, c.value)
			}
		}
	})
}

// TestOperationsContext: sandman:webSocketAccessLogs takes off, create-role
// or account-role (anything else is refused at synthesis, not deployed), and
// sandman:alarmTopicArn reaches the props.
func TestOperationsContext(t *testing.T) {
	newApp := func(t *testing.T, ctx map[string]any) awscdk.App {
		t.Helper()
		return awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(t.TempDir())})
	}
	for _, v := range []string{WSAccessLogsOff, WSAccessLogsCreateRole, WSAccessLogsAccountRole} {
		_, props, err := PropsFromContext(newApp(t, map[string]any{ContextWebSocketAccessLogs: v, ContextAlarmTopicArn: "arn:aws:sns:eu-west-1:123456789012:t"}))
		if err != nil || props.WebSocketAccessLogs != v || props.AlarmTopicArn != "arn:aws:sns:eu-west-1:123456789012:t" {
			t.Errorf("%s: props %q %q, err %v", v, props.WebSocketAccessLogs, props.AlarmTopicArn, err)
		}
	}
	if _, _, err := PropsFromContext(newApp(t, map[string]any{ContextWebSocketAccessLogs: "on"})); err == nil {
		t.Error(`webSocketAccessLogs "on" accepted; want an error naming the three values`)
	}
}
