package state

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// legacyV0 is a record exactly as the Redis store wrote it before records
// carried a version and hooks owned their state.
const legacyV0 = `{"id":"s","tenant":"t","created_at":"2025-03-04T05:06:07Z","updated_at":"2025-03-04T05:06:08Z",` +
	`"requests":3,"topic":"refactor","chapters":[{"title":"refactor","started_at":"2025-03-04T05:06:07Z"}],` +
	`"intent":"clean-up","ledger":[{"kind":"turn","anchor":"a1","data":"eyJ4IjoxfQ=="}],` +
	`"audit":[{"at":"2025-03-04T05:06:07Z","tool":"Edit","decision":"allowed"}],` +
	`"recovery":{"truncated":2,"attempts":3,"recovered":1},"version":7}`

func TestDecodeLegacyRecordMovesHookFieldsIntoSlots(t *testing.T) {
	var s Session
	require.NoError(t, decodeRecord([]byte(legacyV0), &s))
	assert.Equal(t, "s", s.ID)
	assert.EqualValues(t, 3, s.Requests)
	assert.EqualValues(t, 7, s.Version)
	require.Len(t, s.Ledger, 1)
	assert.Equal(t, `{"x":1}`, string(s.Ledger[0].Data))

	slot := func(name string) *RawSlot {
		r, ok := s.Slots[name].(*RawSlot)
		require.True(t, ok, "slot %s: %#v", name, s.Slots[name])
		assert.Equal(t, 0, r.V, "legacy slots are version 0")
		return r
	}
	assert.JSONEq(t, `{"topic":"refactor","chapters":[{"title":"refactor","started_at":"2025-03-04T05:06:07Z"}]}`, string(slot("topics").Data))
	assert.JSONEq(t, `{"intent":"clean-up","audit":[{"at":"2025-03-04T05:06:07Z","tool":"Edit","decision":"allowed"}]}`, string(slot("intents").Data))
	assert.JSONEq(t, `{"truncated":2,"attempts":3,"recovered":1}`, string(slot("recovery").Data))
	assert.Equal(t, "refactor", s.Note("topics"), "the active topic stays the listing note")
	assert.Equal(t, "clean-up", s.Note("intents"))
	assert.Empty(t, s.Note("recovery"))
	assert.Equal(t, map[string]string{"topics": "refactor", "intents": "clean-up"}, summarize(&s).Notes)

	var bare Session
	require.NoError(t, decodeRecord([]byte(`{"id":"s","requests":1}`), &bare))
	assert.Empty(t, bare.Slots, "a legacy record without hook state gets no slots")
}

func TestRecordRoundTrip(t *testing.T) {
	s := fullSession()
	b, err := encodeRecord(s)
	require.NoError(t, err)
	assert.Contains(t, string(b), `{"v":1,`)
	var back Session
	require.NoError(t, decodeRecord(b, &back))
	assert.Equal(t, s, &back)
}

// recordV1BeforeUsage is a version-1 record as written before sessions
// carried their agent, model and usage.
const recordV1BeforeUsage = `{"v":1,"id":"s","tenant":"t","created_at":"2025-03-04T05:06:07Z",` +
	`"updated_at":"2025-03-04T05:06:08Z","requests":2,` +
	`"slots":{"topics":{"v":1,"data":{"topic":"refactor"},"note":"refactor"}},"version":4}`

// TestRecordWithoutUsage: a version-1 record from before agent, model and
// usage decodes with them empty, and its summary too; once set they
// survive a round trip.
func TestRecordWithoutUsage(t *testing.T) {
	var s Session
	require.NoError(t, decodeRecord([]byte(recordV1BeforeUsage), &s))
	assert.Equal(t, "s", s.ID)
	assert.EqualValues(t, 2, s.Requests)
	assert.EqualValues(t, 4, s.Version)
	assert.Empty(t, s.Agent)
	assert.Empty(t, s.Model)
	assert.Zero(t, s.Usage)
	assert.Equal(t, "refactor", s.Note("topics"))
	sum := summarize(&s)
	assert.Nil(t, sum.Counts, "a slot stored before counts has none")
	assert.Equal(t, s.CreatedAt, sum.CreatedAt)

	s.Agent, s.Model = "codex", "gpt-5"
	s.Usage = Usage{Turns: 1, InputTokens: 10, OutputTokens: 5, CacheReadTokens: 100, CacheWriteTokens: 1, CostUSD: 0.001}
	b, err := encodeRecord(&s)
	require.NoError(t, err)
	var back Session
	require.NoError(t, decodeRecord(b, &back))
	assert.Equal(t, s, back)

	var oldSum Summary
	require.NoError(t, json.Unmarshal([]byte(`{"id":"s","tenant":"t","updated_at":"2025-03-04T05:06:08Z","requests":2,"notes":{"topics":"x"}}`), &oldSum))
	assert.Zero(t, oldSum.Usage)
	assert.Empty(t, oldSum.Agent)
	assert.Nil(t, oldSum.Counts)
	assert.True(t, oldSum.CreatedAt.IsZero())
}

