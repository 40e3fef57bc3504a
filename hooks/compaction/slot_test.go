package compaction

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/state"
)

// TestSlotRoundTrip: the slot survives the store's encoding, its listing
// count without decoding, and an unknown version is refused.
func TestSlotRoundTrip(t *testing.T) {
	want := &State{Epoch: 2, Items: []Item{{Anchor: "a1", Block: 0, CallID: "c1", Text: "cut", Epoch: 1}, {Anchor: "a2", Block: 3, Text: "stub", Epoch: 2}}}
	sess := &state.Session{}
	sess.SetSlot(Name, want)
	b, err := json.Marshal(sess)
	require.NoError(t, err)
	var back state.Session
	require.NoError(t, json.Unmarshal(b, &back))
	got, err := Of(&back)
	require.NoError(t, err)
	require.Equal(t, want, got)

	future := &state.Session{}
	future.SetSlot(Name, &state.RawSlot{V: SlotVersion + 1, Data: json.RawMessage(`{}`)})
	_, err = Of(future)
	require.ErrorContains(t, err, "newer than this build reads")

	none, err := Of(&state.Session{})
	require.NoError(t, err)
	require.Nil(t, none)
}

func TestCloneSlot(t *testing.T) {
	s := &State{Epoch: 1, Items: []Item{{Anchor: "a", Text: "x"}}}
	c := s.CloneSlot().(*State)
	c.Items[0].Text = "changed"
	require.Equal(t, "x", s.Items[0].Text)
}

func TestAddEpoch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		have  *State
		items []Item
		stale []string
		want  *State
	}{
		{
			"the first epoch",
			nil, []Item{{Anchor: "a", Text: "x"}}, nil,
			&State{Epoch: 1, Items: []Item{{Anchor: "a", Text: "x", Epoch: 1}}},
		},
		{
			"items are added under the next epoch",
			&State{Epoch: 1, Items: []Item{{Anchor: "a", Text: "x", Epoch: 1}}}, []Item{{Anchor: "b", Block: 1, Text: "y"}}, nil,
			&State{Epoch: 2, Items: []Item{{Anchor: "a", Text: "x", Epoch: 1}, {Anchor: "b", Block: 1, Text: "y", Epoch: 2}}},
		},
		{
			"a result already stored keeps its stored text",
			&State{Epoch: 1, Items: []Item{{Anchor: "a", Text: "first", Epoch: 1}}}, []Item{{Anchor: "a", Text: "second"}, {Anchor: "a", Block: 1, Text: "other block"}}, nil,
			&State{Epoch: 2, Items: []Item{{Anchor: "a", Text: "first", Epoch: 1}, {Anchor: "a", Block: 1, Text: "other block", Epoch: 2}}},
		},
		{
			"stale anchors are dropped",
			&State{Epoch: 3, Items: []Item{{Anchor: "old", Text: "x", Epoch: 1}, {Anchor: "kept", Text: "y", Epoch: 2}}}, []Item{{Anchor: "new", Text: "z"}}, []string{"old"},
			&State{Epoch: 4, Items: []Item{{Anchor: "kept", Text: "y", Epoch: 2}, {Anchor: "new", Text: "z", Epoch: 4}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sess := &state.Session{}
			if tc.have != nil {
				sess.SetSlot(Name, tc.have)
			}
			addEpoch(tc.items, tc.stale)(sess)
			got, err := Of(sess)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestBound(t *testing.T) {
	var items []Item
	for i := range maxItems + 10 {
		items = append(items, Item{Anchor: fmt.Sprint(i), Text: "x"})
	}
	got := bound(items)
	require.Len(t, got, maxItems)
	require.Equal(t, "10", got[0].Anchor, "the oldest go first")

	big := strings.Repeat("y", maxSlotBytes/4)
	items = []Item{{Anchor: "1", Text: big}, {Anchor: "2", Text: big}, {Anchor: "3", Text: big}, {Anchor: "4", Text: big}, {Anchor: "5", Text: "z"}}
	got = bound(items)
	require.Equal(t, "2", got[0].Anchor, "past the byte bound the oldest go first")
	require.Len(t, got, 4)

	small := []Item{{Anchor: "a"}}
	require.Equal(t, small, bound(small))
}
