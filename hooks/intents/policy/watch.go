package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Defaults for WatchOptions.
const (
	DefaultDebounce = 50 * time.Millisecond
	DefaultPoll     = 2 * time.Second
)

// WatchOptions tune a Watcher. The zero value is usable.
type WatchOptions struct {
	// Debounce coalesces bursts of change events: a load happens once no
	// event has arrived for this long. Default DefaultDebounce (50ms).
	Debounce time.Duration
	// Poll is how often the file is also stat-ed (mtime, size, identity),
	// so changes are seen where inotify is unavailable or the directory did
	// not exist when watching started. Default DefaultPoll (2s).
	Poll time.Duration
	// OnLoad, when set, is called after every load attempt (the initial one
	// and reloads) whose outcome may differ from the previous attempt's: the
	// file's content changed, or reading it failed differently. err nil
	// means p is now the current policy; otherwise p is nil and the previous
	// good policy, if any, stays current. Calls are serialised, in load
	// order. OnLoad must not call the Watcher's Reload or Close.
	OnLoad func(p *Policy, err error)
}

// Status describes a Watcher's state, for health and admin endpoints.
type Status struct {
	File     string    `json:"file"`
	Loaded   bool      `json:"loaded"`             // a good policy is current
	LoadedAt time.Time `json:"loaded_at,omitzero"` // when the current policy was loaded
	Hash     string    `json:"hash,omitempty"`     // hex sha256 of the current policy's file bytes
	Intents  int       `json:"intents"`            // number of intents of the current policy
	Error    string    `json:"error,omitempty"`    // last load error, cleared by a good load
	ErrorAt  time.Time `json:"error_at,omitzero"`  // when Error was recorded
	Reloads  int64     `json:"reloads"`            // successful loads after the first
}

// Watcher keeps the current good policy of one file and reloads it when the
// file changes. It watches the file's parent directory with fsnotify (so
// editors that replace the file by rename are handled) and also polls the
// file every WatchOptions.Poll. A missing or broken file never replaces a good
// policy: the last good one stays current and the error is recorded in
// Status. Content whose hash equals that of the previous attempt is not
// parsed again. All methods are safe for concurrent use.
type Watcher struct {
	file string // as given
	path string // cleaned
	dir  string
	opts WatchOptions

	cur atomic.Pointer[Policy]

	loadMu  sync.Mutex // serialises loads and OnLoad calls; guards the fields below
	tried   bool       // a load was attempted
	lastKey string     // content hash, or "!"+error text, of the last attempt
	lastErr error      // outcome of the last attempt

	mu     sync.Mutex // guards status
	status Status

	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// Watch loads file once, synchronously, then watches it until Close. A
// missing or broken file is not an error here: it is recorded in Status and
// Policy stays nil until a good version appears. When fsnotify cannot be used
// (e.g. no inotify instances left) the Watcher falls back to polling alone.
// Watch returns an error only when watching cannot start at all (an empty
// file name).
func Watch(file string, opts WatchOptions) (*Watcher, error) {
	if file == "" {
		return nil, errors.New("policy: watch: empty file name")
	}
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	path := filepath.Clean(file)
	w := &Watcher{
		file:   file,
		path:   path,
		dir:    filepath.Dir(path),
		opts:   opts,
		done:   make(chan struct{}),
		status: Status{File: file},
	}

	// Start watching before the first load so no change can slip between.
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		fsw = nil // poll only
	}
	dirWatched := fsw != nil && fsw.Add(w.dir) == nil
	snap := w.stat()
	_ = w.load()

	w.wg.Add(1)
	go w.run(fsw, dirWatched, snap)
	return w, nil
}

// Policy returns the last good policy, nil if none was ever loaded. It is
// lock-free; the returned policy must not be modified.
func (w *Watcher) Policy() *Policy { return w.cur.Load() }

// Status returns a snapshot of the watcher's state.
func (w *Watcher) Status() Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status
}

