package mock_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

func TestParseStamp(t *testing.T) {
	at, ok := mock.ParseStamp("1763000000123456789 ")
	require.True(t, ok)
	require.Equal(t, int64(1763000000123456789), at.UnixNano())
	at, ok = mock.ParseStamp("0000000000000000042")
	require.True(t, ok)
	require.Equal(t, int64(42), at.UnixNano())
	for _, bad := range []string{"", "176300000012345678", "17630000001234567890", "17630000001234x6789", "Lorem ipsum dolor sit"} {
		_, ok := mock.ParseStamp(bad)
		require.False(t, ok, bad)
	}
}

func TestNumberedToolCalls(t *testing.T) {
	calls := mock.NumberedToolCalls(2)
	require.Len(t, calls, 2)
	require.Equal(t, "tool_1", calls[1].Name)
	require.JSONEq(t, `{"path":"src/file_1.go","line":2}`, calls[1].Args)
	require.Empty(t, mock.NumberedToolCalls(0))
}

// stampsOf returns the send times stamped in the text deltas of an
// Anthropic or Chat stream, failing on a text delta without one.
func stampsOf(t *testing.T, events []sseEvent, width int) []time.Time {
	t.Helper()
	var out []time.Time
	for _, ev := range events {
		if ev.data == "[DONE]" {
			continue
		}
		var v struct {
			Type  string `json:"type"`
			Delta struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"delta"`
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(ev.data), &v), ev.data)
		text := v.Delta.Text
		if len(v.Choices) > 0 {
			text = v.Choices[0].Delta.Content
		}
		if v.Delta.Type != "text_delta" && text == "" {
			continue
		}
		require.Len(t, text, width, "stamped text %q", text)
		at, ok := mock.ParseStamp(text)
		require.True(t, ok, "text %q is not a stamp", text)
		out = append(out, at)
	}
	return out
}

// Every text delta carries the time it was sent: increasing, within the
// request, InterEventDelay apart; the rest of the stream keeps its shape.
func TestStampedAnthropicStream(t *testing.T) {
	const delay = 2 * time.Millisecond
	plain := start(t, mock.Options{PadText: 100, ChunkSize: 20, NoRecord: true})
	s := start(t, mock.Options{PadText: 100, ChunkSize: 20, InterEventDelay: delay, StampText: true, NoRecord: true,
		Default: mock.Reply{ToolCalls: mock.NumberedToolCalls(1)}})
	body := `{"model":"m","stream":true}`
	before := time.Now()
	events := parseSSE(t, readAll(t, post(t, s.URL()+"/v1/messages", body)))
	after := time.Now()
	stamps := stampsOf(t, events, 20)
	require.Len(t, stamps, 5) // 100 bytes in 20-character deltas
	for i, at := range stamps {
		require.False(t, at.Before(before) || at.After(after), "stamp %d %v outside [%v, %v]", i, at, before, after)
		if i > 0 {
			require.GreaterOrEqual(t, at.Sub(stamps[i-1]), delay, "stamps %d and %d", i-1, i)
		}
	}
	// Same events as without stamping, the tool call last.
	plainEvents := parseSSE(t, readAll(t, post(t, plain.URL()+"/v1/messages", body)))
	names := func(evs []sseEvent) (out []string) {
		for _, ev := range evs {
			out = append(out, ev.name)
		}
		return out
	}
	require.Len(t, events, len(plainEvents)+5) // the tool block: start, 3 input deltas ("" and 33 characters in 20s), stop
	require.Equal(t, names(plainEvents)[:8], names(events)[:8])
	require.Contains(t, events[8].data, `"name":"tool_0"`)

	// The JSON reply keeps its text.
	js := string(readAll(t, post(t, s.URL()+"/v1/messages", `{"model":"m"}`)))
	require.Contains(t, js, "Lorem ipsum")
}

func TestStampedChatStream(t *testing.T) {
	s := start(t, mock.Options{PadText: 60, ChunkSize: 16, InterEventDelay: time.Millisecond, StampText: true, NoRecord: true})
	before := time.Now()
	events := parseSSE(t, readAll(t, post(t, s.URL()+"/v1/chat/completions", `{"model":"m","stream":true}`)))
	stamps := stampsOf(t, events, mock.StampDigits) // chunks narrower than a stamp hold the stamp alone
	require.Len(t, stamps, 4)
	for i, at := range stamps {
		require.False(t, at.Before(before), "stamp %d before the request", i)
		if i > 0 {
			require.True(t, at.After(stamps[i-1]), "stamp %d not after %d", i, i-1)
		}
	}
}

// A scripted mid-stream error after stamped events: the error event is not
// stamped over (stamps of the dropped events go with them).
func TestStampedStreamError(t *testing.T) {
	s := start(t, mock.Options{PadText: 200, ChunkSize: 20, StampText: true, NoRecord: true})
	for _, n := range []int{3, 1} {
		s.Script(mock.Reply{ErrorAfterEvents: n, ErrorMessage: strings.Repeat("x", 80)})
		events := parseSSE(t, readAll(t, post(t, s.URL()+"/v1/messages", `{"model":"m","stream":true}`)))
		require.Len(t, events, n+1, fmt.Sprint(n))
		require.Equal(t, "error", events[n].name)
		require.JSONEq(t, `{"type":"error","error":{"type":"overloaded_error","message":"`+strings.Repeat("x", 80)+`"}}`, events[n].data)
		require.Len(t, stampsOf(t, events[:n], 20), max(0, n-2))
	}
}
