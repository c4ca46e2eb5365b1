package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// What every command of `sandman sessions`, `webhooks`, `pools` and
// `client-tokens` shares: the flags -o, --url and --api-key, a command line
// whose flags may come before or after its arguments, errors that say in
// one line which flag is wrong, and how the API and its key are found.

// commonFlags are the flags every command takes.
type commonFlags struct {
	output string
	url    string
	// urlAPI is --url-api, the former name of --url on pools and
	// webhooks: accepted, undocumented, and warned about.
	urlAPI string
	apiKey string
}

// register adds the common flags to fs.
func (c *commonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.output, "o", "table", "output: table or json")
	fs.StringVar(&c.url, "url", "", "the API's URL")
	fs.StringVar(&c.urlAPI, "url-api", "", "deprecated: --url")
	fs.StringVar(&c.apiKey, "api-key", "", "the API key")
}

// newFlagSet returns an empty flag set that prints nothing.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// subcommand starts `<group> <command> [flags] [args]` (sandman
// webhooks, sandman checkpoints): args[0] names the command, which is
// returned with its flag set holding the common flags (the caller adds its
// own and calls parseArgs). A help request prints usage and returns a nil
// command. Errors: usage (no command).
func subcommand(group string, args []string, env Env, usage string) (*command, *flag.FlagSet, error) {
	if len(args) == 0 {
		return nil, nil, usagef("a command is required")
	}
	if isHelp(args[0]) {
		fmt.Fprint(env.Stdout, usage)
		return nil, nil, nil
	}
	c := &command{name: args[0]}
	fs := newFlagSet(group + " " + c.name)
	c.register(fs)
	return c, fs, nil
}

// parseArgs parses args (after the command's name) into fs and c.args,
// and reports whether they asked for help (usage printed). Errors: usage.
func (c *command) parseArgs(fs *flag.FlagSet, args []string, env Env, usage string) (bool, error) {
	var err error
	c.args, err = parseFlags(fs, args)
	if errors.Is(err, errHelp) {
		fmt.Fprint(env.Stdout, usage)
		return true, nil
	}
	return false, err
}

// wantArgs checks that c has n positional arguments. Errors: usage.
func (c *command) wantArgs(n int) error {
	if len(c.args) != n {
		return usagef("%s takes %d argument(s), got %q", c.name, n, c.args)
	}
	return nil
}

// errHelp asks for the command's usage on stdout (-h, --help).
var errHelp = errors.New("help")

// parseFlags parses args into fs, flags before or after the positional
// arguments, and returns the positional arguments. Errors: errHelp, or a
// usage error naming the flag in one line.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errHelp
			}
			return nil, usageError{flagMessage(err)}
		}
		if args = fs.Args(); len(args) == 0 {
			return pos, nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}

var (
	reUndefined = regexp.MustCompile(`^flag provided but not defined: -+(.+)$`)
	reNeedsArg  = regexp.MustCompile(`^flag needs an argument: -+(.+)$`)
	reInvalid   = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-+([^:]+): (.*)$`)
)

// flagMessage turns the flag package's error into one line that names the
// flag the way the usage writes it (--name).
func flagMessage(err error) string {
	msg := err.Error()
	if m := reUndefined.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("unknown flag %s", dashes(m[1]))
	}
	if m := reNeedsArg.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%s needs a value", dashes(m[1]))
	}
	if m := reInvalid.FindStringSubmatch(msg); m != nil {
		why := m[3]
		if why == "parse error" || strings.HasPrefix(why, "strconv.") {
			why = fmt.Sprintf("%q is not a valid value", m[1])
		}
		return fmt.Sprintf("%s: %s", dashes(m[2]), why)
	}
	return msg
}

// dashes writes a flag's name as the usage does: -o, --name.
func dashes(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// durationFlag is a flag holding a whole number of seconds written as a Go
// duration (90s, 10m, 2h); set reports whether it was given.
type durationFlag struct {
	d   time.Duration
	set bool
}

func (f *durationFlag) String() string { return f.d.String() }

// Set parses v. Errors: a sentence naming what a duration looks like.
func (f *durationFlag) Set(v string) error {
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a duration: write one such as 90s, 10m or 2h", v)
	case d < 0:
		return fmt.Errorf("%q is negative", v)
	case d%time.Second != 0:
		return fmt.Errorf("%q is not a whole number of seconds", v)
	}
	f.d, f.set = d, true
	return nil
}

// seconds returns the duration in whole seconds.
func (f *durationFlag) seconds() int64 { return int64(f.d / time.Second) }

// intFlag is a flag holding a whole number.
type intFlag struct{ n int }

func (f *intFlag) String() string { return strconv.Itoa(f.n) }

// Set parses v. Errors: a sentence saying a number is wanted.
func (f *intFlag) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("%q is not a whole number", v)
	}
	f.n = n
	return nil
}

// DefaultURL is the API when neither --url nor SANDMAN_URL is set: the local
// stack of `make run`.
const DefaultURL = "http://127.0.0.1:8080"

// DevKeyFile is where `make run` keeps the dev API key, under its state
// folder (SANDMAN_STATE_DIR, default .sandman).
const DevKeyFile = "dev_api_key"

// client returns the API's client for the parsed flags: the URL from --url
// (or its old name --url-api, with a warning on stderr), else SANDMAN_URL,
// else DefaultURL; the key from --api-key, else SANDMAN_API_KEY, else, for
// an API on this machine (a loopback host), the dev key `make run` keeps in
// <SANDMAN_STATE_DIR or .sandman>/dev_api_key when that file is there.
// Errors: a usage error for -o other than table or json, or no key.
func (c *commonFlags) client(env Env, name string) (*Client, error) {
	if c.output != "table" && c.output != "json" {
		return nil, usagef("-o must be table or json, not %q", c.output)
	}
	if c.urlAPI != "" {
		fmt.Fprintf(env.Stderr, "%s: --url-api is deprecated: use --url\n", name)
	}
	u := firstNonEmpty(c.url, c.urlAPI, env.Getenv("SANDMAN_URL"), DefaultURL)
	key := firstNonEmpty(c.apiKey, env.Getenv("SANDMAN_API_KEY"))
	if key == "" && loopback(u) {
		key = devKey(env)
	}
	if key == "" {
		return nil, usagef("no API key: set SANDMAN_API_KEY or pass --api-key (next to `make run`, its %s is read)",
			filepath.Join(stateDir(env), DevKeyFile))
	}
	return &Client{BaseURL: u, APIKey: key, HTTP: env.HTTP}, nil
}

// stateDir is `make run`'s state folder.
func stateDir(env Env) string { return firstNonEmpty(env.Getenv("SANDMAN_STATE_DIR"), ".sandman") }

// devKey returns the dev key `make run` keeps, "" when there is none.
func devKey(env Env) string {
	read := env.ReadFile
	if read == nil {
		read = os.ReadFile
	}
	b, err := read(filepath.Join(stateDir(env), DevKeyFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// loopback reports whether the API at raw is on this machine.
func loopback(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
