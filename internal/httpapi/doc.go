// Package httpapi is the toolkit every Sandman handler shares, below all of
// them: the API routes (internal/apigw), the provider hooks
// (internal/providerhook) and the client channel (internal/channel) import
// it, and it imports none of them, so the edges agree without importing each
// other.
//
// It holds:
//   - Responder: the one way an HTTP function answers (JSON for answers,
//     Error for the envelope {"status":"error","error":"<sentence>",
//     "error_type":"<type>"}), with the API's CORS and Cache-Control headers
//     and Retry-After in whole seconds.
//   - StatusFor: the one table from lifecycle.Code to HTTP status; ErrorType
//     and AppError name what an error answers as.
//   - WithLogAttrs and NewLogHandler: attributes a request's log lines carry.
//   - RequestBudget and DefaultRequestTimeout: how long a request may run
//     before its Lambda deadline.
//   - SessionJSON, StatusJSON, EnvelopeJSON, ReadinessJSON, AppJSON: the one
//     mapping from a lifecycle.Session to the API's JSON shapes
//     (internal/openapi/api), used by the routes and by the channel's push.
package httpapi
