package mock_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	anthropic "github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/genai"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

func TestRecording(t *testing.T) {
	s := start(t, mock.Options{})
	body := `{"model":"claude-x","max_tokens":5,"messages":[]}`
	resp := post(t, s.URL()+"/v1/messages?beta=true", body,
		"Anthropic-Version", "2023-06-01", "X-Custom", "a")
	require.Equal(t, 200, resp.StatusCode)
	readAll(t, resp)

	reqs := s.Requests()
	require.Len(t, reqs, 1)
	r := reqs[0]
	require.Equal(t, "POST", r.Method)
	require.Equal(t, "/v1/messages", r.Path)
	require.Equal(t, "beta=true", r.Query)
	require.Equal(t, "2023-06-01", r.Header.Get("Anthropic-Version"))
	require.Equal(t, "a", r.Header.Get("X-Custom"))
	require.Equal(t, body, string(r.Body))
	require.WithinDuration(t, time.Now(), r.Time, 5*time.Second)

	// The recorded body and headers are copies.
	reqs[0].Body[0] = 'X'
	reqs[0].Header.Set("X-Custom", "changed")
	again, _ := s.Last()
	require.Equal(t, body, string(again.Body))
	require.Equal(t, "a", again.Header.Get("X-Custom"))

	readAll(t, post(t, s.URL()+"/nowhere", "{}"))
	last, _ := s.Last()
	require.Equal(t, "/nowhere", last.Path)
	require.Equal(t, "", last.API)
	require.Len(t, s.Requests(), 2)

	s.Script(mock.Reply{Text: "queued"})
	require.Equal(t, 1, s.Pending())
	s.Reset()
	require.Empty(t, s.Requests())
	require.Equal(t, 0, s.Pending())
	_, ok := s.Last()
	require.False(t, ok)

	n := start(t, mock.Options{NoRecord: true})
	readAll(t, post(t, n.URL()+"/v1/messages", body))
	require.Empty(t, n.Requests())
	require.Equal(t, uint64(1), n.Served())
}

func TestNotFoundShapes(t *testing.T) {
	s := start(t, mock.Options{})
	resp := post(t, s.URL()+"/v1/unknown", "{}", "Anthropic-Version", "2023-06-01")
	require.Equal(t, 404, resp.StatusCode)
	require.JSONEq(t, `{"type":"error","error":{"type":"not_found_error","message":"mock: no route for POST /v1/unknown"},"request_id":"req_mocknotfound"}`,
		string(readAll(t, resp)))

	resp = post(t, s.URL()+"/v1/unknown", "{}")
	require.Equal(t, 404, resp.StatusCode)
	require.JSONEq(t, `{"error":{"message":"mock: no route for POST /v1/unknown","type":"invalid_request_error","param":null,"code":null}}`,
		string(readAll(t, resp)))

	c := genaiClient(t, s)
	_, err := c.Models.EmbedContent(ctxT(t), "gemini-x", genai.Text("hi"), nil)
	var apierr genai.APIError
	require.ErrorAs(t, err, &apierr)
	require.Equal(t, 404, apierr.Code)
	require.Equal(t, "NOT_FOUND", apierr.Status)
}