func TestDecodeRecordRefusesUnknownVersions(t *testing.T) {
	for _, v := range []string{"2", "99", "0", "-1", `"1"`, "1.5", "null"} {
		var s Session
		err := decodeRecord([]byte(`{"v":`+v+`,"id":"s"}`), &s)
		assert.ErrorIs(t, err, ErrRecordVersion, "v=%s", v)
	}
}

func TestRedisReadsLegacyAndRefusesNewerRecords(t *testing.T) {
	ctx := context.Background()
	raw := rawRedis(t)
	var errs []string
	r := newTestRedis(t, RedisOptions{OnError: func(op string, _ error) { errs = append(errs, op) }})

	old := Key{Tenant: "t", Session: "old"}
	require.NoError(t, raw.HSet(ctx, r.sessionKey(old), fieldVersion, "7", fieldData, legacyV0).Err())
	s, err := r.Get(ctx, old)
	require.NoError(t, err)
	assert.EqualValues(t, 3, s.Requests)
	assert.Contains(t, s.Slots, "topics")
	s, err = r.Update(ctx, old, func(s *Session) error { s.Requests++; return nil })
	require.NoError(t, err)
	stored, err := raw.HGet(ctx, r.sessionKey(old), fieldData).Result()
	require.NoError(t, err)
	var rec map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(stored), &rec))
	assert.Equal(t, "1", string(rec["v"]), "an updated legacy record is rewritten at the current version")
	assert.JSONEq(t, `{"v":0,"data":{"truncated":2,"attempts":3,"recovered":1}}`, string(mustSlots(t, rec)["recovery"]), "nothing is lost on the way")
	assert.NotContains(t, rec, "topic")

	newer := Key{Tenant: "t", Session: "newer"}
	blob := `{"v":2,"id":"newer","future":true}`
	require.NoError(t, raw.HSet(ctx, r.sessionKey(newer), fieldVersion, "3", fieldData, blob).Err())
	_, err = r.Get(ctx, newer)
	assert.ErrorIs(t, err, ErrRecordVersion)
	_, err = r.Update(ctx, newer, func(s *Session) error { s.Requests++; return nil })
	assert.ErrorIs(t, err, ErrRecordVersion)
	after, err := raw.HGet(ctx, r.sessionKey(newer), fieldData).Result()
	require.NoError(t, err)
	assert.Equal(t, blob, after, "a newer record is never overwritten")
	assert.Empty(t, errs, "a version refusal is not a store fault")
}

func mustSlots(t *testing.T, rec map[string]json.RawMessage) map[string]json.RawMessage {
	t.Helper()
	var slots map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(rec["slots"], &slots))
	return slots
}

// TestLegacySummary: a listing summary stored before slots carried the
// topic and intent at the top level; they read as the slots' notes.
func TestLegacySummary(t *testing.T) {
	var sum Summary
	require.NoError(t, json.Unmarshal([]byte(`{"id":"s","tenant":"t","requests":2,"topic":"refactor","intent":"clean-up"}`), &sum))
	assert.Equal(t, Summary{ID: "s", Tenant: "t", Requests: 2, Notes: map[string]string{"topics": "refactor", "intents": "clean-up"}}, sum)
	var cur Summary
	require.NoError(t, json.Unmarshal([]byte(`{"id":"s","requests":1,"notes":{"topics":"x"}}`), &cur))
	assert.Equal(t, Summary{ID: "s", Requests: 1, Notes: map[string]string{"topics": "x"}}, cur)
}
