package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/shepherd-proxy/shepherd/config"
)

// editsUsage is the help of `shepherd edits`.
const editsUsage = `usage: shepherd edits <list|show|revert> [N] --session ID [flags]

  list              the session's edit journal, oldest first (--path narrows it)
  show N            entry N: its facts and its diff
  revert N          the patch that undoes entry N
  revert N --apply  undo entry N in the workspace (--dir, default the current
                    directory); refused, nothing written, when the file changed
                    since the edit

flags:
`

// editsOptions are the flags of `shepherd edits`.
type editsOptions struct {
	Config, Admin, Token  string
	Session, Tenant, Path string
	Dir                   string
	Apply                 bool
	Timeout               time.Duration
}

// errUsage marks a command line that cannot run; its message is the usage
// problem.
var errUsage = errors.New("usage")

// runEdits is `shepherd edits …`: args are the arguments after "edits".
// Output goes to stdout, notes and help to stderr. An error means exit
// code 1 (a refused --apply included: nothing was written then).
func runEdits(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, pos, err := parseEditsFlags(args, stderr)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return fmt.Errorf("edits: %w: a subcommand is required: list, show N or revert N (shepherd edits -h)", errUsage)
	}
	if o.Session == "" {
		return fmt.Errorf("edits %s: %w: --session is required", pos[0], errUsage)
	}
	c, err := newAdminClient(o)
	if err != nil {
		return fmt.Errorf("edits %s: %w", pos[0], err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	switch sub, rest := pos[0], pos[1:]; sub {
	case "list", "ls":
		if len(rest) > 0 {
			return fmt.Errorf("edits list: %w: unexpected argument %q", errUsage, rest[0])
		}
		return editsList(ctx, c, o, stdout)
	case "show", "revert":
		seq, err := seqArg(sub, rest)
		if err != nil {
			return err
		}
		if sub == "show" {
			return editsShow(ctx, c, o, seq, stdout)
		}
		return editsRevert(ctx, c, o, seq, stdout)
	default:
		return fmt.Errorf("edits: %w: unknown subcommand %q (list, show N, revert N)", errUsage, sub)
	}
}

// parseEditsFlags reads the flags wherever they stand among the positional
// arguments (`revert 3 --apply` and `--apply revert 3` alike).
func parseEditsFlags(args []string, stderr io.Writer) (editsOptions, []string, error) {
	var o editsOptions
	fs := flag.NewFlagSet("shepherd edits", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.Config, "config", "", "YAML config file: the admin address and token default to its admin.listen and admin.token")
	fs.StringVar(&o.Admin, "admin", "", "admin API base URL (default: the config's admin address, else http://"+config.Defaults().Admin.Listen+")")
	fs.StringVar(&o.Token, "token", "", "admin token (default: env SHEPHERD_ADMIN_TOKEN, else the config's admin.token)")
	fs.StringVar(&o.Session, "session", "", "session id (required)")
	fs.StringVar(&o.Tenant, "tenant", "", "the session's tenant, when its id exists under several")
	fs.StringVar(&o.Path, "path", "", "list: only the entries of this path")
	fs.StringVar(&o.Dir, "dir", "", "revert --apply: the workspace relative paths are under (default: the current directory)")
	fs.BoolVar(&o.Apply, "apply", false, "revert: apply the revert in the workspace instead of printing the patch")
	fs.DurationVar(&o.Timeout, "timeout", 30*time.Second, "bound on the whole command")
	fs.Usage = func() {
		fmt.Fprint(stderr, editsUsage)
		fs.PrintDefaults()
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return o, nil, err
			}
			return o, nil, fmt.Errorf("edits: %w: %w", errUsage, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if o.Timeout <= 0 {
		return o, nil, fmt.Errorf("edits: %w: --timeout must be positive", errUsage)
	}
	return o, pos, nil
}

// seqArg reads the entry number of show and revert.
func seqArg(sub string, rest []string) (int64, error) {
	if len(rest) != 1 {
		return 0, fmt.Errorf("edits %s: %w: one entry number is required (see `shepherd edits list`)", sub, errUsage)
	}
	n, err := strconv.ParseInt(rest[0], 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("edits %s: %w: %q is not an entry number", sub, errUsage, rest[0])
	}
	return n, nil
}

// adminBase resolves the admin API's base URL and token: the flags, then
// the environment, then the config file when one is given, then the
// defaults (the default admin listener, no token).
func adminBase(o editsOptions) (base, token string, err error) {
	base, token = o.Admin, o.Token
	if token == "" {
		token = os.Getenv("SHEPHERD_ADMIN_TOKEN")
	}
	if base != "" && token != "" {
		return normalizeBase(base), token, nil
	}
	listen := config.Defaults().Admin.Listen
	if o.Config != "" {
		cfg, err := config.Load(config.LoadOptions{File: o.Config})
		if err != nil {
			return "", "", err
		}
		listen = cfg.Admin.Listen
		if listen == "" {
			listen = cfg.Listen // the admin endpoints share the main listener
		}
		if token == "" {
			token = cfg.Admin.Token
		}
	}
	if base == "" {
		base = "http://" + dialable(listen)
	}
	return normalizeBase(base), token, nil
}

// dialable turns a listen address into one to connect to: an unspecified
// host (":8788", "0.0.0.0:8788", "[::]:8788") becomes the loopback.
func dialable(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// normalizeBase adds http:// to a bare host:port and drops a final slash.
func normalizeBase(base string) string {
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	return strings.TrimRight(base, "/")
}
