package mock_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

// The Responder answers by what the request holds, before the FIFO queue;
// declining falls back to the queue, then Default; X-Mock-Script requests
// never reach it; the request it sees is the recorded one.
func TestResponder(t *testing.T) {
	var seen atomic.Int32
	s := start(t, mock.Options{
		Default: mock.Reply{Text: "default"},
		Named:   map[string][]mock.Reply{"n": {{Text: "named"}}},
		Responder: func(req mock.Recorded) (mock.Reply, bool) {
			seen.Add(1)
			if strings.Contains(string(req.Body), "magic") && req.API == "chat" && req.Method == "POST" {
				return mock.Reply{Text: "by content"}, true
			}
			return mock.Reply{}, false
		},
	})
	s.Script(mock.Reply{Text: "queued"})
	chat := func(content string, hdr ...string) string {
		resp := post(t, s.URL()+"/v1/chat/completions",
			`{"model":"m","messages":[{"role":"user","content":"`+content+`"}]}`, hdr...)
		return gjson.GetBytes(readAll(t, resp), "choices.0.message.content").String()
	}
	require.Equal(t, "by content", chat("magic"))
	require.Equal(t, 1, s.Pending(), "an answered request leaves the queue alone")
	require.Equal(t, "queued", chat("plain"))
	require.Equal(t, "default", chat("plain"))
	require.Equal(t, "named", chat("magic", "X-Mock-Script", "n"))
	require.Equal(t, int32(3), seen.Load(), "named-script requests bypass the Responder")
	require.Len(t, s.Requests(), 4)
}
