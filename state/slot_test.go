package state

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type counterSlot struct {
	N     int      `json:"n"`
	Names []string `json:"names,omitempty"`
}

func (c *counterSlot) SlotVersion() int { return 2 }
func (c *counterSlot) CloneSlot() Slot {
	d := *c
	d.Names = append([]string(nil), c.Names...)
	return &d
}

var errOldVersion = errors.New("version too old")

func decodeCounter(v int, data []byte) (*counterSlot, error) {
	if v != 2 {
		return nil, errOldVersion
	}
	var c counterSlot
	return &c, json.Unmarshal(data, &c)
}

func TestSlotsRoundTripThroughJSON(t *testing.T) {
	s := &Session{}
	s.SetSlot("counter", &counterSlot{N: 3, Names: []string{"a"}})
	b, err := json.Marshal(s)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"slots":{"counter":{"v":2,"data":{"n":3,"names":["a"]}}}`)

	var back Session
	require.NoError(t, json.Unmarshal(b, &back))
	require.IsType(t, &RawSlot{}, back.Slots["counter"], "decoding is the owner's job")
	c, err := SlotAs(&back, "counter", decodeCounter)
	require.NoError(t, err)
	assert.Equal(t, &counterSlot{N: 3, Names: []string{"a"}}, c)
	assert.Same(t, c, back.Slots["counter"], "the decoded slot is cached")

	again, err := json.Marshal(&back)
	require.NoError(t, err)
	assert.JSONEq(t, string(b), string(again))
}

// countingSlot is a slot with counts and a note (as topics and intents).
type countingSlot struct {
	N int `json:"n"`
}

func (c *countingSlot) SlotVersion() int         { return 1 }
func (c *countingSlot) CloneSlot() Slot          { d := *c; return &d }
func (c *countingSlot) Note() string             { return "note" }
func (c *countingSlot) Counts() map[string]int64 { return map[string]int64{"things": int64(c.N)} }

// TestCountsSurviveStorage: a Counter slot's counts are written beside its
// data, read back by RawSlot without decoding, and merged into summaries.
func TestCountsSurviveStorage(t *testing.T) {
	s := &Session{}
	s.SetSlot("counting", &countingSlot{N: 3})
	s.SetSlot("plain", &counterSlot{N: 1})
	s.SetSlot("other", &RawSlot{V: 1, Counted: map[string]int64{"others": 2}})
	assert.Equal(t, map[string]int64{"things": 3, "others": 2}, summarize(s).Counts)

	b, err := json.Marshal(s)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"counting":{"v":1,"data":{"n":3},"note":"note","counts":{"things":3}}`)
	assert.NotContains(t, string(b), `"plain":{"v":2,"data":{"n":1},"counts"`, "no counts for a slot without")
	var back Session
	require.NoError(t, json.Unmarshal(b, &back))
	require.IsType(t, &RawSlot{}, back.Slots["counting"])
	assert.Equal(t, map[string]int64{"things": 3, "others": 2}, summarize(&back).Counts)

	raw := back.Slots["counting"].(*RawSlot)
	c := raw.CloneSlot().(*RawSlot)
	c.Counted["things"] = 99
	assert.EqualValues(t, 3, raw.Counts()["things"], "a clone owns its counts")
	assert.Nil(t, (&Session{}).Slots.facts().counts)
}

func TestSlotAsErrors(t *testing.T) {
	s := &Session{}
	c, err := SlotAs(s, "counter", decodeCounter)
	require.NoError(t, err)
	assert.Nil(t, c, "no slot, no error")

	s.SetSlot("counter", &RawSlot{V: 1, Data: json.RawMessage(`{"n":1}`)})
	_, err = SlotAs(s, "counter", decodeCounter)
	require.ErrorIs(t, err, errOldVersion)
	assert.IsType(t, &RawSlot{}, s.Slots["counter"], "an unreadable slot stays as stored")

	s.SetSlot("counter", &RawSlot{V: 2, Data: json.RawMessage(`{"n":1}`)})
	s.SetSlot("other", &RawSlot{V: 7, Data: json.RawMessage(`[1]`)})
	b, err := json.Marshal(s)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"other":{"v":7,"data":[1]}`, "a slot nobody decodes is written back unchanged")

	s.SetSlot("other", nil)
	assert.NotContains(t, s.Slots, "other")
}

func TestSameShapeJSON(t *testing.T) {
	decode := SameShapeJSON[counterSlot]("counter", 1, 2)
	c, err := decode(1, []byte(`{"n":4}`))
	require.NoError(t, err)
	assert.Equal(t, 4, c.N)
	c, err = decode(2, nil)
	require.NoError(t, err)
	assert.Equal(t, &counterSlot{}, c, "no data is the zero slot")
	_, err = decode(0, []byte(`{}`))
	assert.ErrorContains(t, err, "counter: slot version 0 is older than this build reads (1)")
	_, err = decode(3, []byte(`{}`))
	assert.ErrorContains(t, err, "counter: slot version 3 is newer than this build reads (2)")
	_, err = decode(2, []byte(`{"n":"x"}`))
	assert.ErrorContains(t, err, "counter: slot version 2:")
}

func TestSlotForUpdate(t *testing.T) {
	s := &Session{}
	c, err := SlotForUpdate(s, "counter", decodeCounter)
	require.NoError(t, err)
	c.N = 5
	assert.Same(t, c, s.Slots["counter"], "a missing slot is created and stored")

	shared := s.clone()
	again, err := SlotForUpdate(s, "counter", decodeCounter)
	require.NoError(t, err)
	assert.Equal(t, c, again, "an existing slot is returned as it is")
	assert.NotSame(t, c, again, "as the session's own copy")
	assert.Same(t, again, s.Slots["counter"])
	again.N = 6
	assert.Equal(t, 5, shared.Slots["counter"].(*counterSlot).N, "a copy that shared the slot is not changed")

	stored := &RawSlot{V: 1, Data: json.RawMessage(`{"n":1}`)}
	s.SetSlot("counter", stored)
	_, err = SlotForUpdate(s, "counter", decodeCounter)
	require.ErrorIs(t, err, errOldVersion)
	assert.Same(t, Slot(stored), s.Slots["counter"], "an unreadable slot is left as stored")
}
