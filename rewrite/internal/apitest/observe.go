package apitest

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// Observe is a turn of streams (the agent's, then follow-ups) whose tool
// calls a CallObserver watches through the API's splicer.
type Observe struct {
	// Streams are fixture names, the first stream first.
	Streams []string
	// Early, when set, is a pair of markers: the arguments observed so far
	// must contain Early[0] (a whole path value) before the event whose
	// bytes contain Early[1] (the end of a long content argument) is fed.
	Early [2]string
}

// ObservedDelta is one delta an observer got, its strings copied, with the
// ordinal of the event being fed when it came (counted over the turn).
type ObservedDelta struct {
	conv.ToolCallDelta
	Event int
}

// ObserveTurn feeds the streams of o, each read through rewrite.NewReader
// from mk, through a new splicer of api with an observer set (releasing
// every call and moving on with Next between streams); it returns the
// deltas, the reply view of each stream and the bytes the agent got, and
// the raw events fed (by ordinal).
func ObserveTurn(t testing.TB, api *rewrite.Descriptor, streams [][]byte, mk func([]byte) io.Reader, observe bool) (deltas []ObservedDelta, views []*conv.Reply, out []byte, events [][]byte) {
	t.Helper()
	sp := api.NewSplicer()
	if observe {
		co, ok := sp.(rewrite.CallObserving)
		require.True(t, ok, "%s splicer does not implement rewrite.CallObserving", api.Name)
		co.ObserveCalls(func(d conv.ToolCallDelta) {
			d.ID, d.Name, d.Fragment = strings.Clone(d.ID), strings.Clone(d.Name), strings.Clone(d.Fragment)
			deltas = append(deltas, ObservedDelta{ToolCallDelta: d, Event: len(events) - 1})
		})
	}
	codec := CodecFor(api)
	for i, s := range streams {
		if i > 0 {
			sp.Next()
		}
		rd := rewrite.NewReader(mk(s))
		for {
			ev, err := rd.Next()
			if len(ev.Raw) > 0 {
				events = append(events, bytes.Clone(ev.Raw))
				b, ferr := sp.Feed(&ev)
				require.NoError(t, ferr)
				out = append(out, b...)
			}
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
		}
		require.True(t, sp.Done(), "stream %d not done", i)
		reply, err := sp.Reply()
		require.NoError(t, err)
		view, err := codec.ParseReply(reply)
		require.NoError(t, err)
		views = append(views, view)
		b, err := sp.Release(nil, nil)
		require.NoError(t, err)
		out = append(out, b...)
	}
	b, err := sp.Finish()
	require.NoError(t, err)
	return deltas, views, append(out, b...), events
}

// CheckObserve runs o in every chunking (one byte at a time, which splits
// at every byte boundary, random small chunks, and real read sizes) and
// checks the ToolCallDelta contract against each stream's reply view:
// every call of every view is observed, with Stream its stream's number
// and Index its view Index; the first delta carries its ID and Name; the
// fragments concatenate to exactly its Args (for a free-form call, the raw
// input text); Done comes once, last; and the Early markers are met. The
// agent's bytes must be the same as without an observer.
func CheckObserve(t *testing.T, api *rewrite.Descriptor, o Observe) {
	t.Helper()
	var streams [][]byte
	for _, name := range o.Streams {
		streams = append(streams, Fixture(t, api, name))
	}
	readers := map[string]func([]byte) io.Reader{
		"one-byte": func(b []byte) io.Reader { return &sizedReader{data: b, n: 1} },
		"random-1": func(b []byte) io.Reader { return NewChunkReader(b, 1) },
		"random-7": func(b []byte) io.Reader { return NewChunkReader(b, 7) },
		"1400":     func(b []byte) io.Reader { return &sizedReader{data: b, n: 1400} },
		"4096":     func(b []byte) io.Reader { return &sizedReader{data: b, n: 4096} },
		"whole":    func(b []byte) io.Reader { return bytes.NewReader(b) },
	}
	_, _, plain, _ := ObserveTurn(t, api, streams, readers["whole"], false)
	for how, mk := range readers {
		t.Run(how, func(t *testing.T) {
			deltas, views, out, events := ObserveTurn(t, api, streams, mk, true)
			require.Equal(t, string(plain), string(out), "observing changed the agent's bytes")
			checkDeltas(t, deltas, views)
			if o.Early[0] != "" {
				checkEarly(t, deltas, events, o.Early)
			}
		})
	}
}

// checkDeltas checks the deltas of every call against the views.
func checkDeltas(t *testing.T, deltas []ObservedDelta, views []*conv.Reply) {
	t.Helper()
	type key struct{ stream, index int }
	byCall := map[key][]ObservedDelta{}
	for _, d := range deltas {
		require.Less(t, d.Stream, len(views), "delta of an unknown stream: %+v", d)
		byCall[key{d.Stream, d.Index}] = append(byCall[key{d.Stream, d.Index}], d)
	}
	calls := 0
	for n, v := range views {
		for _, c := range v.ToolCalls {
			calls++
			ds := byCall[key{n, c.Index}]
			require.NotEmpty(t, ds, "stream %d call %d (%s) not observed", n, c.Index, c.Name)
			require.Equal(t, c.ID, ds[0].ID, "stream %d call %d: ID on the first delta", n, c.Index)
			require.Equal(t, c.Name, ds[0].Name, "stream %d call %d: Name on the first delta", n, c.Index)
			var args strings.Builder
			for i, d := range ds {
				require.Equal(t, i == len(ds)-1, d.Done, "stream %d call %d: Done must come once, last", n, c.Index)
				require.Equal(t, c.Freeform, d.Freeform, "stream %d call %d: Freeform", n, c.Index)
				args.WriteString(d.Fragment)
			}
			want := string(c.Args)
			if c.Freeform {
				want = gjson.GetBytes(c.Args, "input").Str
			}
			require.Equal(t, want, args.String(), "stream %d call %d: fragments vs the view's Args", n, c.Index)
		}
	}
	require.Len(t, byCall, calls, "deltas of calls the views do not have")
}

// checkEarly checks that early[0] was observed before the event carrying
// early[1] was fed.
func checkEarly(t *testing.T, deltas []ObservedDelta, events [][]byte, early [2]string) {
	t.Helper()
	seen, end := -1, -1
	acc := map[string]*strings.Builder{}
	for _, d := range deltas {
		k := fmt.Sprint(d.Stream, "/", d.Index)
		if acc[k] == nil {
			acc[k] = &strings.Builder{}
		}
		acc[k].WriteString(d.Fragment)
		if strings.Contains(acc[k].String(), early[0]) {
			seen = d.Event
			break
		}
	}
	for i, ev := range events {
		if bytes.Contains(ev, []byte(early[1])) {
			end = i
			break
		}
	}
	require.GreaterOrEqual(t, seen, 0, "%q never observed", early[0])
	require.GreaterOrEqual(t, end, 0, "no event carries %q", early[1])
	require.Less(t, seen, end, "%q observed with event %d, not before the event carrying %q (%d)", early[0], seen, early[1], end)
}

// sizedReader returns data in reads of n bytes.
type sizedReader struct {
	data []byte
	n    int
}

func (r *sizedReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.n)], r.data)
	r.data = r.data[n:]
	return n, nil
}