// Two servers given identical scripts and requests produce byte-identical
// bodies and streams, for every API and form.
func TestDeterminism(t *testing.T) {
	cases := []struct{ path, body string }{
		{"/v1/messages", `{"model":"claude-x","max_tokens":10}`},
		{"/v1/messages", `{"model":"claude-x","max_tokens":10,"stream":true}`},
		{"/v1/chat/completions", `{"model":"gpt","messages":[]}`},
		{"/v1/chat/completions", `{"model":"gpt","stream":true,"stream_options":{"include_usage":true}}`},
		{"/v1/responses", `{"model":"gpt","input":"hi"}`},
		{"/v1/responses", `{"model":"gpt","input":"hi","stream":true}`},
		{"/v1beta/models/gemini-x:generateContent", `{"contents":[]}`},
		{"/v1beta/models/gemini-x:streamGenerateContent?alt=sse", `{"contents":[]}`},
		{"/v1beta/models/gemini-x:streamGenerateContent", `{"contents":[]}`},
	}
	script := []mock.Reply{richReply(), {Text: "second", Stop: "max_tokens"}, {PadText: 300}}
	run := func() [][]byte {
		s := start(t, mock.Options{ChunkSize: 11})
		var out [][]byte
		for _, c := range cases {
			s.Script(script...)
			for range script {
				out = append(out, readAll(t, post(t, s.URL()+c.path, c.body)))
			}
		}
		return out
	}
	a, b := run(), run()
	require.Len(t, a, len(cases)*len(script))
	for i := range a {
		require.Equal(t, string(a[i]), string(b[i]), "case %d", i)
		require.NotEmpty(t, a[i])
	}
	// Scripted ids make replies identical across requests of one server too.
	s := start(t, mock.Options{})
	r := richReply()
	r.ID = "fixed"
	s.Script(r, r)
	x := readAll(t, post(t, s.URL()+"/v1/messages", `{"model":"m","stream":true}`))
	y := readAll(t, post(t, s.URL()+"/v1/messages", `{"model":"m","stream":true}`))
	require.Equal(t, string(x), string(y))
	require.Contains(t, string(x), `"id":"fixed"`)
	require.Contains(t, string(x), `"id":"toolu_fixed_0"`)
}

// The gate holds every event after the first until the test releases it,
// which proves the mock flushes each event on its own.
func TestGate(t *testing.T) {
	gate := make(chan struct{})
	s := start(t, mock.Options{Gate: gate})
	s.Script(mock.Reply{Text: "0123456789abcdef0123"}) // 2 text deltas
	resp := post(t, s.URL()+"/v1/messages", `{"model":"m","stream":true}`)
	require.Equal(t, 200, resp.StatusCode)

	events := make(chan sseEvent)
	go func() {
		defer close(events)
		r := bufio.NewReader(resp.Body)
		for {
			ev, err := readEvent(r)
			if err != nil {
				return
			}
			events <- ev
		}
	}()
	next := func() sseEvent {
		select {
		case ev, ok := <-events:
			require.True(t, ok, "stream ended early")
			return ev
		case <-time.After(5 * time.Second):
			t.Fatal("event not delivered")
		}
		return sseEvent{}
	}
	quiet := func() {
		select {
		case ev := <-events:
			t.Fatalf("event %q sent before the gate was released", ev.name)
		case <-time.After(80 * time.Millisecond):
		}
	}
	want := []string{"message_start", "content_block_start", "content_block_delta", "content_block_delta",
		"content_block_stop", "message_delta", "message_stop"}
	require.Equal(t, want[0], next().name)
	for _, name := range want[1:] {
		quiet()
		gate <- struct{}{}
		require.Equal(t, name, next().name)
	}
	_, ok := <-events
	require.False(t, ok)
}

func TestHoldAfterEvents(t *testing.T) {
	s := start(t, mock.Options{Hold: 200 * time.Millisecond, HoldAfter: 3, PingEvery: 50 * time.Millisecond})
	s.Script(mock.Reply{Text: "held after three"})
	evs := parseSSE(t, readAll(t, post(t, s.URL()+"/v1/messages", `{"model":"m","stream":true}`)))
	// The pings come after the first three events, not after the first.
	var names []string
	for _, ev := range evs {
		names = append(names, ev.name)
	}
	require.Equal(t, []string{"message_start", "content_block_start", "content_block_delta"}, names[:3])
	require.Equal(t, "ping", names[3])
	i := 3
	for i < len(names) && names[i] == "ping" {
		i++
	}
	require.Less(t, i, len(names))
	require.NotEqual(t, "ping", names[i])
	for _, n := range names[i:] {
		require.NotEqual(t, "ping", n)
	}
}

