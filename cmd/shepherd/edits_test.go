package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/journal"
	"github.com/shepherd-proxy/shepherd/proxy"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

const editsToken = "edits-cli-token-41c2"

// editsProxy is a real proxy whose admin API serves a session's journal.
type editsProxy struct {
	Admin   string
	Store   state.Store
	Journal state.EditJournal
	Key     state.Key
}

// startEditsProxy starts a proxy with a dedicated admin listener and a
// token over a memory store, and creates session id.
func startEditsProxy(t *testing.T, id string) *editsProxy {
	t.Helper()
	cfg := config.Defaults()
	cfg.Listen, cfg.Admin.Listen, cfg.Admin.Token = "127.0.0.1:0", "127.0.0.1:0", editsToken
	require.NoError(t, cfg.Validate())
	st := state.NewMemory(state.MemoryOptions{MaxSessions: 10, TTL: time.Hour})
	metrics := proxy.NewMetrics()
	features, err := proxy.BuildFeaturesWith(&cfg, metrics, zap.NewNop(), proxy.FeatureDeps{})
	require.NoError(t, err)
	srv, err := proxy.New(proxy.Options{Config: &cfg, Logger: zap.NewNop(), Store: st, Metrics: metrics, Features: features})
	require.NoError(t, err)
	aln := kit.Listen(t)
	served := make(chan struct{})
	go func() { _ = srv.ServeAdmin(aln); close(served) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-served
		_ = features.Close()
		_ = st.Close()
	})
	key := state.Key{Tenant: "t-cli", Session: id}
	_, err = st.Update(context.Background(), key, func(s *state.Session) error { s.Agent = "claude-code"; return nil })
	require.NoError(t, err)
	j, ok := any(st).(state.EditJournal)
	require.True(t, ok, "the memory store keeps an edit journal")
	return &editsProxy{Admin: "http://" + aln.Addr().String(), Store: st, Journal: j, Key: key}
}

// append journals recs as the edits feature does and returns them stored.
func (p *editsProxy) append(t *testing.T, recs ...state.EditRecord) []state.EditRecord {
	t.Helper()
	out, err := p.Journal.AppendEdits(context.Background(), p.Key, 10, recs)
	require.NoError(t, err)
	return out
}

// edits runs `shepherd edits args...` in-process against p.
func (p *editsProxy) edits(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append(args, "--admin", p.Admin, "--token", editsToken)
	err := runEdits(context.Background(), args, &out, &errOut)
	require.NotContains(t, out.String()+errOut.String(), editsToken, "the token is never printed")
	if err != nil {
		require.NotContains(t, err.Error(), editsToken)
	}
	return out.String(), err
}

func sp(s string) *string { return &s }

// editRec is an applied entry with known contents, as the edits feature
// journals a Write of a file the session had read.
func editRec(path, op, chapter, before, after string) state.EditRecord {
	return state.EditRecord{Path: path, Tool: "Write", CallID: "toolu_" + op, Operation: op, Status: state.EditApplied,
		Chapter: chapter, Intent: "INT-001", Before: sp(before), After: sp(after), BeforeKnown: true,
		Diff: journal.Diff(path, before, after), Size: int64(len(after))}
}

const (
	loginV1 = "package login\n\nfunc Check(pw string) bool {\n\treturn true\n}\n"
	loginV2 = "package login\n\nfunc Check(pw string) bool {\n\treturn pw != \"\"\n}\n"
)

