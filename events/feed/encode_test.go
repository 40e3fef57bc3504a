package feed

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/events"
)

// sampleEvents are events shaped as the producers emit them.
func sampleEvents() []events.Event {
	at := time.Date(2026, 11, 26, 9, 30, 0, 123456789, time.UTC)
	return []events.Event{
		{Type: events.RequestStarted, At: at, Session: "s1", Tenant: "t1", Route: "anthropic", RequestID: "r1",
			Data: map[string]any{"model": "claude", "agent": "claude-code", "stream": true, "side": ""}},
		{Type: events.RequestFinished, At: at.In(time.FixedZone("x", 3600)), Session: "s1", Tenant: "t1",
			Data: map[string]any{
				"status": 200, "duration_ms": int64(12), "model": "m", "stop": "end_turn", "rounds": 1,
				"continuations": 0, "overhead_ms": 0.0421, "cost_usd": 1.5e-7, "prefix_hash": "00ff",
				"prefix_break_offset": -1, "usage": map[string]any{"input_tokens": int64(10), "output_tokens": int64(3)},
			}},
		{ID: "1-0", Type: events.IntentSelected, At: at, Session: "s2", Tenant: "t2",
			Data: map[string]any{"intent": "fix", "criteria": []string{"a", "b \"quoted\""}, "none": []string(nil),
				"expires_at": at, "labels": map[string]string{"k": "v"}, "list": []any{1, "x", false, nil}}},
		{Type: events.CallRefused, At: at, Session: "s3", Tenant: "t3",
			Data: map[string]any{"reason": "<rm -rf /> & \u2028 \x01 tab\t é", "big": 1e21, "small": float32(2.5e-7),
				"u": uint64(math.MaxUint64), "i32": int32(-4), "struct": struct {
					A int `json:"a"`
				}{7}}},
		{Type: events.ChapterOpened, At: time.Time{}, Session: "s4", Tenant: "t4"},
	}
}

// TestAppendEventMatchesEncodingJSON: every sample decodes to what
// encoding/json's document decodes to, and is byte for byte the same
// where no string holds an HTML character (which only encoding/json
// escapes).
func TestAppendEventMatchesEncodingJSON(t *testing.T) {
	for i, ev := range sampleEvents() {
		want, err := json.Marshal(ev)
		require.NoError(t, err)
		got, err := appendEvent([]byte("prefix"), &ev)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(got), "prefix"), "appends to dst")
		got = got[len("prefix"):]
		require.True(t, json.Valid(got), "event %d: %s", i, got)
		var a, b any
		require.NoError(t, json.Unmarshal(want, &a))
		require.NoError(t, json.Unmarshal(got, &b))
		require.Equal(t, a, b, "event %d", i)
		if i != 3 { // the only sample with HTML characters and U+2028
			require.Equal(t, string(want), string(got), "event %d", i)
		}
	}
}

// TestAppendEventRefusesWhatJSONCannotHold: a NaN or an unsupported value
// is an error, as with encoding/json.
func TestAppendEventRefusesWhatJSONCannotHold(t *testing.T) {
	for _, v := range []any{math.NaN(), math.Inf(1), float32(math.Inf(-1)), make(chan int), map[string]any{"f": func() {}}} {
		ev := events.Event{Type: events.Continuation, Session: "s", Tenant: "t", Data: map[string]any{"v": v}}
		_, err := appendEvent(nil, &ev)
		require.Error(t, err, "%T", v)
	}
	ev := events.Event{Type: events.Continuation, At: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Session: "s", Tenant: "t"}
	_, err := appendEvent(nil, &ev)
	require.Error(t, err)
}

// FuzzAppendEvent: for any strings and numbers the document is valid JSON
// and decodes to what encoding/json's decodes to.
func FuzzAppendEvent(f *testing.F) {
	f.Add("s", "t", "reason <&>", "k", 1.5, int64(-3), true)
	f.Add("\xff\xfe", "\u2028", "\x00", "", 1e-7, int64(math.MaxInt64), false)
	f.Add("a\"b", "c\\d", "é", "\t", 1e21, int64(0), true)
	f.Fuzz(func(t *testing.T, session, tenant, text, key string, x float64, n int64, b bool) {
		ev := events.Event{Type: events.CallHeld, At: time.Unix(0, n).UTC(), Session: session, Tenant: tenant, Route: text,
			Data: map[string]any{key: text, "x": x, "n": n, "b": b, "nested": map[string]any{text: []string{key, text}}}}
		want, werr := json.Marshal(ev)
		got, gerr := appendEvent(nil, &ev)
		if werr != nil {
			require.Error(t, gerr, "encoding/json refused: %v", werr)
			return
		}
		require.NoError(t, gerr)
		require.True(t, json.Valid(got), "%q", got)
		var a, c any
		require.NoError(t, json.Unmarshal(want, &a))
		require.NoError(t, json.Unmarshal(got, &c))
		require.Equal(t, a, c)
	})
}

// BenchmarkAppendEvent: a request.finished event, as flush encodes it.
func BenchmarkAppendEvent(b *testing.B) {
	ev := sampleEvents()[1]
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = appendEvent(buf[:0], &ev)
	}
}

// BenchmarkMarshalEvent: the same with encoding/json, for comparison.
func BenchmarkMarshalEvent(b *testing.B) {
	ev := sampleEvents()[1]
	b.ReportAllocs()
	for b.Loop() {
		_, _ = json.Marshal(ev)
	}
}