func TestHoldAndPing(t *testing.T) {
	s := start(t, mock.Options{Hold: 250 * time.Millisecond, PingEvery: 60 * time.Millisecond})
	s.Script(mock.Reply{Text: "after the hold"})
	t0 := time.Now()
	resp := post(t, s.URL()+"/v1/messages", `{"model":"m","stream":true}`)
	evs := parseSSE(t, readAll(t, resp))
	require.GreaterOrEqual(t, time.Since(t0), 250*time.Millisecond)
	require.Equal(t, "message_start", evs[0].name)
	pings := 0
	for _, ev := range evs[1:] {
		if ev.name != "ping" {
			break
		}
		require.Equal(t, `{"type": "ping"}`, ev.data)
		pings++
	}
	require.GreaterOrEqual(t, pings, 1) // 4 on an idle machine; timers slip under -race
	require.LessOrEqual(t, pings, 4)

	// The SDK skips the pings.
	s.Script(mock.Reply{Text: "after the hold"})
	ac := anthropicClient(s)
	st := ac.Messages.NewStreaming(ctxT(t), anthropicParams())
	var msg anthropic.Message
	for st.Next() {
		require.NoError(t, msg.Accumulate(st.Current()))
	}
	require.NoError(t, st.Err())
	require.Equal(t, "after the hold", msg.Content[0].Text)

	// OpenAI streams get SSE comments; per-reply Hold overrides the option.
	s.Script(mock.Reply{Text: "x", Hold: 130 * time.Millisecond, PingEvery: 50 * time.Millisecond})
	body := string(readAll(t, post(t, s.URL()+"/v1/chat/completions", `{"model":"m","stream":true}`)))
	require.GreaterOrEqual(t, strings.Count(body, ": ping\n\n"), 1) // 2 on an idle machine
	require.LessOrEqual(t, strings.Count(body, ": ping\n\n"), 2)

	// The OpenAI SDK skips the comments; Gemini holds silently.
	oc := openaiClient(s)
	s.Script(mock.Reply{Text: "chat after hold", Hold: 80 * time.Millisecond, PingEvery: 20 * time.Millisecond})
	cs := oc.Chat.Completions.NewStreaming(ctxT(t), chatParams())
	cacc := openai.ChatCompletionAccumulator{}
	for cs.Next() {
		cacc.AddChunk(cs.Current())
	}
	require.NoError(t, cs.Err())
	require.Equal(t, "chat after hold", cacc.Choices[0].Message.Content)

	s.Script(mock.Reply{Text: "resp after hold", Hold: 80 * time.Millisecond, PingEvery: 20 * time.Millisecond})
	rs := oc.Responses.NewStreaming(ctxT(t), responsesParams())
	var done string
	for rs.Next() {
		if ev := rs.Current(); ev.Type == "response.completed" {
			done = ev.Response.OutputText()
		}
	}
	require.NoError(t, rs.Err())
	require.Equal(t, "resp after hold", done)

	s.Script(mock.Reply{Text: "gemini after hold", Hold: 80 * time.Millisecond, PingEvery: 20 * time.Millisecond})
	body = string(readAll(t, post(t, s.URL()+"/v1beta/models/g:streamGenerateContent?alt=sse", `{}`)))
	require.NotContains(t, body, "ping")
	s.Script(mock.Reply{Text: "gemini after hold", Hold: 80 * time.Millisecond, PingEvery: 20 * time.Millisecond})
	var g geminiSeen
	for r, err := range genaiClient(t, s).Models.GenerateContentStream(ctxT(t), "g", genai.Text("hi"), nil) {
		require.NoError(t, err)
		g.add(t, r)
	}
	require.Equal(t, "gemini after hold", g.text)
}

