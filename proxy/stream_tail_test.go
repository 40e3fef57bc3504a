package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// cutUpstream is a raw TCP upstream that answers every request with the
// first k bytes (X-Test-Cut: k) of a recorded stream and then either drops
// the connection (hold false) or keeps it open and silent until the proxy
// hangs up.
type cutUpstream struct {
	ln          net.Listener
	contentType string
	body        []byte
	hold        bool
	sent        sync.WaitGroup // one Done per request whose bytes are out
}

func newCutUpstream(t *testing.T, contentType string, body []byte, hold bool) *cutUpstream {
	t.Helper()
	u := &cutUpstream{contentType: contentType, body: body, hold: hold}
	u.ln = kit.ServeConns(t, u.serve)
	return u
}

func (u *cutUpstream) URL() string { return "http://" + u.ln.Addr().String() }

func (u *cutUpstream) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		k, _ := strconv.Atoi(req.Header.Get("X-Test-Cut"))
		head := "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: " + u.contentType + "\r\nTransfer-Encoding: chunked\r\n\r\n"
		if k > 0 {
			head += chunk(string(u.body[:k]))
		}
		_, _ = io.WriteString(c, head)
		u.sent.Done()
		if u.hold {
			_, _ = io.Copy(io.Discard, c) // silent until the proxy hangs up
		}
		return
	}
}

// recordStream returns a complete stream of tc as the mock serves it, and
// its content type.
func recordStream(t *testing.T, tc apiCase) (string, []byte) {
	t.Helper()
	m := kit.StartMock(t, mock.Options{})
	m.Script(mock.Reply{Text: "Hello there, a short streamed reply.", ChunkSize: 12})
	resp, b := do(t, "POST", m.URL()+tc.path, tc.body, tc.headers)
	require.Equal(t, 200, resp.StatusCode)
	return resp.Header.Get("Content-Type"), b
}

// streamCases are the streaming model routes: one per stream syntax.
func streamCases() []apiCase {
	var out []apiCase
	for _, tc := range modelCases() {
		if tc.stream {
			out = append(out, tc)
		}
	}
	return out
}

// TestStreamErrorTailKeepsSyntax: whatever byte the upstream stream breaks
// after, by a cut connection, by silence past stream_idle_timeout or by
// Shutdown's grace expiring, the agent's body is valid in its stream's
// syntax to the last byte and ends with the API's own error form: Gemini's
// JSON-array stream parses with encoding/json as an array whose last element
// is Gemini's error object; SSE streams are whole events whose data parse as
// JSON, the last one the API's error event.
func TestStreamErrorTailKeepsSyntax(t *testing.T) {
	for _, tc := range streamCases() {
		ct, full := recordStream(t, tc)
		t.Run(tc.name, func(t *testing.T) {
			t.Run("cut", func(t *testing.T) {
				u := newCutUpstream(t, ct, full, false)
				h := newHarness(t, harnessOptions{Config: pointAt(u.URL(), nil)})
				u.sent.Add(len(full))
				for k := 0; k < len(full); k++ {
					body := fetchCut(t, h.URL, tc, k)
					checkErrorTail(t, tc, full, k, body, 502)
				}
			})
			t.Run("stall", func(t *testing.T) {
				u := newCutUpstream(t, ct, full, true)
				h := newHarness(t, harnessOptions{Config: pointAt(u.URL(), func(c *config.Config) {
					c.Limits.StreamIdleTimeout = 100 * time.Millisecond
				})})
				ks := heldCutPoints(full)
				u.sent.Add(len(ks))
				forEachCut(t, ks, func(k int) {
					checkErrorTail(t, tc, full, k, fetchCut(t, h.URL, tc, k), 504)
				})
			})
			t.Run("shutdown", func(t *testing.T) {
				u := newCutUpstream(t, ct, full, true)
				h := newHarness(t, harnessOptions{Config: pointAt(u.URL(), nil)})
				ks := heldCutPoints(full)
				u.sent.Add(len(ks))
				bodies := make([][]byte, len(ks))
				var wg sync.WaitGroup
				for i, k := range ks {
					wg.Add(1)
					go func() {
						defer wg.Done()
						bodies[i] = fetchCut(t, h.URL, tc, k)
					}()
				}
				u.sent.Wait()
				time.Sleep(100 * time.Millisecond) // the proxy forwards what it got
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				defer cancel()
				require.NoError(t, h.srv.Shutdown(ctx))
				wg.Wait()
				for i, b := range bodies {
					checkErrorTail(t, tc, full, ks[i], b, 503)
				}
			})
		})
	}
}

// pointAt sends every provider's requests to url.
func pointAt(url string, more func(*config.Config)) func(*config.Config) {
	return func(c *config.Config) {
		c.Upstreams.Anthropic, c.Upstreams.OpenAI, c.Upstreams.Gemini = url, url, url
		if more != nil {
			more(c)
		}
	}
}

