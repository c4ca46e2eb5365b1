package infra

import (
	"strings"
	"testing"

	"slices"

	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/provider/e2b"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/e2bhook"
	"github.com/sandmanhq/sandman/internal/routes"
)

// statement is one IAM policy statement as it decodes.
type statement struct {
	effect    string
	actions   []string
	resources []any
	raw       map[string]any
}

// statements returns every statement of every AWS::IAM::Policy and of every
// role's inline policies, by logical ID of the role it is attached to.
func (s *synthesized) statements(tb testing.TB) map[string][]statement {
	tb.Helper()
	out := make(map[string][]statement)
	add := func(roleID string, doc any) {
		list, _ := doc.(map[string]any)["Statement"].([]any)
		for _, item := range list {
			raw := item.(map[string]any)
			st := statement{raw: raw, actions: strs(raw["Action"])}
			st.effect, _ = raw["Effect"].(string)
			if res, ok := raw["Resource"].([]any); ok {
				st.resources = res
			} else {
				st.resources = []any{raw["Resource"]}
			}
			out[roleID] = append(out[roleID], st)
		}
	}
	for id, p := range s.ofType("AWS::IAM::Policy") {
		roles, _ := prop(p, "Roles").([]any)
		if len(roles) == 0 {
			tb.Errorf("policy %s is attached to no role", id)
		}
		for _, r := range roles {
			roleID, _ := r.(map[string]any)["Ref"].(string)
			add(roleID, prop(p, "PolicyDocument"))
		}
	}
	for id, r := range s.ofType("AWS::IAM::Role") {
		policies, _ := prop(r, "Policies").([]any)
		for _, p := range policies {
			add(id, p.(map[string]any)["PolicyDocument"])
		}
	}
	return out
}

// functionActions returns the allowed actions of function name's role, each
// with the canonical JSON of the resources it applies to.
func (s *synthesized) functionActions(tb testing.TB, all map[string][]statement, name string) map[string][]string {
	tb.Helper()
	out := make(map[string][]string)
	for _, st := range all[s.logicalID(tb, constructID(name)+"Role")] {
		if st.effect != "Allow" {
			continue
		}
		for _, a := range st.actions {
			for _, r := range st.resources {
				out[a] = append(out[a], canonical(r))
			}
		}
	}
	return out
}

