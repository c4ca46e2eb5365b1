package infra

import (
	"testing"
)

// TestIdlePauseUnreserved: no function reserves concurrency, so the stack
// creates on accounts at the new-account concurrency quota;
// the sweep is safe under overlap instead.
func TestIdlePauseUnreserved(t *testing.T) {
	s := MustDefaultStack(t)
	for id, fn := range s.ofType("AWS::Lambda::Function") {
		if v, ok := fn.Properties["ReservedConcurrentExecutions"]; ok {
			t.Errorf("function %s reserves concurrency %v", id, v)
		}
	}
}

// TestSystemLogsKeepStartReport: the system log level keeps Lambda's START
// and REPORT lines (duration, memory, init), which WARN drops.
func TestSystemLogsKeepStartReport(t *testing.T) {
	s := MustDefaultStack(t)
	for id, fn := range s.ofType("AWS::Lambda::Function") {
		cfg, _ := fn.Properties["LoggingConfig"].(map[string]any)
		if got := cfg["SystemLogLevel"]; got != "INFO" && got != "DEBUG" {
			t.Errorf("function %s: SystemLogLevel %v, want INFO (START/REPORT kept)", id, got)
		}
	}
}
