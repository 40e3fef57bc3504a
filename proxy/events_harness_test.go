package proxy_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/events/feed"
	"github.com/shepherd-proxy/shepherd/proxy"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// feedHarness is a real shepherd server with the live feed on: a
// publisher over the store's event log, given to the features and the
// server as the binary does, in front of the scripted mock provider.
type feedHarness struct {
	mock    *mock.Server
	srv     *proxy.Server
	cfg     *config.Config
	store   state.Store
	log     state.EventLog
	pub     *feed.Publisher
	metrics *proxy.Metrics
	URL     string
}

type feedOptions struct {
	Config func(*config.Config)
	Store  state.Store // default: an in-memory store with an event log
}

func newFeedHarness(t *testing.T, o feedOptions) *feedHarness {
	t.Helper()
	m := kit.StartMock(t, mock.Options{})
	cfg := config.Defaults()
	cfg.Upstreams.Anthropic, cfg.Upstreams.OpenAI, cfg.Upstreams.Gemini = m.URL(), m.URL(), m.URL()
	cfg.Admin.Listen = ""
	cfg.Listen = "127.0.0.1:0"
	cfg.Topics.Enabled = false
	cfg.Intents.Enabled = config.SwitchOff
	cfg.Recovery.Enabled = false
	cfg.Edits.Enabled = false
	cfg.Events.PollInterval = 50 * time.Millisecond
	if o.Config != nil {
		o.Config(&cfg)
	}
	require.NoError(t, cfg.Validate())
	st := o.Store
	if st == nil {
		st = newEventStore()
	}
	el, ok := st.(state.EventLog)
	require.True(t, ok, "the store keeps an event log")
	metrics := proxy.NewMetrics()
	log := zaptest.NewLogger(t)
	pub, err := feed.New(feed.Options{Log: el, Queue: cfg.Events.Queue, Metrics: metrics.Registry, Logger: log})
	require.NoError(t, err)
	counters, _ := st.(state.Counters) // as the binary wires them
	features, err := proxy.BuildFeaturesWith(&cfg, metrics, log, proxy.FeatureDeps{Events: pub, Counters: counters})
	require.NoError(t, err)
	srv, err := proxy.New(proxy.Options{Config: &cfg, Logger: log, Store: st, Metrics: metrics, Features: features, Events: pub})
	require.NoError(t, err)
	url := kit.Serve(t, srv, func() { _ = features.Close() }, func() { closeFeed(pub) }, func() { _ = st.Close() })
	return &feedHarness{mock: m, srv: srv, cfg: &cfg, store: st, log: el, pub: pub, metrics: metrics, URL: url}
}

// sseStream is an open feed, read frame by frame.
type sseStream struct {
	resp   *http.Response
	r      *bufio.Reader
	cancel context.CancelFunc
}

// openFeed GETs a feed and reads its opening comment; the stream closes
// when the test ends.
func openFeed(t *testing.T, url string, headers map[string]string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	require.NoError(t, err)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := rawClient.Do(req)
	require.NoError(t, err)
	s := &sseStream{resp: resp, r: bufio.NewReader(resp.Body), cancel: cancel}
	t.Cleanup(s.close)
	if resp.StatusCode == http.StatusOK {
		require.Equal(t, ": open\n\n", s.frame(t, 2*time.Second), "a feed opens with a comment")
	}
	return s
}

func (s *sseStream) close() {
	s.cancel()
	_ = s.resp.Body.Close()
}

// frame reads the next frame (through its blank line) within d.
func (s *sseStream) frame(t *testing.T, d time.Duration) string {
	t.Helper()
	type res struct {
		f   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		var b strings.Builder
		for {
			line, err := s.r.ReadString('\n')
			b.WriteString(line)
			if err != nil {
				ch <- res{b.String(), err}
				return
			}
			if line == "\n" {
				ch <- res{b.String(), nil}
				return
			}
		}
	}()
	select {
	case r := <-ch:
		if r.err != nil && r.err != io.EOF {
			t.Fatalf("reading the feed: %v (read %q)", r.err, r.f)
		}
		return r.f
	case <-time.After(d):
		s.close()
		t.Fatalf("no frame within %v", d)
		return ""
	}
}

// eventFrame is the frame of one event: the SSE fields and its data.
func eventFrame(id, typ, json string) string {
	return "id: " + id + "\nevent: " + typ + "\ndata: " + json + "\n\n"
}

// closeFeed closes the publisher, flushing what is queued (within five
// seconds).
func closeFeed(pub *feed.Publisher) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = pub.Close(ctx)
}
