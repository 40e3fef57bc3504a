package policy

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	waitFor = 5 * time.Second
	tick    = 5 * time.Millisecond
)

func policyText(id, summary string) string {
	return "version: 1\nintents:\n  - id: " + id + "\n    summary: " + summary + "\n"
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// replaceFile writes content the way editors do: a temp file renamed over path.
func replaceFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	writeFile(t, tmp, content)
	require.NoError(t, os.Rename(tmp, path))
}

func testOpts(onLoad func(*Policy, error)) WatchOptions {
	return WatchOptions{Debounce: 5 * time.Millisecond, Poll: 20 * time.Millisecond, OnLoad: onLoad}
}

// assertEventually polls cond like require.Eventually but reports instead
// of failing, so the caller can add diagnostics.
func assertEventually(cond func() bool) bool {
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(tick)
	}
	return true
}

func summaryOf(w *Watcher) string {
	p := w.Policy()
	if p == nil || len(p.Intents) == 0 {
		return ""
	}
	return p.Intents[0].Summary
}

func TestWatcherLifecycle(t *testing.T) {
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	file := filepath.Join(dir, "active_intents.yaml")
	writeFile(t, file, policyText("INT-001", "first"))

	var mu sync.Mutex
	var loads []error
	w, err := Watch(file, testOpts(func(p *Policy, err error) {
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, err == nil, p != nil)
		loads = append(loads, err)
	}))
	require.NoError(t, err)

	// Initial synchronous load.
	require.Equal(t, "first", summaryOf(w))
	st := w.Status()
	require.True(t, st.Loaded)
	require.Equal(t, file, st.File)
	require.Equal(t, 1, st.Intents)
	require.Empty(t, st.Error)
	require.Zero(t, st.Reloads)
	require.NotEmpty(t, st.Hash)
	first := w.Policy()

	// Broken content: old policy stays, error recorded with its line.
	writeFile(t, file, "version: 1\nintents:\n  - id: INT-001\n    summary: ok\n    bogus: 1\n")
	require.Eventually(t, func() bool { return w.Status().Error != "" }, waitFor, tick)
	st = w.Status()
	require.Contains(t, st.Error, file+":5: intents[0].bogus: unknown key")
	require.False(t, st.ErrorAt.IsZero())
	require.True(t, st.Loaded)
	require.Same(t, first, w.Policy())

	// Fixed: new policy, error cleared, reload counted.
	writeFile(t, file, policyText("INT-002", "second"))
	require.Eventually(t, func() bool { return summaryOf(w) == "second" }, waitFor, tick)
	st = w.Status()
	require.Empty(t, st.Error)
	require.True(t, st.ErrorAt.IsZero())
	require.EqualValues(t, 1, st.Reloads)
	require.Equal(t, w.Policy().Hash, st.Hash)

	// Rename-replace, as editors do.
	replaceFile(t, file, policyText("INT-003", "third"))
	require.Eventually(t, func() bool { return summaryOf(w) == "third" }, waitFor, tick)
	require.EqualValues(t, 2, w.Status().Reloads)

	// Unchanged content is skipped: no new OnLoad, no reload counted.
	mu.Lock()
	n := len(loads)
	mu.Unlock()
	replaceFile(t, file, policyText("INT-003", "third"))
	require.NoError(t, w.Reload())
	mu.Lock()
	require.Len(t, loads, n)
	mu.Unlock()
	require.EqualValues(t, 2, w.Status().Reloads)

	// Delete: last good policy kept, error says file not found.
	require.NoError(t, os.Remove(file))
	require.Eventually(t, func() bool { return w.Status().Error != "" }, waitFor, tick)
	require.Equal(t, file+": file not found", w.Status().Error)
	require.Equal(t, "third", summaryOf(w))
	err = w.Reload()
	require.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)

	// Re-created: picked up again.
	writeFile(t, file, policyText("INT-004", "fourth"))
	require.Eventually(t, func() bool { return summaryOf(w) == "fourth" }, waitFor, tick)
	require.Empty(t, w.Status().Error)

	mu.Lock()
	require.GreaterOrEqual(t, len(loads), 6)
	require.NoError(t, loads[0])
	mu.Unlock()

	// Status marshals to JSON with the documented keys.
	b, err := json.Marshal(w.Status())
	require.NoError(t, err)
	require.Contains(t, string(b), `"loaded":true`)
	require.NotContains(t, string(b), `"error_at"`)

	require.NoError(t, w.Close())
	require.NoError(t, w.Close(), "Close is idempotent")
	if !assertEventually(func() bool { return runtime.NumGoroutine() <= before }) {
		buf := make([]byte, 1<<16)
		t.Fatalf("goroutines leaked: before %d, now %d\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
	}

	// Still usable after Close.
	require.Equal(t, "fourth", summaryOf(w))
	writeFile(t, file, policyText("INT-005", "fifth"))
	require.NoError(t, w.Reload())
	require.Equal(t, "fifth", summaryOf(w))
}

