package lifecycle

import (
	"context"
	"net/http"
	"time"
)

// forAccount returns p with every call's ctx naming account
// (WithCallAccount), keeping p's optional interfaces as the provider call
// limiters do (WithOptional); p itself when account is "".
func forAccount(p Provider, account string) Provider {
	if account == "" {
		return p
	}
	base := accountProvider{p: p, account: account}
	var tr TimeoutReporter
	if r, ok := p.(TimeoutReporter); ok {
		tr = accountTimeout{base, r}
	}
	var cr CommandRunner
	if r, ok := p.(CommandRunner); ok {
		cr = accountCommands{base, r}
	}
	tc, _ := p.(TemplateChecker)
	return WithOptional(base, tr, tc, cr)
}

// accountProvider is forAccount's Provider.
type accountProvider struct {
	p       Provider
	account string
}

func (a accountProvider) ctx(ctx context.Context) context.Context {
	return WithCallAccount(ctx, a.account)
}

func (a accountProvider) Name() string { return a.p.Name() }

func (a accountProvider) Create(ctx context.Context, req CreateRequest) (Sandbox, error) {
	return a.p.Create(a.ctx(ctx), req)
}

func (a accountProvider) Get(ctx context.Context, sandboxID string) (Sandbox, error) {
	return a.p.Get(a.ctx(ctx), sandboxID)
}

func (a accountProvider) List(ctx context.Context, req ListRequest) (SandboxPage, error) {
	return a.p.List(a.ctx(ctx), req)
}

func (a accountProvider) Pause(ctx context.Context, sandboxID string) error {
	return a.p.Pause(a.ctx(ctx), sandboxID)
}

func (a accountProvider) Resume(ctx context.Context, sandboxID string, timeout time.Duration) (Sandbox, error) {
	return a.p.Resume(a.ctx(ctx), sandboxID, timeout)
}

func (a accountProvider) SetTimeout(ctx context.Context, sandboxID string, timeout time.Duration) error {
	return a.p.SetTimeout(a.ctx(ctx), sandboxID, timeout)
}

func (a accountProvider) Probe(ctx context.Context, sandboxID string) (Probe, error) {
	return a.p.Probe(a.ctx(ctx), sandboxID)
}

func (a accountProvider) Kill(ctx context.Context, sandboxID string) error {
	return a.p.Kill(a.ctx(ctx), sandboxID)
}

type accountTimeout struct {
	a  accountProvider
	tr TimeoutReporter
}

func (t accountTimeout) SetTimeoutUntil(ctx context.Context, sandboxID string, timeout time.Duration) (time.Time, error) {
	return t.tr.SetTimeoutUntil(t.a.ctx(ctx), sandboxID, timeout)
}

type accountCommands struct {
	a  accountProvider
	cr CommandRunner
}

func (c accountCommands) KeepsProcesses() bool { return c.cr.KeepsProcesses() }

func (c accountCommands) StartCommand(ctx context.Context, sandboxID string, cmd Command) (CommandStatus, error) {
	return c.cr.StartCommand(c.a.ctx(ctx), sandboxID, cmd)
}

func (c accountCommands) CommandStatus(ctx context.Context, sandboxID, name string) (CommandStatus, error) {
	return c.cr.CommandStatus(c.a.ctx(ctx), sandboxID, name)
}

func (c accountCommands) PortURL(ctx context.Context, sandboxID string, port int) (string, error) {
	return c.cr.PortURL(c.a.ctx(ctx), sandboxID, port)
}

func (c accountCommands) PortClosed(status int, header http.Header, body []byte) bool {
	return c.cr.PortClosed(status, header, body)
}
