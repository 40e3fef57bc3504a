package intents

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

func sampleState() *State {
	at := time.Date(2026, 11, 27, 10, 0, 0, 123, time.FixedZone("x", 3600))
	return &State{Intent: "INT-001", Audit: []AuditEntry{
		{At: at, Tool: "Bash", CallID: "toolu_1", Decision: DecisionRefused, Rule: "scope", Reason: "outside src/**", Intent: "INT-001", Topic: "t1"},
		{At: at.UTC(), Tool: "Read", Decision: "allowed"},
	}}
}

// The slot's own encoder writes encoding/json's bytes, and its decoder
// reads them back as encoding/json does, for a full state, an empty one
// and an empty audit; both stored versions read alike.
func TestSlotCodec(t *testing.T) {
	for _, s := range []*State{sampleState(), {}, {Audit: []AuditEntry{}}} {
		kit.CheckSlotRoundTrip(t, s, decodeStateFast, (*State).decodeStoredAudit, (*State).AppendSlotJSON)
	}
	for _, v := range []int{0, SlotVersion} {
		st, err := decodeSlot(v, mustMarshal(t, sampleState()))
		require.NoError(t, err)
		require.Equal(t, "INT-001", st.Intent)
		require.NoError(t, st.decodeStoredAudit())
		require.Len(t, st.Audit, 2)
	}
	_, err := decodeSlot(SlotVersion+1, []byte(`{}`))
	require.Error(t, err, "a newer slot version")
	_, err = decodeSlot(SlotVersion, []byte(`{"intent":7}`))
	require.Error(t, err, "what neither decoder reads is an error")
}

func mustMarshal(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// FuzzSlotCodec: what the fast decoder takes, encoding/json takes and
// reads the same; what encoding/json reads, AppendSlotJSON writes as
// encoding/json does (read back alike).
func FuzzSlotCodec(f *testing.F) {
	good, _ := json.Marshal(sampleState())
	f.Add(good)
	f.Add([]byte(`{"intent":null,"audit":[null,{"tool":"x","TOOL":"y"}]}`))
	f.Add([]byte(`{"Intent":"a","audit":[{"at":"2026-11-27T10:00:00Z","reason":"<&>"}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		kit.CheckSlotCodec(t, raw, decodeStateFast, (*State).decodeStoredAudit, (*State).AppendSlotJSON)
	})
}

// A slot read from a store keeps its audit undecoded through a turn: the
// turn's decisions are appended to the stored entries, the oldest dropped
// past the bound, the refusals counted from them, and Of (the sessions API)
// reads them all while the session keeps them undecoded.
func TestStoredAudit(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	entry := func(i int, decision string) AuditEntry {
		return AuditEntry{At: at.Add(time.Duration(i) * time.Second), Tool: "Bash", CallID: fmt.Sprintf("c%d", i), Decision: decision, Intent: "INT-001"}
	}
	before := State{Intent: "INT-001"}
	for i := range 5 {
		d := "allowed"
		if i%2 == 0 {
			d = DecisionRefused
		}
		before.Audit = append(before.Audit, entry(i, d))
	}
	data, err := before.AppendSlotJSON(nil)
	require.NoError(t, err)
	sess := &state.Session{ID: "s", Slots: state.Slots{Name: &state.RawSlot{V: SlotVersion, Data: data}}}

	st, err := stateOf(sess)
	require.NoError(t, err)
	require.Nil(t, st.Audit, "not decoded for the hook")
	require.Equal(t, "INT-001", st.Active())
	require.Equal(t, map[string]int64{CountRefusals: 3}, st.Counts(), "counted from the stored entries")

	added := []AuditEntry{entry(5, DecisionRefused), entry(6, "allowed")}
	require.True(t, st.appendStoredAudit(added, 6))
	kept, err := stateOf(sess)
	require.NoError(t, err)
	require.Nil(t, kept.Audit, "still undecoded")
	require.Equal(t, map[string]int64{CountRefusals: 3}, kept.Counts(), "entry 0, refused, went past the bound")

	got, err := Of(sess)
	require.NoError(t, err)
	want := append(append([]AuditEntry(nil), before.Audit[1:]...), added...)
	require.Equal(t, want, got.Audit)
	again, err := stateOf(sess)
	require.NoError(t, err)
	require.Nil(t, again.Audit, "Of leaves the session's slot as it was")

	// More entries than the bound keep only the newest of them.
	many := []AuditEntry{entry(7, "allowed"), entry(8, "allowed"), entry(9, DecisionRefused)}
	require.True(t, kept.appendStoredAudit(many, 2))
	require.NoError(t, kept.decodeStoredAudit())
	require.Equal(t, many[1:], kept.Audit)

	// An audit the hook cannot read is reported when read.
	bad := &state.Session{ID: "b", Slots: state.Slots{Name: &state.RawSlot{V: SlotVersion, Data: []byte(`{"audit":[{"tool":7}]}`)}}}
	_, err = Of(bad)
	require.Error(t, err)
}

// FuzzStoredAudit: decisions appended to a stored audit (as this codec or
// encoding/json writes it) read back as the same decisions appended to the
// decoded audit and trimmed to the bound, with the same refusals counted.
func FuzzStoredAudit(f *testing.F) {
	good, _ := json.Marshal(sampleState())
	f.Add(good, "Bash", DecisionRefused, uint8(2), uint8(3))
	f.Add([]byte(`{"audit":[null,{"decision":"refused"}]}`), "x", "allowed", uint8(1), uint8(1))
	f.Fuzz(func(t *testing.T, raw []byte, tool, decision string, n, limit uint8) {
		var values State
		if json.Unmarshal(raw, &values) != nil || limit == 0 {
			return
		}
		var stored State
		if !decodeStateFast(mustMarshal(t, &values), &stored) || stored.storedAudit == "" {
			return
		}
		at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
		var entries []AuditEntry
		for i := range int(n % 8) {
			entries = append(entries, AuditEntry{At: at, Tool: tool, CallID: fmt.Sprint(i), Decision: decision})
		}
		bound := int(limit)
		require.True(t, stored.appendStoredAudit(entries, bound))
		values.Audit = append(values.Audit, entries...)
		if over := len(values.Audit) - bound; over > 0 && len(entries) > 0 {
			values.Audit = values.Audit[over:]
		}
		var want State
		require.NoError(t, json.Unmarshal(mustMarshal(t, &values), &want))
		require.Equal(t, want.Counts(), stored.Counts())
		require.NoError(t, stored.decodeStoredAudit())
		require.Equal(t, want.Audit, stored.Audit)
	})
}