func TestTiming(t *testing.T) {
	s := start(t, mock.Options{TTFT: 150 * time.Millisecond, InterEventDelay: 20 * time.Millisecond})

	t0 := time.Now()
	readAll(t, post(t, s.URL()+"/v1/chat/completions", `{"model":"m"}`))
	require.GreaterOrEqual(t, time.Since(t0), 150*time.Millisecond)

	// A stream sends its headers at once and its first event after TTFT.
	s.Script(mock.Reply{Text: "abcdefghijklmnopqrstuvwxyz0123456789"}) // 3 deltas
	t0 = time.Now()
	resp := post(t, s.URL()+"/v1/chat/completions", `{"model":"m","stream":true}`)
	require.Less(t, time.Since(t0), 120*time.Millisecond, "headers before TTFT")
	r := bufio.NewReader(resp.Body)
	_, err := readEvent(r)
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(t0), 150*time.Millisecond)
	_, err = io.ReadAll(r)
	require.NoError(t, err)
	// 6 events (role, 3 deltas, finish, [DONE]): 5 delays of 20ms after the first.
	require.GreaterOrEqual(t, time.Since(t0), 150*time.Millisecond+5*20*time.Millisecond)

	// Per-reply override: no TTFT at all.
	s.Script(mock.Reply{Text: "fast", TTFT: -1, InterEventDelay: -1})
	t0 = time.Now()
	readAll(t, post(t, s.URL()+"/v1/messages", `{"model":"m","stream":true}`))
	require.Less(t, time.Since(t0), 120*time.Millisecond)

	// HeaderDelay trips a client's response-header timeout.
	h := start(t, mock.Options{HeaderDelay: 300 * time.Millisecond})
	client := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 100 * time.Millisecond}}
	_, err = client.Post(h.URL()+"/v1/messages", "application/json", strings.NewReader(`{"stream":true}`))
	require.Error(t, err)
	require.Contains(t, err.Error(), "timeout")
}

func TestCutDropsConnection(t *testing.T) {
	s := start(t, mock.Options{})
	for _, c := range []struct{ path, body string }{
		{"/v1/messages", `{"stream":true}`},
		{"/v1/chat/completions", `{"stream":true}`},
		{"/v1/responses", `{"stream":true}`},
		{"/v1beta/models/g:streamGenerateContent?alt=sse", `{}`},
		{"/v1beta/models/g:streamGenerateContent", `{}`},
	} {
		s.Script(mock.Reply{Text: strings.Repeat("w", 100), CutAfterEvents: 2})
		resp := post(t, s.URL()+c.path, c.body)
		require.Equal(t, 200, resp.StatusCode)
		b, err := io.ReadAll(resp.Body)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF, c.path)
		require.NotEmpty(t, b)
	}
	// Negative: cut right after the headers.
	s.Script(mock.Reply{CutAfterEvents: -1})
	resp := post(t, s.URL()+"/v1/messages", `{"stream":true}`)
	b, err := io.ReadAll(resp.Body)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.Empty(t, b)
}

func TestNamedScriptsAndHeaders(t *testing.T) {
	s := start(t, mock.Options{Named: map[string][]mock.Reply{
		"ab": {{Text: "A"}, {Text: "B", Headers: map[string]string{"X-Extra": "yes"}}},
	}})
	s.Script(mock.Reply{Text: "queued"})
	get := func(script string) (string, http.Header) {
		var hdr []string
		if script != "" {
			hdr = []string{"X-Mock-Script", script}
		}
		resp := post(t, s.URL()+"/v1/chat/completions", `{"model":"m"}`, hdr...)
		var cc struct {
			Choices []struct{ Message struct{ Content string } }
		}
		require.NoError(t, json.Unmarshal(readAll(t, resp), &cc))
		return cc.Choices[0].Message.Content, resp.Header
	}
	got, _ := get("ab")
	require.Equal(t, "A", got)
	got, hdr := get("ab")
	require.Equal(t, "B", got)
	require.Equal(t, "yes", hdr.Get("X-Extra"))
	require.Equal(t, "req_mock000002", hdr.Get("X-Request-Id"))
	got, _ = get("ab")
	require.Equal(t, "A", got)
	require.Equal(t, 1, s.Pending(), "named scripts leave the queue alone")
	got, _ = get("")
	require.Equal(t, "queued", got)
	got, _ = get("")
	require.Equal(t, "ok", got)

	resp := post(t, s.URL()+"/v1/chat/completions", `{}`, "X-Mock-Script", "nope")
	require.Equal(t, 400, resp.StatusCode)
	require.Contains(t, string(readAll(t, resp)), `mock: unknown script \"nope\"`)
}

