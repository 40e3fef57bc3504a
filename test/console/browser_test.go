package console_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// One headless Chromium serves every test of this binary (a tab each);
// TestMain closes it.
var browser struct {
	once   sync.Once
	path   string
	ctx    context.Context
	cancel func()
	err    error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if browser.cancel != nil {
		browser.cancel()
	}
	os.Exit(code)
}

// chromiumPath finds a Chromium or Chrome binary ("" when none).
func chromiumPath() string {
	if p := os.Getenv("SHEPHERD_CHROMIUM_PATH"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome", "headless-shell", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// newTab opens a tab of the shared browser, skipping the test only when no
// Chromium can be found (scripts/ensure-chromium.sh, run by make test,
// installs one). The tab closes when the test ends; every action in it
// fails after within.
func newTab(t *testing.T, within time.Duration) context.Context {
	t.Helper()
	browser.once.Do(func() {
		browser.path = chromiumPath()
		if browser.path == "" {
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(browser.path),
			chromedp.NoSandbox, // tests may run as root, in a container
			chromedp.DisableGPU,
			chromedp.WindowSize(1280, 900),
		)
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelCtx := chromedp.NewContext(alloc)
		browser.ctx = ctx
		browser.cancel = func() { cancelCtx(); cancelAlloc() }
		browser.err = chromedp.Do(ctx) // starts the browser
	})
	if browser.path == "" && os.Getenv("SHEPHERD_REQUIRE_BROWSER") == "1" {
		t.Fatal("no Chromium found and SHEPHERD_REQUIRE_BROWSER=1 (make test sets it): scripts/ensure-chromium.sh should have installed one")
	}
	if browser.path == "" {
		t.Skip("no Chromium found (chromium, chromium-browser, google-chrome): run scripts/ensure-chromium.sh, " +
			"which make test runs, or set SHEPHERD_CHROMIUM_PATH")
	}
	if browser.err != nil {
		t.Fatalf("starting %s: %v", browser.path, browser.err)
	}
	tab, cancelTab := chromedp.NewContext(browser.ctx)
	ctx, cancel := context.WithTimeout(tab, within)
	t.Cleanup(func() { cancel(); cancelTab() })
	return ctx
}

// artifactsDir is where screenshots go: $SHEPHERD_ARTIFACTS, else the
// gitignored test/console/artifacts.
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SHEPHERD_ARTIFACTS")
	if dir == "" {
		dir = "artifacts"
	}
	dir = filepath.Join(dir, "console")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("artifacts dir: %v", err)
	}
	return dir
}

// screenshot saves the tab as PNG under name in the artifacts directory and
// returns its path.
func screenshot(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(artifactsDir(t), name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	t.Logf("screenshot: %s", p)
	return p
}

// viewShot saves what the window shows (not the whole page) as PNG under
// name in the artifacts directory.
func viewShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(artifactsDir(t), name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	t.Logf("screenshot: %s", p)
}