// heldCutPoints are the cut positions of the cases that hold a stream open
// at its cut (stall, shutdown), at most about 16 so the open streams stay
// few: the first bytes, the last byte, and the bytes around the first
// element or event boundaries (where framing mistakes show).
func heldCutPoints(full []byte) []int {
	pick := map[int]bool{0: true, 1: true, len(full) - 1: true}
	for k := 1; k < len(full) && len(pick) < 16; k++ {
		if full[k-1] == '\n' || full[k-1] == ',' || full[k-1] == '[' {
			for d := -1; d <= 1; d++ {
				if k+d >= 0 && k+d < len(full) {
					pick[k+d] = true
				}
			}
		}
	}
	ks := make([]int, 0, len(pick))
	for k := range pick {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// forEachCut runs f for every k in ks, a batch at a time.
func forEachCut(t *testing.T, ks []int, f func(k int)) {
	const batch = 8
	for lo := 0; lo < len(ks); lo += batch {
		var wg sync.WaitGroup
		for _, k := range ks[lo:min(lo+batch, len(ks))] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f(k)
			}()
		}
		wg.Wait()
	}
}

func fetchCut(t *testing.T, base string, tc apiCase, k int) []byte {
	headers := map[string]string{"X-Test-Cut": strconv.Itoa(k)}
	for n, v := range tc.headers {
		headers[n] = v
	}
	req, err := http.NewRequest("POST", base+tc.path, strings.NewReader(tc.body))
	if err != nil {
		t.Error(err)
		return nil
	}
	for n, v := range headers {
		req.Header[n] = []string{v}
	}
	resp, err := rawClient.Do(req)
	if err != nil {
		t.Errorf("k=%d: %v", k, err)
		return nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("k=%d: the body must end cleanly: %v (got %q)", k, err, b)
	}
	return b
}

// checkErrorTail asserts that body, the agent's copy of full cut after k
// bytes, is a prefix of full ending at an element or event boundary,
// followed by the API's error form with status code, and that the whole
// parses.
func checkErrorTail(t *testing.T, tc apiCase, full []byte, k int, body []byte, code int) {
	t.Helper()
	if !strings.Contains(tc.path, "alt=sse") && strings.Contains(tc.path, "streamGenerateContent") {
		var elems []json.RawMessage
		if err := json.Unmarshal(body, &elems); err != nil {
			t.Errorf("k=%d: the Gemini array stream does not parse: %v\n%q", k, err, body)
			return
		}
		require.NotEmpty(t, elems)
		var last struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
				Status  string `json:"status"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(elems[len(elems)-1], &last))
		require.Equal(t, code, last.Error.Code, "k=%d: %q", k, body)
		require.NotEmpty(t, last.Error.Status)
		sent := body[:bytes.LastIndex(body, []byte(`{"error"`))]
		sent = bytes.TrimSuffix(sent, []byte(",\r\n"))
		if k == 0 || len(sent) == 0 || string(sent) == "[" {
			return
		}
		require.True(t, bytes.HasPrefix(full, sent), "k=%d: what was sent is the upstream's bytes: %q", k, sent)
		return
	}
	events := splitEvents(t, k, body)
	if len(events) == 0 {
		t.Errorf("k=%d: no events: %q", k, body)
		return
	}
	for i, ev := range events[:len(events)-1] {
		if !bytes.Contains(full, []byte(ev.raw)) {
			t.Errorf("k=%d: event %d is not one of the upstream's: %q", k, i, ev.raw)
		}
	}
	last := events[len(events)-1]
	if bytes.HasPrefix(full, body) {
		return // the terminal event came before the break: the stream is whole
	}
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(last.data), &v), "k=%d", k)
	require.NoError(t, kit.Get(t, tc.api).StreamErrorShape(code, kit.Event{Name: last.name, Data: last.data}), "k=%d", k)
}

type sseEvent struct{ raw, name, data string }

// splitEvents parses body as SSE strictly: every event ends with a blank
// line, every line is a field shepherd's upstreams use, and every data
// payload is JSON (or OpenAI's [DONE]).
func splitEvents(t *testing.T, k int, body []byte) []sseEvent {
	t.Helper()
	s := string(body)
	sep := "\n\n"
	if strings.Contains(s, "\r\n") {
		sep = "\r\n\r\n"
	}
	if !strings.HasSuffix(s, sep) {
		t.Errorf("k=%d: the stream does not end with a whole event: %q", k, s)
		return nil
	}
	var out []sseEvent
	for _, raw := range strings.SplitAfter(s, sep) {
		if raw == "" {
			continue
		}
		ev := sseEvent{raw: raw}
		for _, line := range strings.Split(strings.TrimSuffix(raw, sep), strings.TrimSuffix(sep, sep[len(sep)/2:])) {
			name, value, ok := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch {
			case !ok:
				t.Errorf("k=%d: not a field line: %q in %q", k, line, s)
			case name == "event":
				ev.name = value
			case name == "data":
				ev.data += value
			case name == "" || name == "id" || name == "retry":
			default:
				t.Errorf("k=%d: unknown field %q", k, line)
			}
		}
		if ev.data != "[DONE]" && !json.Valid([]byte(ev.data)) {
			t.Errorf("k=%d: event data is not JSON: %q", k, raw)
		}
		out = append(out, ev)
	}
	return out
}
