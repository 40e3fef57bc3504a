package topics

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

func sampleState() *State {
	at := time.Date(2026, 11, 27, 10, 0, 0, 123, time.FixedZone("x", 3600))
	return &State{Topic: "Fix the parser", Chapters: []Chapter{
		{Title: "", StartedAt: at, Calls: []CallNote{{Name: "Read", ID: "c1", At: at}}},
		{Title: "Fix the parser", StartedAt: at.UTC(), Calls: []CallNote{{Name: "Edit", At: at}, {Name: "Bash", ID: "c3", At: at}}},
		{Title: "Tests", StartedAt: at},
	}}
}

// The slot's own encoder writes encoding/json's bytes, and its decoder
// reads them back as encoding/json does, for a full state, an empty one
// and no chapters; stored chapters are written back as they were.
func TestSlotCodec(t *testing.T) {
	for _, s := range []*State{sampleState(), {}, {Chapters: []Chapter{}}} {
		read := kit.CheckSlotRoundTrip(t, s, decodeStateFast, (*State).decodeStoredChapters, (*State).AppendSlotJSON)
		require.Equal(t, int64(len(s.Chapters)), read.Counts()[CountChapters], "counted while stored")
	}
	_, err := decodeSlot(SlotVersion, []byte(`{"topic":7}`))
	require.Error(t, err, "what neither decoder reads is an error")
}

// Chapters and calls added to stored chapters read back as the same
// additions made to the decoded chapters (the effect's own path), from
// every shape of last chapter: with calls, without, none at all.
func TestStoredChaptersMatchValues(t *testing.T) {
	at := time.Date(2026, 11, 27, 11, 0, 0, 0, time.UTC)
	calls := []CallNote{{Name: "Write", ID: "w1", At: at}, {Name: "Bash", At: at}}
	starts := []*State{sampleState(), {Topic: "x", Chapters: []Chapter{{Title: "x", StartedAt: at}}},
		{Chapters: []Chapter{{StartedAt: at, Calls: []CallNote{{Name: "A", At: at}}}}}}
	adds := []struct {
		titles []string
		calls  []CallNote
	}{{nil, calls}, {[]string{"New"}, nil}, {[]string{"One", "Two"}, calls}, {nil, calls[:1]}}
	for _, start := range starts {
		for _, add := range adds {
			data, err := start.AppendSlotJSON(nil)
			require.NoError(t, err)
			var stored State
			require.True(t, decodeStateFast(data, &stored))
			require.True(t, stored.addStored(add.titles, add.calls, at))

			var values State
			require.NoError(t, json.Unmarshal(data, &values))
			for _, title := range add.titles {
				values.Chapters = append(values.Chapters, Chapter{Title: title, StartedAt: at})
			}
			if len(add.calls) > 0 {
				last := &values.Chapters[len(values.Chapters)-1]
				last.Calls = append(last.Calls, add.calls...)
			}
			out, err := stored.AppendSlotJSON(nil)
			require.NoError(t, err)
			var got State
			require.NoError(t, json.Unmarshal(out, &got), "%s", out)
			require.Equal(t, values.Chapters, got.Chapters, "%s", out)
			require.Equal(t, int64(len(values.Chapters)), stored.Counts()[CountChapters])
		}
	}
}

// A session read from a store keeps its chapters undecoded through a
// turn: the hook reads the topic, the effect adds to the stored JSON, and
// Of (the sessions API) reads them all while the session keeps them as
// they were.
func TestStoredChaptersInSession(t *testing.T) {
	data, err := sampleState().AppendSlotJSON(nil)
	require.NoError(t, err)
	sess := &state.Session{ID: "s", Slots: state.Slots{Name: &state.RawSlot{V: SlotVersion, Data: data}}}
	st, err := stateOf(sess)
	require.NoError(t, err)
	require.Nil(t, st.Chapters, "not decoded for the hook")
	require.Equal(t, "Fix the parser", st.Active())
	got, err := Of(sess)
	require.NoError(t, err)
	require.Equal(t, sampleState().Chapters[1].Calls[1].Name, got.Chapters[1].Calls[1].Name)
	require.Len(t, got.Chapters, 3)
	again, err := stateOf(sess)
	require.NoError(t, err)
	require.Nil(t, again.Chapters, "Of leaves the session's slot as it was")

	bad := &state.Session{ID: "b", Slots: state.Slots{Name: &state.RawSlot{V: SlotVersion, Data: []byte(`{"chapters":[{"calls":7}]}`)}}}
	_, err = Of(bad)
	require.Error(t, err, "chapters the hook cannot read are reported when read")
}