// TestEditsRevertApplyRoundTrip: entries journalled through the store are
// listed and shown by the command, `revert N` prints the patch, `revert N
// --apply` restores the workspace file, and a second --apply, the file
// having changed since, is refused with nothing written.
func TestEditsRevertApplyRoundTrip(t *testing.T) {
	p := startEditsProxy(t, "sess-cli")
	work := t.TempDir()
	login := filepath.Join(work, "src", "login.go")
	require.NoError(t, os.MkdirAll(filepath.Dir(login), 0o755))
	require.NoError(t, os.WriteFile(login, []byte(loginV2), 0o640))

	created := "package login\n\nfunc TestCheck(t *testing.T) {}\n"
	p.append(t,
		editRec("src/login.go", state.EditModify, "Harden the login form", loginV1, loginV2),
		editRec("tests/login_test.go", state.EditCreate, "Write the regression test", "", created),
		state.EditRecord{Path: "src/refused.go", Tool: "Bash", Operation: state.EditDelete, Status: state.EditRefused,
			Reason: "Bash is not allowed", Chapter: "Write the regression test"},
	)
	require.NoError(t, os.MkdirAll(filepath.Join(work, "tests"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(work, "tests", "login_test.go"), []byte(created), 0o644))

	out, err := p.edits(t, "list", "--session", "sess-cli")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, out)
	require.Regexp(t, `^SEQ\s+TIME\s+STATUS\s+OPERATION\s+PATH\s+CHAPTER\s+INTENT\s+TOOL$`, lines[0])
	require.Regexp(t, `^1\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\s+applied\s+modify\s+src/login.go\s+Harden the login form\s+INT-001\s+Write$`, lines[1])
	require.Regexp(t, `^3\s.*refused\s+delete\s+src/refused.go\s`, lines[3])

	out, err = p.edits(t, "list", "--session", "sess-cli", "--path", "tests/login_test.go")
	require.NoError(t, err)
	require.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 2, out)
	require.Contains(t, out, "tests/login_test.go")

	out, err = p.edits(t, "show", "1", "--session", "sess-cli")
	require.NoError(t, err)
	require.Contains(t, out, "edit 1: modify src/login.go (applied)")
	require.Contains(t, out, "Harden the login form")
	require.Contains(t, out, "-\treturn true\n+\treturn pw != \"\"\n")

	// revert prints the reverse patch and writes nothing.
	out, err = p.edits(t, "revert", "1", "--session", "sess-cli")
	require.NoError(t, err)
	require.Contains(t, out, "-\treturn pw != \"\"\n+\treturn true\n")
	require.Equal(t, loginV2, readText(t, login))

	// --apply restores it (the file keeps its mode).
	out, err = p.edits(t, "revert", "1", "--session", "sess-cli", "--apply", "--dir", work)
	require.NoError(t, err)
	require.Contains(t, out, "Reverted edit 1: restored the prior content of "+login)
	require.Equal(t, loginV1, readText(t, login))
	info, err := os.Stat(login)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), info.Mode().Perm())

	// The file no longer is the edit's after-state: refused, untouched.
	require.NoError(t, os.WriteFile(login, []byte(loginV1+"// more work\n"), 0o640))
	_, err = p.edits(t, "revert", "1", "--session", "sess-cli", "--apply", "--dir", work)
	require.ErrorIs(t, err, journal.ErrChanged)
	require.Contains(t, err.Error(), "refused, nothing written")
	require.Equal(t, loginV1+"// more work\n", readText(t, login))

	// The entry that created a file: reverting removes it.
	out, err = p.edits(t, "revert", "2", "--session", "sess-cli", "--apply", "--dir", work)
	require.NoError(t, err)
	require.Contains(t, out, "removed")
	_, err = os.Stat(filepath.Join(work, "tests", "login_test.go"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestEditsErrors: the API's error messages reach the person; usage
// mistakes are said before anything is asked.
func TestEditsErrors(t *testing.T) {
	p := startEditsProxy(t, "sess-err")
	p.append(t, state.EditRecord{Path: "a.txt", Tool: "Write", Operation: state.EditRewrite, Status: state.EditApplied})

	_, err := p.edits(t, "show", "99", "--session", "sess-err")
	require.Error(t, err)
	require.Contains(t, err.Error(), "404")

	_, err = p.edits(t, "revert", "1", "--session", "sess-err")
	require.Error(t, err)
	require.Contains(t, err.Error(), "cannot be reverted")

	_, err = p.edits(t, "list", "--session", "no-such-session")
	require.Error(t, err)
	require.Contains(t, err.Error(), "session not found")

	var out, errOut bytes.Buffer
	err = runEdits(context.Background(), []string{"list", "--session", "sess-err", "--admin", p.Admin, "--token", "wrong"}, &out, &errOut)
	require.Error(t, err)
	require.Contains(t, err.Error(), "401")
	require.Contains(t, err.Error(), "--token or SHEPHERD_ADMIN_TOKEN")
	require.NotContains(t, err.Error(), "wrong")

	for _, args := range [][]string{{"list"}, {"show", "--session", "s"}, {"revert", "x", "--session", "s"}, {"frob", "--session", "s"}, {}} {
		err := runEdits(context.Background(), args, &out, &errOut)
		require.ErrorIs(t, err, errUsage, "%v", args)
	}

	err = runEdits(context.Background(), []string{"list", "--session", "s", "--admin", "http://127.0.0.1:1"}, &out, &errOut)
	require.Error(t, err)
	require.Contains(t, err.Error(), "admin API at http://127.0.0.1:1")
}

func TestEditsAdminAddress(t *testing.T) {
	t.Setenv("SHEPHERD_ADMIN_TOKEN", "") // restored after the test
	require.NoError(t, os.Unsetenv("SHEPHERD_ADMIN_TOKEN"))
	base, token, err := adminBase(editsOptions{})
	require.NoError(t, err)
	require.Equal(t, "http://"+config.Defaults().Admin.Listen, base)
	require.Empty(t, token)

	cfgFile := filepath.Join(t.TempDir(), "shepherd.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("admin:\n  listen: 0.0.0.0:9911\n  token: from-config\n"), 0o600))
	base, token, err = adminBase(editsOptions{Config: cfgFile})
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:9911", base)
	require.Equal(t, "from-config", token)

	t.Setenv("SHEPHERD_ADMIN_TOKEN", "from-env")
	base, token, err = adminBase(editsOptions{Config: cfgFile, Admin: "admin.internal:7000/"})
	require.NoError(t, err)
	require.Equal(t, "http://admin.internal:7000", base)
	require.Equal(t, "from-env", token)
}

// TestEditsBinary runs the built binary once: `edits revert --apply`
// restores the file and exits 0; refused, it exits 1 and writes nothing.
func TestEditsBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	p := startEditsProxy(t, "sess-bin")
	work := t.TempDir()
	p.append(t, editRec("notes.txt", state.EditRewrite, "", "old notes\n", "new notes\n"))
	require.NoError(t, os.WriteFile(filepath.Join(work, "notes.txt"), []byte("new notes\n"), 0o644))

	run := func() (string, int) {
		cmd := exec.Command(bin, "edits", "revert", "1", "--session", "sess-bin", "--apply", "--admin", p.Admin)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "SHEPHERD_ADMIN_TOKEN="+editsToken)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		}
		require.NoError(t, err)
		return string(out), 0
	}
	out, code := run()
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Reverted edit 1")
	require.Equal(t, "old notes\n", readText(t, filepath.Join(work, "notes.txt")))

	out, code = run()
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "refused, nothing written")
	require.NotContains(t, out, editsToken)
	require.Equal(t, "old notes\n", readText(t, filepath.Join(work, "notes.txt")))
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}