// Reload loads the file now, synchronously, and returns the outcome: nil when
// a good policy is current from the file's present content, otherwise the
// read or parse error (also recorded in Status). Unchanged content is not
// parsed again; its previous outcome is returned. Reload works after Close
// too.
func (w *Watcher) Reload() error { return w.load() }

// Close stops watching and waits for the watcher's goroutine to exit. It is
// idempotent and always returns nil. Policy and Status keep working.
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() { close(w.done) })
	w.wg.Wait()
	return nil
}

// loadError is an error with its own message that still unwraps to the
// underlying os error.
type loadError struct {
	msg string
	err error
}

func (e *loadError) Error() string { return e.msg }
func (e *loadError) Unwrap() error { return e.err }

func (w *Watcher) load() error {
	w.loadMu.Lock()
	defer w.loadMu.Unlock()

	data, err := os.ReadFile(w.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = &loadError{msg: w.file + ": file not found", err: err}
		} else {
			err = fmt.Errorf("read policy file: %w", err)
		}
		return w.finish("!"+err.Error(), nil, err)
	}
	sum := sha256.Sum256(data)
	key := hex.EncodeToString(sum[:])
	if w.tried && key == w.lastKey {
		return w.lastErr
	}
	p, err := Parse(data, w.file)
	return w.finish(key, p, err)
}

// finish records the outcome of a load attempt; loadMu is held.
func (w *Watcher) finish(key string, p *Policy, err error) error {
	if w.tried && key == w.lastKey {
		return w.lastErr
	}
	w.tried, w.lastKey, w.lastErr = true, key, err

	w.mu.Lock()
	if err != nil {
		w.status.Error = err.Error()
		w.status.ErrorAt = time.Now()
	} else {
		prev := w.cur.Swap(p)
		if prev != nil {
			w.status.Reloads++
		}
		w.status.Loaded = true
		w.status.LoadedAt = p.LoadedAt
		w.status.Hash = p.Hash
		w.status.Intents = len(p.Intents)
		w.status.Error = ""
		w.status.ErrorAt = time.Time{}
	}
	w.mu.Unlock()

	if w.opts.OnLoad != nil {
		w.opts.OnLoad(p, err)
	}
	return err
}

// snapshot is what polling compares to notice a change.
type snapshot struct {
	info os.FileInfo // nil when the file cannot be stat-ed
}

func (w *Watcher) stat() snapshot {
	fi, err := os.Stat(w.path)
	if err != nil {
		return snapshot{}
	}
	return snapshot{info: fi}
}

func (s snapshot) differs(o snapshot) bool {
	if (s.info == nil) != (o.info == nil) {
		return true
	}
	if s.info == nil {
		return false
	}
	return !s.info.ModTime().Equal(o.info.ModTime()) || s.info.Size() != o.info.Size() || !os.SameFile(s.info, o.info)
}

func (w *Watcher) run(fsw *fsnotify.Watcher, dirWatched bool, last snapshot) {
	defer w.wg.Done()
	var (
		events <-chan fsnotify.Event
		errs   <-chan error
	)
	if fsw != nil {
		defer fsw.Close()
		events, errs = fsw.Events, fsw.Errors
	}
	poll := time.NewTicker(w.opts.Poll)
	defer poll.Stop()
	debounce := time.NewTimer(w.opts.Debounce)
	debounce.Stop()
	defer debounce.Stop()

	for {
		select {
		case <-w.done:
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			switch filepath.Clean(ev.Name) {
			case w.path:
				debounce.Reset(w.opts.Debounce)
			case w.dir:
				if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
					dirWatched = false // the kernel dropped the watch; re-added by poll
					debounce.Reset(w.opts.Debounce)
				}
			}
		case _, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			// Typically an event queue overflow: events may be lost, so look.
			debounce.Reset(w.opts.Debounce)
		case <-poll.C:
			if fsw != nil && !dirWatched && fsw.Add(w.dir) == nil {
				dirWatched = true
			}
			if now := w.stat(); now.differs(last) {
				last = now
				debounce.Reset(w.opts.Debounce)
			}
		case <-debounce.C:
			last = w.stat()
			_ = w.load()
		}
	}
}
