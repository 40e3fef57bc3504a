package mock_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	anthropic "github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
	"google.golang.org/genai"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

func start(t *testing.T, opts mock.Options) *mock.Server {
	t.Helper()
	s := mock.New(opts)
	require.NoError(t, s.Start())
	t.Cleanup(s.Close)
	return s
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func anthropicClient(s *mock.Server) anthropic.Client {
	return anthropic.NewClient(
		aoption.WithBaseURL(s.URL()),
		aoption.WithAPIKey("sk-ant-test"),
		aoption.WithMaxRetries(0),
	)
}

func openaiClient(s *mock.Server) openai.Client {
	return openai.NewClient(
		ooption.WithBaseURL(s.URL()+"/v1"),
		ooption.WithAPIKey("sk-test"),
		ooption.WithMaxRetries(0),
	)
}

func genaiClient(t *testing.T, s *mock.Server) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(ctxT(t), &genai.ClientConfig{
		APIKey:  "gm-test",
		Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{
			BaseURL:    s.URL(),
			APIVersion: "v1beta",
		},
	})
	require.NoError(t, err)
	return c
}

const (
	richText      = "Hello, world! Ünïcödé ✓ \"quoted\"\nsecond line\twith a tab and a tail long enough to span deltas."
	richThinking  = "Let me think about this carefully — step by step."
	richSignature = "EqQBCkYIBhgCKkD+sig/abc=="
)

// richReply exercises thinking, text with escapes and multibyte runes, two
// tool calls (one with a scripted id) and scripted usage.
func richReply() mock.Reply {
	return mock.Reply{
		Text:     richText,
		Thinking: &mock.Thinking{Text: richThinking, Signature: richSignature},
		ToolCalls: []mock.ToolCall{
			{Name: "read_file", Args: `{"path":"main.go"}`},
			{ID: "call_custom", Name: "grep", Args: `{"pattern":"func main","paths":["a","b"],"n":3}`},
		},
		Usage: mock.Usage{Input: 100, Output: 45, CacheRead: 7, CacheWrite: 3, Reasoning: 12},
	}
}

// jsonEq asserts that two JSON texts are equal as values.
func jsonEq(t *testing.T, want, got string) {
	t.Helper()
	require.JSONEq(t, want, got)
}

func post(t *testing.T, url, body string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), "POST", url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return b
}

// sseEvent is one raw SSE event.
type sseEvent struct {
	name string
	data string
}

// readEvent reads one SSE event (lines up to a blank line) from r.
func readEvent(r *bufio.Reader) (sseEvent, error) {
	var ev sseEvent
	var data []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if ev.name == "" && len(data) == 0 {
				continue
			}
			ev.data = strings.Join(data, "\n")
			return ev, nil
		}
		switch {
		case strings.HasPrefix(line, "event: "):
			ev.name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = append(data, line[len("data: "):])
		case strings.HasPrefix(line, ":"):
			ev.name = ":comment"
			data = append(data, line)
		}
	}
}

func parseSSE(t *testing.T, b []byte) []sseEvent {
	t.Helper()
	r := bufio.NewReader(bytes.NewReader(b))
	var out []sseEvent
	for {
		ev, err := readEvent(r)
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		out = append(out, ev)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func jsonUnmarshalString(raw string, s *string) error { return json.Unmarshal([]byte(raw), s) }
