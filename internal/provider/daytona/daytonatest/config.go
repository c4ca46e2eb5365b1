package daytonatest

import (
	"context"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/daytona"
)

// StandaloneConfig returns Config for serving the fake on its own (for
// Daytona's SDKs, users' tests, or a local stack): the system clock, one
// second per transition (three for a restore from archive), and a list
// that shows a deleted sandbox for 1.5 s, as Daytona's does.
func StandaloneConfig() Config {
	return Config{
		CreateTime: time.Second, BuildTime: 2 * time.Second, StartTime: time.Second, StopTime: time.Second,
		PauseTime: time.Second, ResumeTime: time.Second, RestoreTime: 3 * time.Second,
		ArchiveTime: time.Second, DeleteTime: time.Second, ListLag: 1500 * time.Millisecond,
	}
}

// ProviderConfig returns a daytona.Config aimed at this fake served at
// baseURL: its key and clock, and, when the clock is a
// *lifecycle.ManualClock, a Sleep that advances the clock by the wait
// instead of sleeping, so transitions settle and timers fire as the
// adapter polls, and no test sleeps. With another clock Sleep is left to
// the default.
func (s *Server) ProviderConfig(baseURL string) daytona.Config {
	cfg := daytona.Config{BaseURL: baseURL, APIKey: s.opts.APIKey, Clock: s.opts.Clock}
	if mc, ok := s.opts.Clock.(*lifecycle.ManualClock); ok {
		cfg.Sleep = func(ctx context.Context, d time.Duration) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			mc.Advance(d)
			return nil
		}
	}
	return cfg
}
