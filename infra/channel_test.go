package infra

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/routes"
)

// TestClientChannel pins the AWS side of docs/DESIGN.md "Client channel" (issue
// 18): the WebSocket API with its three routes to the channel function,
// its stage (throttling, access logs), ManageConnections on that stage's
// connections for exactly the channel and notifier functions, the
// generated client-token key set readable by exactly the functions that
// mint or verify tokens, the notifier's rule on the bus with its retries,
// dead-letter queue and alarm, and the WebSocketUrl output.
func TestClientChannel(t *testing.T) {
	s := MustDefaultStack(t)
	all := s.statements(t)
	apiID := s.logicalID(t, "WebSocketApi")
	stageID := s.logicalID(t, "WebSocketStage")
	channelID, notifierID := s.functionID(t, routes.Channel), s.functionID(t, routes.Notifier)

	t.Run("API", func(t *testing.T) {
		api := s.resource(t, apiID, "AWS::ApiGatewayV2::Api")
		if got, want := prop(api, "ProtocolType"), "WEBSOCKET"; got != want {
			t.Errorf("ProtocolType: got %v, want %v", got, want)
		}
		if got, want := prop(api, "RouteSelectionExpression"), "$request.body.action"; got != want {
			t.Errorf("RouteSelectionExpression: got %v, want %v", got, want)
		}
		var keys []string
		for _, r := range s.ofType("AWS::ApiGatewayV2::Route") {
			if !same(prop(r, "ApiId"), ref(apiID)) {
				continue
			}
			key, _ := prop(r, "RouteKey").(string)
			keys = append(keys, key)
			if got := prop(r, "AuthorizationType"); got != nil && got != "NONE" {
				t.Errorf("route %s: AuthorizationType %v, want none (the channel function checks the token)", key, got)
			}
			target := canonical(prop(r, "Target"))
			found := false
			for id, in := range s.ofType("AWS::ApiGatewayV2::Integration") {
				if !strings.Contains(target, `"`+id+`"`) {
					continue
				}
				found = true
				if got, want := prop(in, "IntegrationType"), "AWS_PROXY"; got != want {
					t.Errorf("route %s: IntegrationType %v, want %v", key, got, want)
				}
				if uri := canonical(prop(in, "IntegrationUri")); !strings.Contains(uri, `"`+channelID+`"`) {
					t.Errorf("route %s: integration %s, want the channel function", key, uri)
				}
			}
			if !found {
				t.Errorf("route %s: target %s is no integration", key, target)
			}
		}
		if got, want := sorted(keys), []string{"$connect", "$default", "$disconnect"}; !same(got, want) {
			t.Errorf("WebSocket routes: got %v, want %v", got, want)
		}
	})

	t.Run("Stage", func(t *testing.T) {
		stage := s.resource(t, stageID, "AWS::ApiGatewayV2::Stage")
		if got, want := prop(stage, "StageName"), WebSocketStageName; got != want {
			t.Errorf("StageName: got %v, want %v", got, want)
		}
		if got, want := prop(stage, "AutoDeploy"), true; got != want {
			t.Errorf("AutoDeploy: got %v, want %v", got, want)
		}
		settings, _ := prop(stage, "DefaultRouteSettings").(map[string]any)
		if got, want := settings["ThrottlingRateLimit"], float64(DefaultThrottleRateLimit); got != want {
			t.Errorf("ThrottlingRateLimit: got %v, want %v", got, want)
		}
		if got, want := settings["ThrottlingBurstLimit"], float64(DefaultThrottleBurstLimit); got != want {
			t.Errorf("ThrottlingBurstLimit: got %v, want %v", got, want)
		}
		if logs := prop(stage, "AccessLogSettings"); logs != nil {
			t.Errorf("access logs %s by default; they need an account setting a fresh account lacks", canonical(logs))
		}
	})

	t.Run("ManageConnections", func(t *testing.T) {
		for _, name := range routes.Functions {
			got := s.functionActions(t, all, name)["execute-api:ManageConnections"]
			if !slices.Contains(pushers, name) {
				if len(got) > 0 {
					t.Errorf("%s may ManageConnections on %v; only the pushers may", name, got)
				}
				continue
			}
			if len(got) != 1 {
				t.Fatalf("%s: ManageConnections on %v, want one resource", name, got)
			}
			// arn:…:execute-api:<region>:<account>:<api id>/live/*/@connections/*
			if r := got[0]; !strings.Contains(r, `"`+apiID+`"`) || !strings.Contains(r, "/"+WebSocketStageName+"/*/@connections/*") {
				t.Errorf("%s: ManageConnections on %s, want this API's %s stage's connections only", name, r, WebSocketStageName)
			}
		}
	})

	t.Run("ClientTokenKeys", func(t *testing.T) {
		keysID := s.logicalID(t, "ClientTokenKeys")
		secret := s.resource(t, keysID, "AWS::SecretsManager::Secret")
		gen, _ := prop(secret, "GenerateSecretString").(map[string]any)
		for key, want := range map[string]any{
			"SecretStringTemplate": `{"signing_key_id":"k1"}`,
			"GenerateStringKey":    "secret",
			"PasswordLength":       64.0, // 64 alphanumerics: standard base64 of 48 bytes
			"ExcludePunctuation":   true,
		} {
			if got := gen[key]; !same(got, want) {
				t.Errorf("GenerateSecretString.%s: got %v, want %v", key, got, want)
			}
		}
		if _, ok := secret.Properties["SecretString"]; ok {
			t.Error("the key set's value is in the template")
		}
		for _, name := range routes.Functions {
			var readers []string
			for a, resources := range s.functionActions(t, all, name) {
				if strings.HasPrefix(a, "secretsmanager:") && slices.Contains(resources, canonical(ref(keysID))) {
					readers = append(readers, a)
				}
			}
			want := []string(nil)
			if slices.Contains(clientTokenUsers, name) {
				want = []string{"secretsmanager:GetSecretValue"}
			}
			if got := sorted(readers); !same(got, want) {
				t.Errorf("%s: actions on the key set %v, want %v", name, got, want)
			}
			vars, _ := prop(s.resource(t, s.functionID(t, name), "AWS::Lambda::Function"), "Environment").(map[string]any)["Variables"].(map[string]any)
			if v, ok := vars[envnames.ClientTokenKeysSecret]; ok != slices.Contains(clientTokenUsers, name) || (ok && !same(v, ref(keysID))) {
				t.Errorf("%s: %s = %v, want the key set's ARN only on %v", name, envnames.ClientTokenKeysSecret, v, clientTokenUsers)
			}
		}
	})

	t.Run("URLs", func(t *testing.T) {
		env := func(name string) map[string]any {
			vars, _ := prop(s.resource(t, s.functionID(t, name), "AWS::Lambda::Function"), "Environment").(map[string]any)["Variables"].(map[string]any)
			return vars
		}
		ws := canonical(env(routes.Sessions)[envnames.WSURL])
		if !strings.Contains(ws, `"wss://"`) || !strings.Contains(ws, `"`+apiID+`"`) || !strings.Contains(ws, "/"+WebSocketStageName) {
			t.Errorf("sessions' %s = %s, want wss://<this API>/%s", envnames.WSURL, ws, WebSocketStageName)
		}
		for _, name := range pushers {
			mgmt := canonical(env(name)[envnames.WSManagementURL])
			if !strings.Contains(mgmt, `"https://"`) || !strings.Contains(mgmt, `"`+apiID+`"`) || !strings.Contains(mgmt, "/"+WebSocketStageName) {
				t.Errorf("%s's %s = %s, want https://<this API>/%s", name, envnames.WSManagementURL, mgmt, WebSocketStageName)
			}
		}
		out, ok := s.doc.Outputs["WebSocketUrl"]
		if !ok || canonical(out.Value) != ws {
			t.Errorf("WebSocketUrl output %s, want the sessions function's %s (%s)", canonical(out.Value), envnames.WSURL, ws)
		}
	})

	t.Run("Notifier", func(t *testing.T) {
		dlqID := s.logicalID(t, "NotifierDLQ")
		rule := s.resource(t, s.logicalID(t, "NotifierRule"), "AWS::Events::Rule")
		if got, want := prop(rule, "EventBusName"), ref(s.logicalID(t, "EventBus")); !same(got, want) {
			t.Errorf("EventBusName: got %s, want the stack's bus", canonical(got))
		}
		if got, want := prop(rule, "EventPattern"), map[string]any{"source": []any{"sandman"}}; !same(got, want) {
			t.Errorf("EventPattern: got %s, want %s", canonical(got), canonical(want))
		}
		targets, _ := prop(rule, "Targets").([]any)
		if len(targets) != 1 {
			t.Fatalf("targets: got %d, want 1", len(targets))
		}
		target := targets[0].(map[string]any)
		if got, want := target["Arn"], getAtt(notifierID, "Arn"); !same(got, want) {
			t.Errorf("target: got %s, want the notifier", canonical(got))
		}
		if got, want := target["DeadLetterConfig"], map[string]any{"Arn": getAtt(dlqID, "Arn")}; !same(got, want) {
			t.Errorf("target DeadLetterConfig: got %s, want the NotifierDLQ", canonical(got))
		}
		var configs int
		for _, c := range s.ofType("AWS::Lambda::EventInvokeConfig") {
			if !same(prop(c, "FunctionName"), ref(notifierID)) {
				continue
			}
			configs++
			if got, want := prop(c, "MaximumRetryAttempts"), float64(notifierRetryAttempts); got != want {
				t.Errorf("MaximumRetryAttempts: got %v, want %v", got, want)
			}
			dest := canonical(prop(c, "DestinationConfig"))
			if !strings.Contains(dest, `"`+dlqID+`"`) {
				t.Errorf("DestinationConfig: got %s, want the NotifierDLQ on failure", dest)
			}
		}
		if configs != 1 {
			t.Errorf("notifier event invoke configs: got %d, want 1", configs)
		}
		dlq := s.resource(t, dlqID, "AWS::SQS::Queue")
		if got, want := prop(dlq, "SqsManagedSseEnabled"), true; got != want {
			t.Errorf("NotifierDLQ SqsManagedSseEnabled: got %v, want %v", got, want)
		}
		alarm := s.resource(t, s.logicalID(t, "NotifierDLQAlarm"), "AWS::CloudWatch::Alarm")
		if got, want := prop(alarm, "Dimensions"), []any{map[string]any{"Name": "QueueName", "Value": getAtt(dlqID, "QueueName")}}; !same(got, want) {
			t.Errorf("NotifierDLQAlarm dimensions: got %s, want the NotifierDLQ", canonical(got))
		}
		// The notifier holds no secret and calls no provider.
		for a := range s.functionActions(t, all, routes.Notifier) {
			if strings.HasPrefix(a, "secretsmanager:") || strings.HasPrefix(a, "events:") {
				t.Errorf("the notifier may %s", a)
			}
		}
	})
}

