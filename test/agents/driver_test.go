package agents

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// driver is everything the suite knows about one agent CLI.
type driver interface {
	// name is the CLI's name in test names and messages.
	name() string
	// bin is the executable under node_modules/.bin.
	bin() string
	// api is the test kit's name of the wire API the CLI speaks
	// (kit.Lookup).
	api() string
	// writeTool is the name of the CLI's own file-writing tool; requests
	// declaring it are turns of the agent loop.
	writeTool() string
	// writeCall is a writeTool call creating path (absolute) with content.
	writeCall(path, content string) mock.ToolCall
	// setup writes the CLI's config files into the run's private HOME and
	// returns the environment that points it at shepherd (base URL, key,
	// telemetry and update checks off).
	setup(t *testing.T, r *run) []string
	// args is the command line of a headless one-shot prompt.
	args(r *run, prompt string) []string
	// answer extracts the agent's final answer from what it printed.
	answer(stdout []byte) string
}

// wire is the kit's wire driver of the API d speaks.
func wire(d driver) kit.Driver {
	w, ok := kit.Lookup(d.api())
	if !ok {
		panic("no kit driver for " + d.api())
	}
	return w
}

// run is one invocation of an agent CLI.
type run struct {
	// Home is the private HOME (and config directory root) of this run.
	Home string
	// Workdir is the working directory (the stack's workdir).
	Workdir string
	// Proxy is shepherd's base URL.
	Proxy string
}

// result is what one run produced.
type result struct {
	Stdout, Stderr []byte
	Answer         string
	Start          time.Time
	Elapsed        time.Duration
	Err            error
}

// nodeBin is the directory the pinned CLIs are installed in.
func nodeBin() string {
	wd, _ := os.Getwd()
	return filepath.Join(wd, "node_modules", ".bin")
}

// requireCLI skips the test when d's CLI is not installed, unless
// SHEPHERD_AGENTS=1 (set by scripts/agents.sh), where that is a failure.
func requireCLI(t *testing.T, d driver) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(nodeBin(), d.bin())); err != nil {
		if os.Getenv("SHEPHERD_AGENTS") == "1" {
			t.Fatalf("%s is not installed under %s (run scripts/agents.sh)", d.bin(), nodeBin())
		}
		t.Skipf("%s not installed (scripts/agents.sh installs the pinned CLIs)", d.bin())
	}
}

// runTimeout bounds one agent run.
const runTimeout = 90 * time.Second

// runAgent runs d headless with prompt against s and returns what it
// printed. The process gets only the environment built here (PATH, a
// private HOME, the driver's variables), so nothing of the developer's own
// configuration or credentials leaks in.
func runAgent(t *testing.T, d driver, s *stack, prompt string) result {
	t.Helper()
	r := &run{Home: t.TempDir(), Workdir: s.Workdir, Proxy: s.URL}
	env := []string{
		"HOME=" + r.Home,
		"PATH=" + nodeBin() + string(os.PathListSeparator) + os.Getenv("PATH"),
		"TMPDIR=" + os.TempDir(),
		"LANG=C.UTF-8",
		"TERM=dumb",
		"NO_COLOR=1",
		"CI=1",
		"NO_PROXY=127.0.0.1,localhost",
		"DO_NOT_TRACK=1",
		"XDG_CONFIG_HOME=" + filepath.Join(r.Home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(r.Home, ".cache"),
		"XDG_DATA_HOME=" + filepath.Join(r.Home, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(r.Home, ".local", "state"),
	}
	env = append(env, d.setup(t, r)...)
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(nodeBin(), d.bin()), d.args(r, prompt)...)
	cmd.Dir = r.Workdir
	cmd.Env = env
	cmd.Stdin = strings.NewReader("")
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	res := result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Start: start, Elapsed: time.Since(start), Err: err}
	res.Answer = d.answer(res.Stdout)
	t.Logf("%s: %v in %s\nstdout:\n%s\nstderr:\n%s", d.name(), err, res.Elapsed.Round(time.Millisecond), tail(res.Stdout), tail(res.Stderr))
	return res
}

// mustRun is runAgent that requires a clean exit.
func mustRun(t *testing.T, d driver, s *stack, prompt string) result {
	t.Helper()
	res := runAgent(t, d, s, prompt)
	require.NoError(t, res.Err, "%s failed", d.name())
	return res
}

func tail(b []byte) string {
	const n = 4000
	if len(b) > n {
		return "…" + string(b[len(b)-n:])
	}
	return string(b)
}
