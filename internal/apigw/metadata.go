package apigw

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// metadataBody is the metadata of a create: a JSON object of strings.
// encoding/json would turn a null value into "" and replace invalid UTF-8
// (raw bytes, or an escaped lone surrogate) with U+FFFD without a word;
// both are refused instead. metadata: null means none.
type metadataBody map[string]string

// UnmarshalJSON decodes b, a JSON object whose values are all strings.
// Errors: invalid, naming the key at fault.
func (m *metadataBody) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*m = nil
		return nil
	}
	if !utf8.Valid(b) {
		return invalidf("metadata must be valid UTF-8")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return invalidf("metadata must be an object of string values")
	}
	// An escaped lone surrogate decodes to U+FFFD; one the caller wrote is
	// there as itself or as \ufffd.
	literal := bytes.Contains(b, []byte("\uFFFD")) || bytes.Contains(bytes.ToLower(b), []byte(`\ufffd`))
	out := make(metadataBody, len(raw))
	for k, v := range raw {
		var s *string
		if err := json.Unmarshal(v, &s); err != nil || s == nil {
			return invalidf("metadata must be an object of string values (the value for %q is not a string)", truncate(k, 64))
		}
		if !literal && (strings.ContainsRune(k, utf8.RuneError) || strings.ContainsRune(*s, utf8.RuneError)) {
			return invalidf("metadata key %q or its value is not valid UTF-8 (a lone surrogate)", truncate(k, 64))
		}
		out[k] = *s
	}
	*m = out
	return nil
}
