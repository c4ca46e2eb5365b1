package infra

import (
	"strings"
	"testing"
)

// TestServiceAlarms: alarms on DynamoDB throttled requests, the HTTP API's
// 5xx, the WebSocket API's errors and the ErrorLogs metric exist; without
// a topic no alarm has an action, with sandman:alarmTopicArn every alarm of
// the stack notifies it (alarm and OK).
func TestServiceAlarms(t *testing.T) {
	s := MustDefaultStack(t)
	for id, wants := range map[string][]string{
		"TableThrottlesAlarm":     {"ThrottledRequests", "AWS/DynamoDB"},
		"HttpApi5xxAlarm":         {`"5xx"`, "AWS/ApiGateway"},
		"WebSocketApiErrorsAlarm": {"IntegrationError", "ExecutionError"},
		"ErrorLogsAlarm":          {`"` + ErrorLogsMetric + `"`},
	} {
		alarm := s.resource(t, s.logicalID(t, id), "AWS::CloudWatch::Alarm")
		doc := canonical(alarm.Properties)
		for _, w := range wants {
			if !strings.Contains(doc, w) {
				t.Errorf("%s: %s lacks %s", id, doc, w)
			}
		}
	}
	for id, a := range s.ofType("AWS::CloudWatch::Alarm") {
		if actions := prop(a, "AlarmActions"); actions != nil {
			t.Errorf("%s has actions %s without a topic", id, canonical(actions))
		}
	}

	withTopic := optionsStack(t)
	alarms := withTopic.ofType("AWS::CloudWatch::Alarm")
	if len(alarms) < 10 {
		t.Fatalf("%d alarms in the options stack, want them all", len(alarms))
	}
	for id, a := range alarms {
		for _, key := range []string{"AlarmActions", "OKActions"} {
			if got := strs(prop(a, key)); len(got) != 1 || got[0] != optionsTopicArn {
				t.Errorf("%s %s = %s, want [%s]", id, key, canonical(prop(a, key)), optionsTopicArn)
			}
		}
	}
}