func TestIAM(t *testing.T) {
	s := MustDefaultStack(t)
	all := s.statements(t)

	t.Run("NoWildcardActions", func(t *testing.T) {
		n := 0
		for roleID, list := range all {
			for _, st := range list {
				n++
				if _, ok := st.raw["NotAction"]; ok {
					t.Errorf("role %s: statement uses NotAction: %s", roleID, canonical(st.raw))
				}
				if len(st.actions) == 0 {
					t.Errorf("role %s: statement without actions: %s", roleID, canonical(st.raw))
				}
				for _, a := range st.actions {
					if strings.Contains(a, "*") {
						t.Errorf("role %s: wildcard action %q in %s", roleID, a, canonical(st.raw))
					}
				}
			}
		}
		if n == 0 {
			t.Fatal("no IAM policy statements found")
		}
	})

	t.Run("NoManagedPolicies", func(t *testing.T) {
		for id, r := range s.ofType("AWS::IAM::Role") {
			if arns, ok := r.Properties["ManagedPolicyArns"]; ok {
				t.Errorf("role %s: ManagedPolicyArns %s, want none", id, canonical(arns))
			}
		}
	})

	t.Run("OneRolePerFunction", func(t *testing.T) {
		if got, want := len(s.ofType("AWS::IAM::Role")), len(routes.Functions); got != want {
			t.Errorf("roles: got %d, want %d", got, want)
		}
	})

	// The table actions of every role are pinned by
	// TestRoleTableActionsPinned (infra/hardening_test.go).

	t.Run("PutEvents", func(t *testing.T) {
		bus := canonical(getAtt(s.logicalID(t, "EventBus"), "Arn"))
		var got []string
		for _, name := range routes.Functions {
			resources, ok := s.functionActions(t, all, name)["events:PutEvents"]
			if !ok {
				continue
			}
			got = append(got, name)
			if !same(resources, []string{bus}) {
				t.Errorf("%s events:PutEvents on %v, want only the lifecycle bus", name, resources)
			}
		}
		if want := publisherFunctions; !same(sorted(got), sorted(want)) {
			t.Errorf("functions that may PutEvents: got %v, want %v", got, want)
		}
	})

	t.Run("Secrets", func(t *testing.T) {
		readers := map[string][]string{} // secret name -> functions
		for _, name := range routes.Functions {
			for a, resources := range s.functionActions(t, all, name) {
				if !strings.HasPrefix(a, "secretsmanager:") {
					continue
				}
				if a != "secretsmanager:GetSecretValue" && a != "secretsmanager:DescribeSecret" {
					t.Errorf("%s may %s, want read only", name, a)
				}
				if a != "secretsmanager:GetSecretValue" {
					continue
				}
				for _, r := range resources {
					for _, secret := range []string{e2b.Adapter.Key.DefaultName, e2bhook.Webhook.Secret.DefaultName} {
						if strings.Contains(r, ":secret:"+secret+"-??????") {
							readers[secret] = append(readers[secret], name)
						}
					}
				}
			}
		}
		if got, want := sorted(readers[e2b.Adapter.Key.DefaultName]), sorted(providerKeyFunctions); !same(got, want) {
			t.Errorf("provider key readers: got %v, want %v", got, want)
		}
		if got, want := readers[e2bhook.Webhook.Secret.DefaultName], []string{routes.Webhook}; !same(got, want) {
			t.Errorf("webhook key readers: got %v, want %v", got, want)
		}
	})

	t.Run("LambdaTrust", func(t *testing.T) {
		for id, r := range s.ofType("AWS::IAM::Role") {
			doc := canonical(prop(r, "AssumeRolePolicyDocument"))
			if !strings.Contains(doc, `"lambda.amazonaws.com"`) || strings.Count(doc, `"Service"`) != 1 {
				t.Errorf("role %s: trust policy %s, want Lambda only", id, doc)
			}
		}
	})
}

