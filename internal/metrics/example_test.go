package metrics_test

import (
	"os"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/metrics"
)

// A sweep's invocation: three idle pauses, each 12 s late, written as one
// line at the flush.
func ExampleEmitter_Flush() {
	e := metrics.New(metrics.Config{Writer: os.Stdout, Function: "sweep",
		Clock: lifecycle.NewManualClock(time.Date(2026, 11, 23, 4, 0, 0, 0, time.UTC))})
	for range 3 {
		e.Paused(lifecycle.ReasonIdle)
		e.PauseLag(12 * time.Second)
	}
	_ = e.Flush()
	// Output:
	// {"Function":"sweep","Pauses":3,"Reason":"idle","SweepLag":[12,12,12],"_aws":{"CloudWatchMetrics":[{"Namespace":"Sandman","Dimensions":[["Function","Reason"],["Reason"]],"Metrics":[{"Name":"Pauses","Unit":"Count"}]},{"Namespace":"Sandman","Dimensions":[["Function"],[]],"Metrics":[{"Name":"SweepLag","Unit":"Seconds"}]}],"Timestamp":1795406400000}}
}