// FuzzSlotCodec: what the fast decoder takes, encoding/json takes and
// reads the same (stored chapters once decoded); what encoding/json reads,
// AppendSlotJSON writes as encoding/json does (read back alike).
func FuzzSlotCodec(f *testing.F) {
	good, _ := json.Marshal(sampleState())
	f.Add(good)
	f.Add([]byte(`{"topic":null,"chapters":[null,{"title":"x","TITLE":"y","calls":[null]}]}`))
	f.Add([]byte(`{"Topic":"a","chapters":[{"started_at":"2026-11-27T10:00:00Z","calls":[{"name":"<&>"}]}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		kit.CheckSlotCodec(t, raw, decodeStateFast, (*State).decodeStoredChapters, (*State).AppendSlotJSON)
	})
}

// FuzzStoredChapters: a turn recorded into stored chapters (as this codec
// or encoding/json writes them) reads back as the same turn recorded into
// the decoded chapters, within the same small bounds.
func FuzzStoredChapters(f *testing.F) {
	good, _ := json.Marshal(sampleState())
	f.Add(good, "New", "Write", true, uint8(0), uint8(0))
	f.Add([]byte(`{"chapters":[null]}`), "", "Bash", false, uint8(0), uint8(0))
	f.Add([]byte(`{"chapters":[{"title":"a","calls":[]}]}`), "", "Read", true, uint8(0), uint8(0))
	f.Add(good, "New", "Write", true, uint8(1), uint8(2))
	f.Add(good, "", "Write", true, uint8(7), uint8(2))
	f.Add([]byte(`{"chapters":[{"title":"a"},{"title":"b","calls":[{"name":"x"}]}],"calls_dropped":4}`), "c", "Read", false, uint8(0), uint8(0))
	f.Fuzz(func(t *testing.T, raw []byte, title, call string, twoCalls bool, maxChapters, maxCalls uint8) {
		var values State
		if json.Unmarshal(raw, &values) != nil {
			return
		}
		// Stored chapters are what this codec or encoding/json wrote.
		var stored State
		if !decodeStateFast(mustJSON(t, &values), &stored) {
			return
		}
		at := time.Date(2026, 11, 27, 11, 0, 0, 0, time.UTC)
		var titles []string
		if title != "" {
			titles = []string{title}
		}
		calls := []CallNote{{Name: call, At: at}}
		if twoCalls {
			calls = append(calls, CallNote{Name: call, ID: "id", At: at})
		}
		lim := Limits{Chapters: int(maxChapters%8) + 1, Calls: int(maxCalls%16) + 1}
		values.record(titles, calls, at, lim)
		stored.record(titles, calls, at, lim)
		out, err := stored.AppendSlotJSON(nil)
		require.NoError(t, err)
		var got State
		require.NoError(t, json.Unmarshal(out, &got), "%s", out)
		// Both as written and read back (which makes invalid UTF-8 alike).
		var want State
		require.NoError(t, json.Unmarshal(mustJSON(t, &values), &want))
		require.Equal(t, want.Topic, got.Topic)
		require.Equal(t, want.Chapters, got.Chapters, "%s -> %s", raw, out)
		require.Equal(t, [2]int64{want.ChaptersDropped, want.CallsDropped}, [2]int64{got.ChaptersDropped, got.CallsDropped})
		require.Equal(t, int64(len(values.Chapters)), stored.Counts()[CountChapters])
	})
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
