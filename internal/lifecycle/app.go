package lifecycle

import (
	"maps"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// AppSpec is the app a session's sandbox serves (docs/READINESS.md "The app
// spec"): Sandman starts StartCommand in the sandbox and calls the session
// ready once its preview answers at ReadyPath on Port.
type AppSpec struct {
	// Port is the sandbox port the app listens on, 1..65535 (required).
	Port int
	// StartCommand is a shell command line, run with sh -c (required,
	// 1..MaxStartCommandLen bytes).
	StartCommand string
	// Cwd is the working directory of the command: absolute in the
	// sandbox, or relative to its home ("" for the home).
	Cwd string
	// Env is added to the command's environment (at most MaxAppEnvKeys
	// names matching [A-Za-z_][A-Za-z0-9_]*).
	Env map[string]string
	// ReadyPath is the path probed on the preview; it starts with "/"
	// (default "/").
	ReadyPath string
	// ReadyTimeout is how long after the command starts the preview may
	// take to answer before readiness is failed (1 s..MaxReadyTimeout,
	// default DefaultReadyTimeout).
	ReadyTimeout time.Duration
}

// App spec bounds (ours: enough for a dev server, small enough for an item).
const (
	MaxStartCommandLen = 4096
	MaxAppCwdLen       = 1024
	MaxAppEnvKeys      = 64
	MaxAppEnvValueLen  = 4096
	MaxReadyPathLen    = 1024
	// MaxAppSpecBytes bounds the whole spec (command, cwd, ready path, env
	// names and values together): it is stored on the session item, which
	// every heartbeat rewrites, so it is kept to a few write units.
	MaxAppSpecBytes     = 8192
	DefaultReadyTimeout = 120 * time.Second
	MaxReadyTimeout     = 30 * time.Minute
)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// AppInput is an app spec as the API takes it: nil pointers and zero
// values mean "not given", so a template's default app spec
// (Config.TemplateApps) can fill them in.
type AppInput struct {
	Port                *int
	StartCommand        *string
	Cwd                 *string
	Env                 map[string]string
	ReadyPath           *string
	ReadyTimeoutSeconds *int64
}

// ResolveApp merges in over the template default def (either may be nil:
// no app) and validates the result. The session's own fields win field by
// field; env maps are merged, the session's names winning. It returns nil
// when neither gives an app. Errors: invalid naming the bad field.
func ResolveApp(def *AppSpec, in *AppInput) (*AppSpec, error) {
	if def == nil && in == nil {
		return nil, nil
	}
	var app AppSpec
	if def != nil {
		app = *def.Clone()
	}
	if in != nil {
		if in.Port != nil {
			app.Port = *in.Port
		}
		if in.StartCommand != nil {
			app.StartCommand = *in.StartCommand
		}
		if in.Cwd != nil {
			app.Cwd = *in.Cwd
		}
		if in.ReadyPath != nil {
			app.ReadyPath = *in.ReadyPath
		}
		if in.ReadyTimeoutSeconds != nil {
			if *in.ReadyTimeoutSeconds < 1 || *in.ReadyTimeoutSeconds > int64(MaxReadyTimeout/time.Second) {
				return nil, Errorf(CodeInvalid, "app.ready_timeout_seconds must be between 1 and %d", int64(MaxReadyTimeout/time.Second))
			}
			app.ReadyTimeout = time.Duration(*in.ReadyTimeoutSeconds) * time.Second
		}
		if len(in.Env) > 0 {
			if app.Env == nil {
				app.Env = make(map[string]string, len(in.Env))
			}
			maps.Copy(app.Env, in.Env)
		}
	}
	if app.ReadyPath == "" {
		app.ReadyPath = "/"
	}
	if app.ReadyTimeout == 0 {
		app.ReadyTimeout = DefaultReadyTimeout
	}
	if err := app.Validate(); err != nil {
		return nil, err
	}
	return &app, nil
}

// Validate checks a complete app spec against the bounds above.
// Errors: invalid naming the first bad field.
func (a *AppSpec) Validate() error {
	switch {
	case a.Port < 1 || a.Port > 65535:
		return Errorf(CodeInvalid, "app.port is required and must be between 1 and 65535")
	case strings.TrimSpace(a.StartCommand) == "":
		return Errorf(CodeInvalid, "app.start_command is required")
	case len(a.StartCommand) > MaxStartCommandLen || !utf8.ValidString(a.StartCommand):
		return Errorf(CodeInvalid, "app.start_command must be valid UTF-8 of at most %d bytes", MaxStartCommandLen)
	case strings.ContainsRune(a.StartCommand, 0) || strings.ContainsRune(a.Cwd, 0):
		return Errorf(CodeInvalid, "app.start_command and app.cwd must not contain a NUL character")
	case len(a.Cwd) > MaxAppCwdLen || !utf8.ValidString(a.Cwd):
		return Errorf(CodeInvalid, "app.cwd must be valid UTF-8 of at most %d bytes", MaxAppCwdLen)
	case !strings.HasPrefix(a.ReadyPath, "/") || len(a.ReadyPath) > MaxReadyPathLen ||
		strings.ContainsAny(a.ReadyPath, " \t\r\n#") || !utf8.ValidString(a.ReadyPath):
		return Errorf(CodeInvalid, "app.ready_path must start with / and be a URL path of at most %d bytes", MaxReadyPathLen)
	case a.ReadyTimeout < time.Second || a.ReadyTimeout > MaxReadyTimeout:
		return Errorf(CodeInvalid, "app.ready_timeout_seconds must be between 1 and %d", int64(MaxReadyTimeout/time.Second))
	case len(a.Env) > MaxAppEnvKeys:
		return Errorf(CodeInvalid, "app.env may hold at most %d variables", MaxAppEnvKeys)
	}
	total := len(a.StartCommand) + len(a.Cwd) + len(a.ReadyPath)
	for k, v := range a.Env {
		total += len(k) + len(v)
	}
	if total > MaxAppSpecBytes {
		return Errorf(CodeInvalid, "app is %d bytes (start_command, cwd, ready_path and env together); at most %d are allowed", total, MaxAppSpecBytes)
	}
	for k, v := range a.Env {
		if !envName.MatchString(k) {
			return Errorf(CodeInvalid, "app.env name %q is not a variable name ([A-Za-z_][A-Za-z0-9_]*)", k)
		}
		if len(v) > MaxAppEnvValueLen || !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
			return Errorf(CodeInvalid, "app.env value of %s must be valid UTF-8 of at most %d bytes without NUL", k, MaxAppEnvValueLen)
		}
	}
	return nil
}

// Clone returns a deep copy of a (nil for nil).
func (a *AppSpec) Clone() *AppSpec {
	if a == nil {
		return nil
	}
	c := *a
	c.Env = maps.Clone(a.Env)
	return &c
}

// Readiness says whether a running session's app answers (docs/READINESS.md):
// "" for a session without an app spec or not running.
type Readiness string

// The readiness values.
const (
	ReadinessStarting Readiness = "starting" // the command is being started or the preview does not answer yet
	ReadinessReady    Readiness = "ready"    // the preview answered at ready_path below 500
	ReadinessFailed   Readiness = "failed"   // not ready within ready_timeout, or the command exited
)

// MaxReadinessDetail bounds ReadinessDetail, in bytes.
const MaxReadinessDetail = 2048

// TruncateDetail returns d cut to at most MaxReadinessDetail bytes on a
// rune boundary, keeping its end (the last output lines matter most).
func TruncateDetail(d string) string {
	if len(d) <= MaxReadinessDetail {
		return d
	}
	cut := len(d) - MaxReadinessDetail + len("…")
	for cut < len(d) && !utf8.RuneStart(d[cut]) {
		cut++
	}
	return "…" + d[cut:]
}
