package apigw_test

import (
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/openapi/api"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// TestCreateRefusesBadMetadata: metadata that encoding/json would silently
// change (a null value, invalid UTF-8, an escaped lone surrogate) and a
// reserved key in any letter case are refused with a 400 naming the field,
// before anything is written.
func TestCreateRefusesBadMetadata(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)
	for _, tc := range []struct{ name, body, contains string }{
		{"NullValue", `{"template":"base","metadata":{"a":null}}`, `"a" is not a string`},
		{"InvalidUTF8Value", "{\"template\":\"base\",\"metadata\":{\"a\":\"\xff\xfe\"}}", "UTF-8"},
		{"InvalidUTF8Key", "{\"template\":\"base\",\"metadata\":{\"\xc3\x28\":\"x\"}}", "UTF-8"},
		{"LoneSurrogate", `{"template":"base","metadata":{"a":"\ud800"}}`, "UTF-8"},
		{"ReservedUpperCase", `{"template":"base","metadata":{"SANDMAN_SESSION_ID":"x"}}`, "reserved"},
		{"ReservedMixedCase", `{"template":"base","metadata":{"Sandman_deployment":"x"}}`, "reserved"},
		{"ValueTooLong", `{"template":"base","metadata":{"a":"` + strings.Repeat("é", 513) + `"}}`, "512 characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := h.prov.Calls(fake.OpCreate)
			r := h.invoke(t, MustEvent(t, "sessions-create.json", withHeader("idempotency-key", ""), withBody(tc.body)))
			wantError(t, r, 400, "invalid", tc.contains)
			if got := h.prov.Calls(fake.OpCreate) - before; got != 0 {
				t.Errorf("provider creates = %d, want 0", got)
			}
		})
	}
}

// TestMetadataLimitsCountCharacters: the key and value limits the message
// states in characters are counted in characters, not bytes:
// 64 two-byte characters of key and 512 of value are accepted, a
// literal U+FFFD is kept as sent.
func TestMetadataLimitsCountCharacters(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)
	key, value := strings.Repeat("é", 64), strings.Repeat("ü", 511)+"\uFFFD"
	r := h.invoke(t, MustEvent(t, "sessions-create.json", withHeader("idempotency-key", ""),
		withBody(`{"template":"base","metadata":{"`+key+`":"`+value+`"}}`)))
	wantStatus(t, r, 201)
	if got := mustDecode[api.Session](t, r).Metadata[key]; got != value {
		t.Errorf("metadata[%q] = %q, want %q", key, got, value)
	}
}
