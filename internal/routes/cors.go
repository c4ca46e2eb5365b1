package routes

// The HTTP API's one CORS configuration (docs/DESIGN.md "HTTP API": CORS headers
// on every response). Once CORS is configured on an API Gateway HTTP API,
// API Gateway answers preflight OPTIONS requests itself and replaces the
// Access-Control-* headers of every integration response with its own
// configuration ("Configure CORS for HTTP APIs in API Gateway", developer
// guide), so whatever a function sends is lost in AWS. Hence one list each,
// used by the CDK stack's CorsPreflight (infra), by the local API Gateway
// (internal/localstack) and by the functions' own answers (internal/apigw),
// so the three cannot differ.
//
// Header names are case-insensitive (RFC 9110 section 5.1); they are
// written as docs/DESIGN.md and the clients spell them.
var (
	// CORSAllowHeaders are the request headers a browser may send
	// cross-origin (Access-Control-Allow-Headers): the two ways of passing
	// an API key (Authorization: Bearer, x-api-key), the JSON body's
	// Content-Type and the Idempotency-Key of creates.
	CORSAllowHeaders = []string{"Authorization", "Content-Type", "Idempotency-Key", "x-api-key"}
	// CORSAllowMethods are the methods of Table plus the preflight's own
	// OPTIONS (Access-Control-Allow-Methods).
	CORSAllowMethods = []string{"GET", "POST", "PATCH", "DELETE", "OPTIONS"}
	// CORSExposeHeaders are the response headers a browser lets scripts read
	// (Access-Control-Expose-Headers): Retry-After of errors a retry can
	// fix, Location of a created session, Idempotent-Replayed of a
	// replayed create.
	CORSExposeHeaders = []string{"Retry-After", "Location", "Idempotent-Replayed"}
)

// CORSMaxAgeSeconds is how long, in seconds, a browser may cache a
// preflight answer (Access-Control-Max-Age): one hour. Browsers cap it
// (Chromium at 2 hours, Firefox at 24 hours).
const CORSMaxAgeSeconds = 3600

// CORSAnyOrigin is the Access-Control-Allow-Origin that admits every origin,
// the default: the API authenticates with keys, not cookies, so it sends no
// Access-Control-Allow-Credentials.
const CORSAnyOrigin = "*"
