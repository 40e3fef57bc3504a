package feed

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/events"
)

// typedEvents are request events with typed Fields, covering every
// optional key present and absent.
func typedEvents() []events.Event {
	at := time.Date(2026, 11, 27, 9, 30, 0, 123456789, time.UTC)
	return []events.Event{
		{Type: events.RequestStarted, At: at, Session: "s1", Tenant: "t1", Route: "anthropic", RequestID: "r1",
			Fields: &events.RequestStartedData{Model: "claude", Agent: "claude-code", Stream: true}},
		{Type: events.RequestStarted, At: at, Session: "s1", Tenant: "t1",
			Fields: &events.RequestStartedData{Model: "m \"q\" <&>", Side: "title"}},
		{Type: events.RequestFinished, At: at, Session: "s1", Tenant: "t1",
			Fields: &events.RequestFinishedData{Status: 200, DurationMS: 12, Model: "m", OverheadMS: 0.042}},
		{Type: events.RequestFinished, At: at, Session: "s1", Tenant: "t1", Route: "responses", RequestID: "r2",
			Fields: &events.RequestFinishedData{
				Status: 499, DurationMS: 1, Model: "gpt", Stop: "tool_use", Rounds: 2, Continuations: 1,
				OverheadMS: 1e-3, Usage: &events.RequestUsage{InputTokens: 10, OutputTokens: 3, CacheReadTokens: math.MaxInt64, CacheWriteTokens: -1},
				CostUSD: 1.5e-7, Priced: true, Prefix: &events.RequestPrefix{Hash: "00ff00ff00ff00ff", BreakOffset: -1},
				Error: "client went away",
			}},
		{Type: events.RequestFinished, At: at, Session: "s1", Tenant: "t1",
			Fields: &events.RequestFinishedData{Status: 502, Usage: &events.RequestUsage{}, Priced: true,
				Prefix: &events.RequestPrefix{Hash: "ab", BreakOffset: 1234, Cause: "client"}, Error: "upstream \x01 é \u2028"}},
	}
}

// TestTypedFieldsEncodeAsTheirMap: an event with typed Fields is the same
// bytes as the event with Data set to the Fields' map, so a feed reader
// cannot tell them apart.
func TestTypedFieldsEncodeAsTheirMap(t *testing.T) {
	for i, ev := range typedEvents() {
		got, err := appendEvent(nil, &ev)
		require.NoError(t, err, "event %d", i)
		asMap := ev
		asMap.Data, asMap.Fields = ev.Fields.Map(), nil
		want, err := appendEvent(nil, &asMap)
		require.NoError(t, err, "event %d", i)
		require.Equal(t, string(want), string(got), "event %d", i)
	}
}

// TestTypedFieldsRefuseNaN: a float JSON cannot hold is an error, as in a map.
func TestTypedFieldsRefuseNaN(t *testing.T) {
	for _, d := range []*events.RequestFinishedData{{OverheadMS: math.NaN()}, {CostUSD: math.Inf(1), Priced: true}} {
		ev := events.Event{Type: events.RequestFinished, Session: "s", Tenant: "t", Fields: d}
		_, err := appendEvent(nil, &ev)
		require.Error(t, err)
	}
}

// TestRecorderKeepsFieldsAsData: in-process readers find typed data in Data.
func TestRecorderKeepsFieldsAsData(t *testing.T) {
	var r events.Recorder
	r.Emit(typedEvents()[3])
	got := r.All()[0]
	require.Nil(t, got.Fields)
	require.Equal(t, 499, got.Data["status"])
	require.Equal(t, -1, got.Data["prefix_break_offset"])
	require.Equal(t, int64(10), got.Data["usage"].(map[string]any)["input_tokens"])
}

// FuzzTypedFields: for any values, typed Fields and their map encode to
// the same bytes, or both fail.
func FuzzTypedFields(f *testing.F) {
	f.Add("m", "agent", "err <&>", "00ff", 200, int64(12), 0.5, 1e-7, int64(3), -1, uint8(0xff))
	f.Add("\xff\xfe", "\u2028", "", "", 0, int64(-1), 1e21, 0.0, int64(math.MinInt64), 0, uint8(0))
	f.Fuzz(func(t *testing.T, model, agent, errText, hash string, status int, dur int64, overhead, cost float64, tokens int64, offset int, opts uint8) {
		d := &events.RequestFinishedData{Status: status, DurationMS: dur, Model: model, Stop: agent, Rounds: offset,
			Continuations: status / 2, OverheadMS: overhead, CostUSD: cost, Priced: opts&1 != 0}
		if opts&2 != 0 {
			d.Usage = &events.RequestUsage{InputTokens: tokens, OutputTokens: -tokens, CacheReadTokens: dur, CacheWriteTokens: int64(offset)}
		}
		if opts&4 != 0 {
			d.Prefix = &events.RequestPrefix{Hash: hash, BreakOffset: offset, Cause: errText}
		}
		if opts&8 != 0 {
			d.Error = errText
		}
		started := &events.RequestStartedData{Model: model, Agent: agent, Side: errText, Stream: opts&16 != 0}
		for _, fs := range []events.Fields{d, started} {
			ev := events.Event{Type: events.RequestFinished, Session: "s", Tenant: "t", Fields: fs}
			got, gerr := appendEvent(nil, &ev)
			asMap := events.Event{Type: events.RequestFinished, Session: "s", Tenant: "t", Data: fs.Map()}
			want, werr := appendEvent(nil, &asMap)
			if werr != nil {
				require.Error(t, gerr)
				continue
			}
			require.NoError(t, gerr)
			require.Equal(t, string(want), string(got))
		}
	})
}

// BenchmarkAppendTypedEvent: request.finished with typed Fields, as flush
// encodes it (BenchmarkAppendEvent is the same data as a map).
func BenchmarkAppendTypedEvent(b *testing.B) {
	ev := typedEvents()[3]
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = appendEvent(buf[:0], &ev)
	}
}

// otherFields is a Fields type the feed has no encoder of its own for.
type otherFields map[string]any

func (f otherFields) Map() map[string]any { return f }

// TestOtherFieldsEncodeThroughTheirMap: any other Fields type is encoded
// from its map.
func TestOtherFieldsEncodeThroughTheirMap(t *testing.T) {
	ev := events.Event{Type: events.FormatApplied, Session: "s", Tenant: "t", Fields: otherFields{"rule": "r", "n": 2}}
	got, err := appendEvent(nil, &ev)
	require.NoError(t, err)
	require.Contains(t, string(got), `,"data":{"n":2,"rule":"r"}}`)
}