func TestWatcherMissingThenCreated(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, ".orchestration")
	file := filepath.Join(dir, "active_intents.yaml")

	w, err := Watch(file, testOpts(nil))
	require.NoError(t, err)
	defer w.Close()
	require.Nil(t, w.Policy())
	st := w.Status()
	require.False(t, st.Loaded)
	require.Equal(t, file+": file not found", st.Error)

	// The directory did not exist when watching started: the poll finds it.
	require.NoError(t, os.MkdirAll(dir, 0o755))
	writeFile(t, file, policyText("INT-001", "late"))
	require.Eventually(t, func() bool { return summaryOf(w) == "late" }, waitFor, tick)
	st = w.Status()
	require.True(t, st.Loaded)
	require.Empty(t, st.Error)
	require.Zero(t, st.Reloads, "the first good load is not a reload")

	// Once the directory is watched, changes keep arriving.
	replaceFile(t, file, policyText("INT-002", "later"))
	require.Eventually(t, func() bool { return summaryOf(w) == "later" }, waitFor, tick)
	require.EqualValues(t, 1, w.Status().Reloads)
}

func TestWatcherBrokenAtStart(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	writeFile(t, file, "version: 1\nintents: [\n")
	var got []error
	w, err := Watch(file, testOpts(func(p *Policy, err error) { got = append(got, err) }))
	require.NoError(t, err)
	defer w.Close()
	require.Nil(t, w.Policy())
	require.Contains(t, w.Status().Error, file+":")
	require.Len(t, got, 1)
	var pe *ParseError
	require.ErrorAs(t, w.Reload(), &pe)
}

func TestWatcherPollOnly(t *testing.T) {
	// Debounce and event handling aside, the poll alone must notice changes:
	// use a file whose directory is a symlink swap target, as with Kubernetes
	// ConfigMaps, where inotify on the parent sees no event for the name.
	dir := t.TempDir()
	data1 := filepath.Join(dir, "data1")
	data2 := filepath.Join(dir, "data2")
	require.NoError(t, os.Mkdir(data1, 0o755))
	require.NoError(t, os.Mkdir(data2, 0o755))
	writeFile(t, filepath.Join(data1, "p.yaml"), policyText("INT-001", "one"))
	writeFile(t, filepath.Join(data2, "p.yaml"), policyText("INT-002", "two"))
	link := filepath.Join(dir, "current")
	require.NoError(t, os.Symlink("data1", link))

	w, err := Watch(filepath.Join(link, "p.yaml"), testOpts(nil))
	require.NoError(t, err)
	defer w.Close()
	require.Equal(t, "one", summaryOf(w))

	tmp := filepath.Join(dir, "current.tmp")
	require.NoError(t, os.Symlink("data2", tmp))
	require.NoError(t, os.Rename(tmp, link))
	require.Eventually(t, func() bool { return summaryOf(w) == "two" }, waitFor, tick)
}

func TestWatcherConcurrentReaders(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	writeFile(t, file, policyText("INT-001", "s0"))
	w, err := Watch(file, testOpts(nil))
	require.NoError(t, err)
	defer w.Close()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if p := w.Policy(); p != nil {
					_, _ = p.Intent("INT-001")
				}
				_ = w.Status()
			}
		}()
	}
	for i := 1; i <= 5; i++ {
		replaceFile(t, file, policyText("INT-001", "s"+string(rune('0'+i))))
		_ = w.Reload()
	}
	close(stop)
	wg.Wait()
	require.Equal(t, "s5", summaryOf(w))
}

func TestWatchEmptyName(t *testing.T) {
	_, err := Watch("", WatchOptions{})
	require.Error(t, err)
}
