package console_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// This file has the helpers that read the page as a person sees it.

// waitText waits until the visible text of sel contains every want, and
// returns that text. On timeout it fails with the text last seen.
func waitText(t *testing.T, ctx context.Context, sel string, want ...string) string {
	t.Helper()
	var text string
	for {
		text = ""
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		got, err := chromedp.Run(c, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible))
		if err == nil {
			text = got
		}
		cancel()
		if err == nil && containsAll(text, want) {
			return text
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s never showed %q; last text:\n%s", sel, want, text)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func containsAll(s string, want []string) bool {
	for _, w := range want {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

// run runs browser actions, failing the test on error.
func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// requests records the URLs the tab requests, to prove the token never is
// in one.
type requests struct {
	ch chan string
}

func watchRequests(t *testing.T, ctx context.Context) *requests {
	t.Helper()
	r := &requests{ch: make(chan string, 1000)}
	err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			select {
			case r.ch <- e.Request.URL + e.Request.URLFragment:
			default:
			}
		}
	})
	require.NoError(t, err)
	return r
}

// urls drains what was recorded so far.
func (r *requests) urls() []string {
	var out []string
	for {
		select {
		case u := <-r.ch:
			out = append(out, u)
		default:
			return out
		}
	}
}

// location is the tab's current URL.
func location(t *testing.T, ctx context.Context) string {
	t.Helper()
	u, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	return u
}

// giveToken answers the console's token form.
func giveToken(t *testing.T, ctx context.Context, token string) {
	t.Helper()
	run(t, ctx, "give the token",
		chromedp.WaitVisible(chromedp.CSS("#token-form")),
		chromedp.SendKeys(chromedp.CSS("#token-input"), token),
		chromedp.Click(chromedp.CSS(`#token-form button[type="submit"]`)),
	)
}

// waitLive waits until the page follows the event feed.
func waitLive(t *testing.T, ctx context.Context) {
	t.Helper()
	run(t, ctx, "wait for the live feed", chromedp.WaitReady(chromedp.CSS(`body[data-live="on"]`)))
}

func sel(format string, args ...any) chromedp.CSS { return chromedp.CSS(fmt.Sprintf(format, args...)) }

// requireNoToken fails if token is in any of urls.
func requireNoToken(t *testing.T, urls []string, token string) {
	t.Helper()
	for _, u := range urls {
		require.NotContains(t, u, token, "the token must never be in a URL")
	}
}

// darkPhone makes the tab a phone-sized screen that prefers dark colours.
func darkPhone() chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile),
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}},
			})
			return err
		}),
	)
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, expr)
	return v
}