func TestPadText(t *testing.T) {
	s := start(t, mock.Options{PadText: 5000, ChunkSize: 64})
	c := anthropicClient(s)
	msg, err := c.Messages.New(ctxT(t), anthropicParams())
	require.NoError(t, err)
	require.Len(t, msg.Content[0].Text, 5000)
	require.True(t, strings.HasPrefix(msg.Content[0].Text, "Lorem ipsum"))
	require.Equal(t, int64(1250), msg.Usage.OutputTokens)

	s.Script(mock.Reply{PadText: 100})
	st := c.Messages.NewStreaming(ctxT(t), anthropicParams())
	var acc anthropic.Message
	for st.Next() {
		require.NoError(t, acc.Accumulate(st.Current()))
	}
	require.NoError(t, st.Err())
	require.Equal(t, msg.Content[0].Text[:100], acc.Content[0].Text)
}

// Many clients on every API at once, with named scripts and the shared queue.
func TestConcurrent(t *testing.T) {
	s := start(t, mock.Options{ChunkSize: 4, Named: map[string][]mock.Reply{"rich": {richReply()}}})
	paths := []struct{ path, body string }{
		{"/v1/messages", `{"model":"m","stream":true}`},
		{"/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`},
		{"/v1/responses", `{"model":"m","stream":true}`},
		{"/v1beta/models/g:streamGenerateContent?alt=sse", `{}`},
		{"/v1beta/models/g:generateContent", `{}`},
	}
	const workers, each = 16, 20
	for range workers * each / 2 {
		s.Script(mock.Reply{Text: "queued reply"})
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				p := paths[(w+i)%len(paths)]
				req, _ := http.NewRequest("POST", s.URL()+p.path, strings.NewReader(p.body))
				if i%2 == 0 {
					req.Header.Set("X-Mock-Script", "rich")
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					errs <- err
					continue
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 || len(b) == 0 {
					errs <- fmt.Errorf("%s: %d %v", p.path, resp.StatusCode, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	require.Equal(t, uint64(workers*each), s.Served())
	require.Equal(t, 0, s.Pending())
	require.Len(t, s.Requests(), workers*each)
}

func TestServeOnListenerAndCloseUnblocksGate(t *testing.T) {
	gate := make(chan struct{})
	s := mock.New(mock.Options{Gate: gate})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	require.Eventually(t, func() bool { return s.URL() != "" }, time.Second, time.Millisecond)

	resp := post(t, "http://"+ln.Addr().String()+"/v1/messages", `{"stream":true}`)
	r := bufio.NewReader(resp.Body)
	ev, err := readEvent(r)
	require.NoError(t, err)
	require.Equal(t, "message_start", ev.name)

	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close blocked on a gated stream")
	}
	_, err = io.ReadAll(r)
	require.Error(t, err, "the gated stream is cut on Close")
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
}

func TestChunkSizeUnsplit(t *testing.T) {
	s := start(t, mock.Options{ChunkSize: 2})
	s.Script(mock.Reply{Text: "one single delta please", ChunkSize: -1}, mock.Reply{Text: "abcd"})
	evs := parseSSE(t, readAll(t, post(t, s.URL()+"/v1/messages", `{"stream":true}`)))
	require.Len(t, evs, 6) // message_start, block start, 1 delta, block stop, message_delta, message_stop
	require.Contains(t, evs[2].data, `"text":"one single delta please"`)
	evs = parseSSE(t, readAll(t, post(t, s.URL()+"/v1/messages", `{"stream":true}`)))
	require.Len(t, evs, 7)
}
