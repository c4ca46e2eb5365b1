package calllimit

import (
	"context"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// stubProvider fails every call with err.
type stubProvider struct {
	err error
}

func (p stubProvider) Name() string { return "stub" }
func (p stubProvider) Create(context.Context, lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	return lifecycle.Sandbox{}, p.err
}
func (p stubProvider) Get(context.Context, string) (lifecycle.Sandbox, error) {
	return lifecycle.Sandbox{}, p.err
}
func (p stubProvider) List(context.Context, lifecycle.ListRequest) (lifecycle.SandboxPage, error) {
	return lifecycle.SandboxPage{}, p.err
}
func (p stubProvider) Pause(context.Context, string) error { return p.err }
func (p stubProvider) Resume(context.Context, string, time.Duration) (lifecycle.Sandbox, error) {
	return lifecycle.Sandbox{}, p.err
}
func (p stubProvider) SetTimeout(context.Context, string, time.Duration) error { return p.err }
func (p stubProvider) Probe(context.Context, string) (lifecycle.Probe, error) {
	return lifecycle.Probe{}, p.err
}
func (p stubProvider) Kill(context.Context, string) error { return p.err }

// stubBoth reports timeouts and checks templates, to see that Wrap keeps
// exactly the optional interfaces of what it wraps.
type stubBoth struct{ stubProvider }

func (p stubBoth) SetTimeoutUntil(context.Context, string, time.Duration) (time.Time, error) {
	return time.Unix(42, 0), p.err
}
func (stubBoth) CheckTemplate(context.Context, string) error {
	return lifecycle.Errorf(lifecycle.CodeInvalid, "checked")
}
