package kit

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

func TestRegistry(t *testing.T) {
	var names []string
	for _, d := range Drivers() {
		names = append(names, d.Name())
		got, ok := Lookup(d.Name())
		require.True(t, ok)
		require.Equal(t, d, got)
		byMock, ok := ForMock(d.MockAPI())
		require.True(t, ok)
		require.Equal(t, d, byMock)
	}
	require.Equal(t, []string{"anthropic", "openai_chat", "openai_responses", "gemini"}, names)
	_, ok := Lookup("nope")
	require.False(t, ok)
}

// TestDriversAgainstTheMock drives two turns per API against the mock
// provider, non-streaming and streaming: the mock accepts every request
// body the driver builds on the route the driver names, and the driver
// reads the scripted reply back the same from JSON and from the stream.
func TestDriversAgainstTheMock(t *testing.T) {
	for _, d := range Drivers() {
		for _, stream := range []bool{false, true} {
			name := d.Name()
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				m := StartMock(t, mock.Options{ChunkSize: 5})
				call := mock.ToolCall{ID: "call_1", Name: "Read", Args: `{"path":"a.go"}`}
				m.Script(
					mock.Reply{ID: "r1", Thinking: &mock.Thinking{Text: "Look first.", Signature: "sig-1"}, Text: "Reading.",
						ToolCalls: []mock.ToolCall{call}, Usage: mock.Usage{Input: 10, Output: 7}},
					mock.Reply{ID: "r2", Text: "Done.", Usage: mock.Usage{Input: 20, Output: 3}},
				)
				a := NewAgent(d, m.URL(), nil)
				a.Request.Stream = stream
				a.User("read a.go")
				resp, body := a.Post(t)
				require.Equal(t, 200, resp.StatusCode, string(body))
				read := d.ParseReply
				if stream {
					read = d.ParseStream
				}
				r, err := read(body)
				require.NoError(t, err)
				require.Equal(t, "Reading.", r.Text)
				require.Len(t, r.Calls, 1)
				require.Equal(t, call.ID, r.Calls[0].ID)
				require.Equal(t, call.Name, r.Calls[0].Name)
				require.JSONEq(t, call.Args, r.Calls[0].Args)
				require.Equal(t, d.Stops().ToolUse, r.Stop)
				require.EqualValues(t, 7, r.Output)
				require.Len(t, r.Thinking, 1)
				require.Equal(t, "Look first.", r.Thinking[0].Text)

				rec, ok := m.Last()
				require.True(t, ok)
				require.Equal(t, d.MockAPI(), rec.API)
				require.Equal(t, stream, rec.Stream)
				if !stream {
					require.True(t, d.Serves(rec.Path), "Serves names the non-streaming route: %s", rec.Path)
				}
				require.Equal(t, []string{"Read"}, d.DeclaredTools(rec.Body))

				// Turn 2: the reply echoed (non-streaming: by the agent) and
				// the tool's result.
				if stream {
					a.History = append(a.History, d.Echo([]byte(d.MinimalReply()))...)
				}
				a.ToolResult(call.ID, call.Name, "package a")
				resp, body = a.Post(t)
				require.Equal(t, 200, resp.StatusCode, string(body))
				r, err = read(body)
				require.NoError(t, err)
				require.Equal(t, "Done.", r.Text)
				require.Equal(t, d.Stops().End, r.Stop)
				rec, _ = m.Last()
				hist := d.ToolHistory(rec.Body)
				results := 0
				for _, it := range hist {
					if !it.Call {
						results++
						require.Equal(t, call.ID, it.ID)
						require.Equal(t, "package a", it.Content)
					}
				}
				require.Equal(t, 1, results, "%+v", hist)
				require.Equal(t, "read a.go", d.ItemText(History(d, rec.Body)[firstUser(d)]))
			})
		}
	}
}

// firstUser is the index of the first user message in a history the
// agent built (Chat has the system message first).
func firstUser(d Driver) int {
	if d.SystemInHistory() {
		return 1
	}
	return 0
}

func TestDriversReadTheirHistory(t *testing.T) {
	for _, d := range Drivers() {
		t.Run(d.Name(), func(t *testing.T) {
			m := StartMock(t, mock.Options{})
			m.Script(mock.Reply{ID: "r1", Thinking: &mock.Thinking{Text: "Plan.", Signature: "sig-9"}, Text: "Hello.",
				ToolCalls: []mock.ToolCall{{ID: "c9", Name: "Read", Args: `{}`}}})
			a := NewAgent(d, m.URL(), nil)
			a.User("hi")
			_, _, _ = a.Send(t)
			echo := a.History[1:]
			id, ok := d.CallID(echo, "Read")
			require.True(t, ok, "%v", echo)
			require.Equal(t, "c9", id)
			_, ok = d.CallID(echo, "Write")
			require.False(t, ok)
			require.Len(t, d.ThinkingRaw(echo), 1)
			ths, err := d.Thinkings(echo)
			require.NoError(t, err)
			require.Len(t, ths, 1)
			require.Equal(t, "Plan.", ths[0].Text)
			var text strings.Builder
			for _, it := range echo {
				text.WriteString(d.ItemText(it))
			}
			require.Equal(t, "Hello.", text.String(), "thinking is not text")
		})
	}
}

func TestRequestLimits(t *testing.T) {
	for _, d := range Drivers() {
		t.Run(d.Name(), func(t *testing.T) {
			body := d.Request(Request{Limit: 300, History: []string{d.User("x")}})
			require.Contains(t, body, "300")
			body = d.Request(Request{Limit: NoLimit, History: []string{d.User("x")}})
			require.NotContains(t, body, `axOutputTokens`)
			require.NotContains(t, body, `max_`)
			body = d.Request(Request{History: []string{d.User("x")}})
			require.Equal(t, d.RequiresLimit(), strings.Contains(body, `max_`), "%s", body)
		})
	}
}

func TestErrorShapes(t *testing.T) {
	good := map[string]string{
		"anthropic":        `{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`,
		"openai_chat":      `{"error":{"message":"bad","type":"invalid_request_error"}}`,
		"openai_responses": `{"error":{"message":"bad","type":"invalid_request_error"}}`,
		"gemini":           `{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}`,
	}
	// shape is the error shape each API uses (the OpenAI APIs share one).
	shape := map[string]string{"anthropic": "anthropic", "openai_chat": "openai", "openai_responses": "openai", "gemini": "gemini"}
	for _, d := range Drivers() {
		t.Run(d.Name(), func(t *testing.T) {
			require.NoError(t, d.ErrorShape(400, []byte(good[d.Name()])))
			for name, other := range good {
				if shape[name] != shape[d.Name()] {
					require.Error(t, d.ErrorShape(400, []byte(other)), "%s accepts %s's shape", d.Name(), name)
				}
			}
			require.Error(t, d.ErrorShape(400, []byte(`not json`)))
			require.Error(t, d.ErrorShape(400, []byte(`{"error":{}}`)))
		})
	}
}
