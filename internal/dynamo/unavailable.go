package dynamo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// StoreRetryAfter is the Retry-After sent with a store that is slow or
// unavailable (ours: long enough for a throttled table or a stalled
// connection to recover, short for an interactive client).
const StoreRetryAfter = 2 * time.Second

// throttlingCodes are DynamoDB's error codes for a table that is over its
// throughput or briefly unable to serve: worth a retry, not a bug.
var throttlingCodes = map[string]bool{
	"ThrottlingException":                    true,
	"ProvisionedThroughputExceededException": true,
	"RequestLimitExceeded":                   true,
	"InternalServerError":                    true,
	"ServiceUnavailable":                     true,
	"TransactionInProgressException":         true,
}

// storeError returns fmt.Errorf(format, args...) and, when the wrapped cause
// shows a store that is slow or unavailable (a deadline or timeout, a
// connection that failed, throttling, a 5xx after the SDK's retries), makes
// it a CodeUnavailable *lifecycle.Error with RetryAfter StoreRetryAfter: a
// 503 with Retry-After at the HTTP edge, never a 500 (docs/DESIGN.md "Activity
// and idle"). A failed condition, a bad request or a decode error
// is left as it is.
func storeError(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	if !unavailable(err) {
		return err
	}
	return &lifecycle.Error{Code: lifecycle.CodeUnavailable, RetryAfter: StoreRetryAfter, Err: err,
		Message: "the session store did not answer in time; retry later"}
}

// unavailable reports whether err is a store that did not answer in time.
func unavailable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true // timeouts, refused and reset connections
	}
	var api smithy.APIError
	if errors.As(err, &api) && throttlingCodes[api.ErrorCode()] {
		return true
	}
	var resp *awshttp.ResponseError
	return errors.As(err, &resp) && resp.HTTPStatusCode() >= 500
}