// TestTemplateAcyclic: no resource of the template depends on itself
// through Ref, Fn::GetAtt, Fn::Sub or DependsOn. CloudFormation refuses a
// cycle only at deploy time, and the channel wiring is where one could
// come from (the channel function's environment and grants name the
// WebSocket API whose routes invoke it).
func TestTemplateAcyclic(t *testing.T) {
	s := MustDefaultStack(t)
	raw, err := json.Marshal(s.template.ToJSON())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Resources map[string]map[string]any `json:"Resources"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	sub := regexp.MustCompile(`\$\{([A-Za-z0-9]+)[.}]`)
	deps := map[string]map[string]bool{}
	var walk func(from string, v any)
	walk = func(from string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				switch k {
				case "Ref":
					if id, ok := x.(string); ok {
						deps[from][id] = true
					}
				case "Fn::GetAtt":
					if l, ok := x.([]any); ok && len(l) > 0 {
						deps[from][fmt.Sprint(l[0])] = true
					}
				case "Fn::Sub":
					str, _ := x.(string)
					if l, ok := x.([]any); ok && len(l) > 0 {
						str, _ = l[0].(string)
					}
					for _, m := range sub.FindAllStringSubmatch(str, -1) {
						deps[from][m[1]] = true
					}
				}
				walk(from, x)
			}
		case []any:
			for _, x := range v {
				walk(from, x)
			}
		}
	}
	for id, r := range doc.Resources {
		deps[id] = map[string]bool{}
		walk(id, r["Properties"])
		for _, d := range strs(r["DependsOn"]) {
			deps[id][d] = true
		}
	}
	const (
		unseen = iota
		onPath
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(id string) bool
	visit = func(id string) bool {
		switch state[id] {
		case onPath:
			t.Errorf("dependency cycle: %s -> %s", strings.Join(path, " -> "), id)
			return false
		case done:
			return true
		}
		state[id] = onPath
		path = append(path, id)
		for d := range deps[id] {
			if _, ok := doc.Resources[d]; ok && !visit(d) {
				return false
			}
		}
		path = path[:len(path)-1]
		state[id] = done
		return true
	}
	for _, id := range keys(doc.Resources) {
		if !visit(id) {
			return
		}
	}
	if len(state) < 50 {
		t.Errorf("walked %d resources; the template has more", len(state))
	}
}
