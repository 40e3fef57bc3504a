package rewrite

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// scribble overwrites b, as a recycled request buffer would be.
func scribble(b []byte) {
	for i := range b {
		b[i] = 'Z'
	}
}

// TestViewsDoNotAliasBodies checks that request and reply views stay intact
// after the body they came from is overwritten.
func TestViewsDoNotAliasBodies(t *testing.T) {
	for _, api := range allAPIs {
		c := codecFor(api)
		body := append([]byte(nil), fixture(t, api, "request.json")...)
		req, err := c.ParseRequest(body)
		require.NoError(t, err)
		scribble(body)
		want, err := c.ParseRequest(fixture(t, api, "request.json"))
		require.NoError(t, err)
		require.Equal(t, want, req, api)

		body = append([]byte(nil), fixture(t, api, "reply.json")...)
		reply, err := c.ParseReply(body)
		require.NoError(t, err)
		scribble(body)
		wantReply, err := c.ParseReply(fixture(t, api, "reply.json"))
		require.NoError(t, err)
		require.Equal(t, wantReply, reply, api)
	}
}

// TestStreamEventsDoNotAliasEvents checks that decoded events (and so the
// accumulated reply) survive the reader reusing its buffer.
func TestStreamEventsDoNotAliasEvents(t *testing.T) {
	for _, api := range allAPIs {
		c := codecFor(api)
		stream := fixture(t, api, "stream.sse")
		rd := NewReader(bytes.NewReader(stream))
		dec := c.NewStreamDecoder()
		var kept []StreamEvent
		for {
			ev, err := rd.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			evs, err := dec.Decode(ev)
			require.NoError(t, err)
			kept = append(kept, evs...)
			scribble(ev.Raw)
			scribble(ev.Data)
		}
		want, _ := decodeSSE(t, c, stream)
		require.Equal(t, want, kept, api)
	}
}
