package rewrite_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/apis"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
	"github.com/stretchr/testify/require"
)

// TestViewsDoNotAliasBodies checks that request and reply views stay intact
// after the body they came from is overwritten.
func TestViewsDoNotAliasBodies(t *testing.T) {
	for _, api := range apis.All() {
		c := apitest.CodecFor(api)
		body := append([]byte(nil), apitest.Fixture(t, api, "request.json")...)
		req, err := c.ParseRequest(body)
		require.NoError(t, err)
		apitest.Scribble(body)
		want, err := c.ParseRequest(apitest.Fixture(t, api, "request.json"))
		require.NoError(t, err)
		require.Equal(t, want, req, api)

		body = append([]byte(nil), apitest.Fixture(t, api, "reply.json")...)
		reply, err := c.ParseReply(body)
		require.NoError(t, err)
		apitest.Scribble(body)
		wantReply, err := c.ParseReply(apitest.Fixture(t, api, "reply.json"))
		require.NoError(t, err)
		require.Equal(t, wantReply, reply, api)
	}
}

// TestStreamEventsDoNotAliasEvents checks that decoded events (and so the
// accumulated reply) survive the reader reusing its buffer.
func TestStreamEventsDoNotAliasEvents(t *testing.T) {
	for _, api := range apis.All() {
		c := apitest.CodecFor(api)
		stream := apitest.Fixture(t, api, "stream.sse")
		rd := rewrite.NewReader(bytes.NewReader(stream))
		dec := c.NewStreamDecoder()
		var kept []rewrite.StreamEvent
		for {
			ev, err := rd.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			evs, err := dec.Decode(ev)
			require.NoError(t, err)
			kept = append(kept, evs...)
			apitest.Scribble(ev.Raw)
			apitest.Scribble(ev.Data)
		}
		want, _ := apitest.DecodeSSE(t, c, stream)
		require.Equal(t, want, kept, api)
	}
}
