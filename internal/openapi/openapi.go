// Package openapi holds the OpenAPI 3.1 document of Sandman's HTTP API
// (docs/DESIGN.md "Operators"), embedded so the sessions function serves it at
// GET /v1/openapi.json. It imports only the standard library, so the Lambda
// binaries stay small; the validator the handler tests run every answer
// through is internal/openapi/contract.
//
// openapi.json in this directory is the source; docs/openapi.json is the
// same file for readers and generators (a test asserts they are equal:
// after editing, `cp internal/openapi/openapi.json docs/openapi.json`).
// The document is hand-written, not generated from the handlers: it is the
// contract they are tested against, so a handler that drifts from it fails
// its tests instead of silently changing the contract.
package openapi

import _ "embed"

// document is the OpenAPI 3.1 document, JSON.
//
//go:embed openapi.json
var document []byte

// Document returns the OpenAPI 3.1 document as JSON, exactly as embedded.
// The caller must not modify it.
func Document() []byte { return document }
