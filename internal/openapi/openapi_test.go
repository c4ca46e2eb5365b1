package openapi_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sandmanhq/sandman/internal/openapi"
)

// TestDocsCopy: docs/openapi.json, what readers and generators use, is the
// embedded document byte for byte.
func TestDocsCopy(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, openapi.Document()) {
		t.Fatal("docs/openapi.json differs from internal/openapi/openapi.json: cp internal/openapi/openapi.json docs/openapi.json")
	}
}

func TestDocumentIsOpenAPI31(t *testing.T) {
	var doc struct {
		OpenAPI string `json:"openapi"`
	}
	if err := json.Unmarshal(openapi.Document(), &doc); err != nil {
		t.Fatal(err)
	}
	if got, want := doc.OpenAPI, "3.1.0"; got != want {
		t.Errorf("openapi = %q, want %q", got, want)
	}
}
