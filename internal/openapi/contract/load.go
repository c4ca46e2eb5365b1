// Package contract checks Sandman's HTTP API against its OpenAPI 3.1
// document (internal/openapi) with github.com/getkin/kin-openapi: Load
// lints the document with kin-openapi's own validation, and Validator checks
// a handler test's request and answer against it. Tests use it; the Lambda
// binaries do not link it.
package contract

import (
	"context"
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/sandmanhq/sandman/internal/openapi"
)

// Load parses and validates the embedded document (kin-openapi's own
// validation of OpenAPI 3.1: structure, references, schemas, examples).
// Errors: the document does not parse or does not validate.
func Load(ctx context.Context) (*openapi3.T, error) {
	return LoadData(ctx, openapi.Document())
}

// LoadData is Load for another document (JSON or YAML), e.g. a broken copy
// in a test.
func LoadData(ctx context.Context, data []byte) (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("load openapi document: %w", err)
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("validate openapi document: %w", err)
	}
	return doc, nil
}
