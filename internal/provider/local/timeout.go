package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/e2bhook"
)

// Run enforces timeouts: it calls Tick at once (catching up on whatever
// expired while no control plane ran) and then every Config.TickInterval,
// logging failures, until ctx is done; then it returns nil.
func (p *Provider) Run(ctx context.Context) error {
	t := time.NewTicker(p.cfg.TickInterval)
	defer t.Stop()
	for {
		if err := p.Tick(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("enforce sandbox timeouts", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Tick is EnforceTimeouts at the Provider's clock's now; it also ends the
// processes of sandboxes whose folder was removed behind its back
// (endRemoved) and opens the preview fronts of sandboxes that have none
// here (adoptFronts: a port another process held at New).
func (p *Provider) Tick(ctx context.Context) error {
	p.endRemoved()
	p.adoptFronts()
	return p.EnforceTimeouts(ctx, p.clock.Now())
}

// EnforceTimeouts applies E2B's timeout rule at now to every sandbox in the
// state folder: a running sandbox whose expires_at is not after now is
// paused when it was created with AutoPause and killed otherwise (webhook
// kill_reason "timeout"). It also removes the directories of sandboxes whose
// process has exited, which are gone for good. Each sandbox is re-checked
// under its lock, so a SetTimeout or Resume that lands first wins. It goes
// on past a failing sandbox and returns every failure joined.
func (p *Provider) EnforceTimeouts(ctx context.Context, now time.Time) error {
	ids, err := p.listIDs()
	if err != nil {
		return fmt.Errorf("enforce timeouts: %w", err)
	}
	var errs []error
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("enforce timeouts: %w", err))
			break
		}
		rec, state, err := p.load(opTimeout, id)
		switch {
		case errors.Is(err, lifecycle.ErrSandboxGone):
			if errors.Is(err, errNoRecord) {
				continue // being created, or a create that never finished
			}
			err = p.prune(ctx, id)
		case err != nil:
		case state == lifecycle.SandboxRunning && !now.Before(rec.ExpiresAt):
			err = p.expire(ctx, id, now)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// expire pauses or kills sandbox id if, under its lock, it still runs past
// its expires_at at now.
func (p *Provider) expire(ctx context.Context, id string, now time.Time) error {
	unlock, err := p.lock(ctx, opTimeout, id)
	if errors.Is(err, lifecycle.ErrSandboxGone) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unlock()
	rec, state, err := p.load(opTimeout, id)
	if errors.Is(err, lifecycle.ErrSandboxGone) {
		return nil
	}
	if err != nil {
		return err
	}
	if state != lifecycle.SandboxRunning || now.Before(rec.ExpiresAt) {
		return nil
	}
	p.log.Info("sandbox timed out", "sandbox_id", id, "expires_at", rec.ExpiresAt, "auto_pause", rec.AutoPause)
	if rec.AutoPause {
		return p.pauseLocked(ctx, opTimeout, rec, now)
	}
	return p.killLocked(ctx, opTimeout, rec, now, e2bhook.KillTimeout)
}

// prune removes the directory of sandbox id if, under its lock, its process
// has still exited.
func (p *Provider) prune(ctx context.Context, id string) error {
	unlock, err := p.lock(ctx, opTimeout, id)
	if errors.Is(err, lifecycle.ErrSandboxGone) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unlock()
	rec, err := p.readRecord(id)
	if errors.Is(err, errNoRecord) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("prune sandbox %s: %w", id, err)
	}
	if _, err := p.liveStat(rec); !errors.Is(err, fs.ErrNotExist) {
		return nil // alive after all, or unreadable: leave it
	}
	p.log.Warn("sandbox process has exited; removing its directory", "sandbox_id", id, "pid", rec.PID)
	return p.removeDir(id)
}