// TestRoleTableActionsPinned pins each function role's DynamoDB actions and
// the resources they apply to: exactly what its code calls, item actions on
// the table and Query on the named indexes only; no Scan (but the sweep's
// on the sparse by_conn_session index), BatchGetItem, stream reads (but the
// publisher's) or index wildcards.
func TestRoleTableActionsPinned(t *testing.T) {
	s := MustDefaultStack(t)
	all := s.statements(t)
	tableID := s.logicalID(t, "SessionsTable")
	table := canonical(getAtt(tableID, "Arn"))
	stream := canonical(getAtt(tableID, "StreamArn"))
	index := func(name string) string {
		return canonical(map[string]any{"Fn::Join": []any{"", []any{getAtt(tableID, "Arn"), "/index/" + name}}})
	}
	onTable := func(actions ...string) map[string][]string {
		out := map[string][]string{}
		for _, a := range actions {
			out[a] = []string{table}
		}
		return out
	}
	with := func(m map[string][]string, indexes ...string) map[string][]string {
		for _, ix := range indexes {
			m["dynamodb:Query"] = append(m["dynamodb:Query"], index(ix))
		}
		return m
	}
	want := map[string]map[string][]string{
		routes.Sessions:  with(onTable("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:Query", "dynamodb:BatchGetItem"), tabledef.IndexByOwner, tabledef.IndexByOwnerState),
		routes.Status:    onTable("dynamodb:GetItem"),
		routes.Resume:    onTable("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"),
		routes.Pause:     onTable("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"),
		routes.Reconnect: onTable("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"),
		routes.Webhook:   with(onTable("dynamodb:PutItem", "dynamodb:UpdateItem"), tabledef.IndexBySandbox),
		// the sweep's phases, and connections that lost their socket: a
		// Scan of the sparse by_conn_session index, DeleteItem, the
		// session's remaining ones by Query on that index; warm pools'
		// spares by Query on the table (POOL#*).
		routes.Sweep: func() map[string][]string {
			m := with(onTable("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:Query"),
				tabledef.IndexIdle, tabledef.IndexLease, tabledef.IndexPaused, tabledef.IndexBySandbox, tabledef.IndexByConnSession)
			m["dynamodb:Scan"] = []string{index(tabledef.IndexByConnSession)}
			return m
		}(),
		// FireTimer: GetItem, then PauseIfDue's conditional PutItem with
		// the running-slot counter's UpdateItem (the quota), as the sweep.
		routes.Timer: onTable("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"),
		// BringUp: the session and its conditional readiness write.
		routes.Readiness: onTable("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"),
		// connections (put, get, delete, by session) and the session writes
		// of heartbeats, presence and resume.
		routes.Channel: with(onTable("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"),
			tabledef.IndexByConnSession),
		// the session and its connections; gone ones deleted and the
		// session's presence recomputed (a PutItem that moves no slot).
		routes.Notifier: with(onTable("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem"), tabledef.IndexByConnSession),
		// an account's endpoints and an endpoint's parked deliveries (Query
		// on the table), a delivery, its endpoint and the endpoint's watch
		// (GetItem), conditional writes of them (PutItem), a parking
		// claimed (UpdateItem), woken or a watch ended (DeleteItem).
		routes.Deliver: onTable("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:Query"),
		// a session and its checkpoints (GetItem), their conditional
		// writes (PutItem, UpdateItem for the running slot), a deleted
		// checkpoint (DeleteItem), a session's checkpoints (Query on the
		// table, SESSION#* only).
		routes.Checkpoint: onTable("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:Query"),
		// the stream, granted by its event source mapping (ListStreams has
		// no resource-level permission), and the usage transaction's
		// UpdateItem and PutItem (internal/dynamo usage.go).
		routes.Publisher: {
			"dynamodb:PutItem":          {table},
			"dynamodb:UpdateItem":       {table},
			"dynamodb:DescribeStream":   {stream},
			"dynamodb:GetShardIterator": {stream},
			"dynamodb:GetRecords":       {stream},
			"dynamodb:ListStreams":      {`"*"`},
		},
	}
	for _, name := range routes.Functions {
		got := map[string][]string{}
		for a, resources := range s.functionActions(t, all, name) {
			if strings.HasPrefix(a, "dynamodb:") {
				got[a] = sorted(resources)
			}
		}
		w := want[name]
		if w == nil {
			t.Errorf("%s: no pinned table actions", name)
			continue
		}
		for a := range w {
			w[a] = sorted(w[a])
		}
		for a, r := range got {
			if !slices.Equal(r, w[a]) {
				t.Errorf("%s may %s on %v, want %v", name, a, r, w[a])
			}
		}
		for a := range w {
			if _, ok := got[a]; !ok {
				t.Errorf("%s may not %s, its code calls it", name, a)
			}
		}
	}
}

// TestIAMNarrowedToCalls: no function may DescribeSecret (only secret values
// are read); the sessions function's Query on the table itself is bounded
// by dynamodb:LeadingKeys to usage and event partitions (not API keys or
// claims); only the sweep may Scan, and only the sparse by_conn_session
// index.
func TestIAMNarrowedToCalls(t *testing.T) {
	s := MustDefaultStack(t)
	all := s.statements(t)
	for _, name := range routes.Functions {
		acts := s.functionActions(t, all, name)
		if _, ok := acts["secretsmanager:DescribeSecret"]; ok {
			t.Errorf("%s may DescribeSecret", name)
		}
		if scans, ok := acts["dynamodb:Scan"]; ok {
			if name != routes.Sweep || len(scans) != 1 || !strings.Contains(scans[0], "/index/by_conn_session") {
				t.Errorf("%s may Scan %v; only the sweep, on by_conn_session", name, scans)
			}
		}
	}
	for _, st := range all[s.logicalID(t, constructID(routes.Sessions)+"Role")] {
		if !slices.Contains(st.actions, "dynamodb:Query") {
			continue
		}
		for _, r := range st.resources {
			if strings.Contains(canonical(r), "/index/") {
				continue
			}
			cond := canonical(st.raw["Condition"])
			if !strings.Contains(cond, "dynamodb:LeadingKeys") || !strings.Contains(cond, "ACCOUNT#*") ||
				!strings.Contains(cond, "SESSION#*") || strings.Contains(cond, "APIKEY") {
				t.Errorf("sessions may Query the table with condition %s, want LeadingKeys ACCOUNT#* and SESSION#* only", cond)
			}
		}
	}
}
