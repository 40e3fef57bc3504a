package proxy

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"github.com/shepherd-proxy/shepherd/config"
)

func TestOffStackRunsHandlerOnAHelper(t *testing.T) {
	var stack string
	p := newOffStackPool(func(ctx *fasthttp.RequestCtx) {
		buf := make([]byte, 16<<10)
		stack = string(buf[:runtime.Stack(buf, false)])
		ctx.SetStatusCode(fasthttp.StatusTeapot)
	}, time.Minute, 4)
	var ctx fasthttp.RequestCtx
	p.serve(&ctx)
	require.Equal(t, fasthttp.StatusTeapot, ctx.Response.StatusCode(), "what the handler did is visible when serve returns")
	require.Contains(t, stack, "proxy.(*offStackPool).work")
	require.NotContains(t, stack, "testing.tRunner", "the handler runs on another goroutine")
}

func TestOffStackReusesHelpers(t *testing.T) {
	p := newOffStackPool(func(*fasthttp.RequestCtx) {}, time.Minute, 4)
	for range 100 {
		p.serve(&fasthttp.RequestCtx{})
	}
	require.EqualValues(t, 1, p.started.Load(), "sequential requests share one helper")

	// Concurrent requests get one helper each.
	const n = 5
	release := make(chan struct{})
	var inside sync.WaitGroup
	inside.Add(n)
	p2 := newOffStackPool(func(*fasthttp.RequestCtx) {
		inside.Done()
		<-release
	}, time.Minute, 3)
	var served sync.WaitGroup
	for range n {
		served.Add(1)
		go func() {
			defer served.Done()
			p2.serve(&fasthttp.RequestCtx{})
		}()
	}
	inside.Wait()
	close(release)
	served.Wait()
	require.EqualValues(t, n, p2.started.Load())
	p2.mu.Lock()
	require.Len(t, p2.idle, 3, "at most maxIdle helpers wait for work")
	p2.mu.Unlock()
	require.Eventually(t, func() bool { return p2.stopped.Load() == n-3 }, 5*time.Second, 10*time.Millisecond,
		"the others stop at once")
}

func TestOffStackStopsIdleHelpers(t *testing.T) {
	const idleFor = 50 * time.Millisecond
	p := newOffStackPool(func(*fasthttp.RequestCtx) {}, idleFor, 8)
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.serve(&fasthttp.RequestCtx{})
		}()
	}
	wg.Wait()
	require.Eventually(t, func() bool { return p.stopped.Load() == p.started.Load() }, 5*time.Second, 10*time.Millisecond,
		"idle helpers stop")
	p.mu.Lock()
	require.Empty(t, p.idle)
	require.Nil(t, p.clean)
	p.mu.Unlock()

	// A helper in use is not stopped, and the pool works after a cleanup.
	p.serve(&fasthttp.RequestCtx{})
	started := p.started.Load()
	time.Sleep(idleFor / 2)
	p.serve(&fasthttp.RequestCtx{})
	require.Equal(t, started, p.started.Load(), "a recently used helper is reused")
	require.Eventually(t, func() bool { return p.stopped.Load() == p.started.Load() }, 5*time.Second, 10*time.Millisecond)
}

func TestRunsHooks(t *testing.T) {
	require.False(t, (*Features)(nil).runsHooks())
	cfg := config.Defaults()
	cfg.Topics.Enabled = false
	cfg.Intents.Enabled = config.SwitchOff
	cfg.Recovery.Enabled = false
	cfg.Edits.Enabled = false
	f, err := BuildFeatures(&cfg, NewMetrics(), nil)
	require.NoError(t, err)
	defer f.Close()
	require.False(t, f.runsHooks())

	cfg.Topics.Enabled = true
	f2, err := BuildFeatures(&cfg, NewMetrics(), nil)
	require.NoError(t, err)
	defer f2.Close()
	require.True(t, f2.runsHooks())
	require.False(t, f2.chain(routeNamed("messages").api).Empty())
}
