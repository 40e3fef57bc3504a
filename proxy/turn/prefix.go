package turn

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/state"
)

// Cache-integrity diagnostics (docs/diagnostics.md). A prompt cache serves
// a request's longest prefix that an earlier request sent byte for byte, so
// each turn's conversation should extend the previous one's. Per turn the
// engine hashes each element of the conversation it sends upstream and of
// the agent's own, compares them with the session's previous request of
// the same conversation, and keeps the result in the session's
// PrefixSlotName slot.

// PrefixSlotName is the session slot the engine keeps the diagnostics in.
const PrefixSlotName = "cache_integrity"

// PrefixSlotVersion is the slot's schema version.
const PrefixSlotVersion = 1

// Bounds of the slot: conversations followed per session (a main
// conversation and its subagents'), turns kept for the sessions API.
const (
	maxPrefixTracks = 4
	maxPrefixTurns  = 20
)

// Prefix break causes (PrefixTurn.Cause; label of shepherd_prefix_breaks_total).
const (
	// CauseClient: the agent's own history changed at or before that point.
	CauseClient = "client"
	// CauseCompaction: the agent's history only grew; shepherd replaced
	// tool results this turn (context compaction).
	CauseCompaction = "compaction"
	// CauseGating: the agent's history only grew; shepherd left earlier
	// messages out this turn (history gating).
	CauseGating = "gating"
	// CauseProxy: the agent's history only grew and no request edit
	// explains the change: a shepherd bug.
	CauseProxy = "proxy"
)

// PrefixTurn is one turn's cache-integrity record.
type PrefixTurn struct {
	At        time.Time `json:"at"`
	RequestID string    `json:"request_id,omitempty"`
	// Hash is a hash (16 hex digits) of the conversation sent upstream:
	// the xxhash64 of its elements' hashes in order.
	Hash string `json:"prefix_hash"`
	// Elements is the number of conversation elements sent upstream.
	Elements int `json:"elements"`
	// First: the conversation's first turn seen in this session (nothing
	// to compare with).
	First bool `json:"first,omitempty"`
	// BreakOffset is the byte offset in the upstream body of the first
	// element that differs from the previous request's (the closing
	// bracket when elements went missing); -1 when the previous request's
	// conversation is a prefix of this one's. BreakElement is that
	// element's index (-1 likewise).
	BreakOffset  int `json:"break_offset"`
	BreakElement int `json:"break_element"`
	// Cause is the break's cause (Cause*), "" without a break.
	Cause string `json:"cause,omitempty"`
	// CacheReadTokens and CacheWriteTokens are the turn's prompt-cache
	// usage, summed over its upstream replies.
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
}

// Broken reports whether the turn's prefix differs from the previous one.
func (p *PrefixTurn) Broken() bool { return p.BreakOffset >= 0 }

// PrefixState is the slot: the conversations followed, the last turns,
// and the breaks counted by cause.
type PrefixState struct {
	Tracks []prefixTrack    `json:"tracks,omitempty"`
	Turns  []PrefixTurn     `json:"turns,omitempty"`
	Breaks map[string]int64 `json:"breaks,omitempty"`
}

// prefixTrack is one conversation of the session, known by the hash of the
// agent's first element: the element hashes of the agent's latest request
// and of the latest request sent upstream for it.
type prefixTrack struct {
	Agent    hashList `json:"agent"`
	Upstream hashList `json:"upstream"`
}

// SlotVersion implements state.Slot.
func (s *PrefixState) SlotVersion() int { return PrefixSlotVersion }

// CloneSlot implements state.Slot.
func (s *PrefixState) CloneSlot() state.Slot {
	c := &PrefixState{Turns: append([]PrefixTurn(nil), s.Turns...)}
	for _, tr := range s.Tracks {
		c.Tracks = append(c.Tracks, prefixTrack{Agent: append(hashList(nil), tr.Agent...), Upstream: append(hashList(nil), tr.Upstream...)})
	}
	if s.Breaks != nil {
		c.Breaks = make(map[string]int64, len(s.Breaks))
		for k, v := range s.Breaks {
			c.Breaks[k] = v
		}
	}
	return c
}

// Counts implements state.Counter: prefix_breaks, the session's breaks of
// every cause.
func (s *PrefixState) Counts() map[string]int64 {
	var n int64
	for _, v := range s.Breaks {
		n += v
	}
	return map[string]int64{"prefix_breaks": n}
}

// PrefixOf returns the session's cache-integrity slot: nil when it has
// none, an error when the stored slot cannot be read.
func PrefixOf(sess *state.Session) (*PrefixState, error) {
	return state.SlotAs(sess, PrefixSlotName, decodePrefixSlot)
}

var decodePrefixSlot = state.SameShapeJSON[PrefixState]("turn engine", 1, PrefixSlotVersion)

// hashList is a list of element hashes, stored compactly: base64 of the
// little-endian uint32s.
type hashList []uint32

// MarshalJSON implements json.Marshaler.
func (h hashList) MarshalJSON() ([]byte, error) {
	raw := make([]byte, 4*len(h))
	for i, v := range h {
		binary.LittleEndian.PutUint32(raw[4*i:], v)
	}
	return json.Marshal(base64.StdEncoding.EncodeToString(raw))
}

// UnmarshalJSON implements json.Unmarshaler.
func (h *hashList) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(raw)%4 != 0 {
		return fmt.Errorf("turn: bad hash list")
	}
	out := make(hashList, len(raw)/4)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(raw[4*i:])
	}
	*h = out
	return nil
}

// followed notes the turn's last upstream request (after follow-ups or
// continuations), whose conversation the next turn must extend.
func (c *prefixCheck) followed(key string, lastSent []byte) {
	var h rewrite.History
	rewrite.HashHistory(&h, lastSent, key)
	c.upstream = h.Hashes
}

// prefixCheck is what Begin found for the turn and save records.
type prefixCheck struct {
	turn     PrefixTurn
	agent    []uint32 // the agent's element hashes (owned)
	upstream []uint32 // the upstream request's (owned)
}

// PrefixMetrics is what a Metrics may also implement to count prefix
// breaks by cause (the proxy's Prometheus metrics do).
type PrefixMetrics interface {
	PrefixBreak(route, cause string)
}

// checkPrefix compares the turn's conversations with the session's
// previous request of the same conversation. key is the codec's
// conversation member; replaced and dropped say whether the request edits
// replaced tool results or left messages out.
func (t *Turn) checkPrefix(sess *state.Session, key string, replaced, dropped bool) *prefixCheck {
	var agent, up rewrite.History
	rewrite.HashHistory(&up, t.sent, key)
	rewrite.HashHistoryLike(&agent, t.body, key, &up, t.sent)
	if len(agent.Hashes) == 0 {
		return nil
	}
	c := &prefixCheck{agent: agent.Hashes, upstream: up.Hashes}
	c.turn = PrefixTurn{At: t.e.now(), RequestID: t.call.RequestID, Hash: prefixHash(up.Hashes),
		Elements: len(up.Hashes), BreakOffset: -1, BreakElement: -1}
	st, _ := PrefixOf(sess)
	tr := st.track(agent.Hashes[0])
	if tr == nil {
		c.turn.First = true
		return c
	}
	k := firstDiff(tr.Upstream, up.Hashes)
	if k < 0 {
		return c
	}
	c.turn.BreakElement = k
	c.turn.BreakOffset = up.End
	if k < len(up.Starts) {
		c.turn.BreakOffset = up.Starts[k]
	}
	switch {
	case firstDiff(tr.Agent, agent.Hashes) >= 0:
		c.turn.Cause = CauseClient
	case replaced:
		c.turn.Cause = CauseCompaction
	case dropped:
		c.turn.Cause = CauseGating
	default:
		c.turn.Cause = CauseProxy
	}
	if m, ok := t.e.metrics.(PrefixMetrics); ok {
		m.PrefixBreak(t.call.Route, c.turn.Cause)
	}
	return c
}

// firstDiff is the index of the first element of prev that next does not
// have at the same position, -1 when prev is a prefix of next.
func firstDiff(prev, next []uint32) int {
	for i, h := range prev {
		if i >= len(next) || next[i] != h {
			return i
		}
	}
	return -1
}

// prefixHash hashes a conversation's element hashes, in order.
func prefixHash(hashes []uint32) string {
	d := xxhash.New()
	var b [4]byte
	for _, h := range hashes {
		binary.LittleEndian.PutUint32(b[:], h)
		_, _ = d.Write(b[:])
	}
	return fmt.Sprintf("%016x", d.Sum64())
}

// track is the conversation whose agent request began with first; nil when
// s is nil or follows no such conversation.
func (s *PrefixState) track(first uint32) *prefixTrack {
	if s == nil {
		return nil
	}
	for i := range s.Tracks {
		if a := s.Tracks[i].Agent; len(a) > 0 && a[0] == first {
			return &s.Tracks[i]
		}
	}
	return nil
}

// record saves the turn into sess (inside the store's atomic update):
// the conversation's track, most recent first (the oldest of more than
// maxPrefixTracks forgotten), the turn with its cache usage, and the break.
// It may run more than once (an optimistic update retried).
func (c *prefixCheck) record(sess *state.Session, u *turnUsage) {
	st, err := PrefixOf(sess)
	if st == nil || err != nil {
		st = &PrefixState{}
	}
	tracks := make([]prefixTrack, 0, maxPrefixTracks)
	tracks = append(tracks, prefixTrack{Agent: c.agent, Upstream: c.upstream})
	for _, tr := range st.Tracks {
		if len(tracks) == maxPrefixTracks {
			break
		}
		if len(tr.Agent) > 0 && tr.Agent[0] != c.agent[0] {
			tracks = append(tracks, tr)
		}
	}
	st.Tracks = tracks
	p := c.turn
	if u != nil {
		p.CacheReadTokens, p.CacheWriteTokens = u.usage.CacheReadTokens, u.usage.CacheWriteTokens
	}
	st.Turns = append(st.Turns, p)
	if n := len(st.Turns) - maxPrefixTurns; n > 0 {
		st.Turns = append(st.Turns[:0], st.Turns[n:]...)
	}
	if p.Cause != "" {
		if st.Breaks == nil {
			st.Breaks = map[string]int64{}
		}
		st.Breaks[p.Cause]++
	}
	sess.SetSlot(PrefixSlotName, st)
}

// Prefix is the turn's cache-integrity record (cache tokens filled in once
// the turn's replies were read); ok is false when the turn kept none (a
// side request, an API without a conversation member, an empty one).
func (t *Turn) Prefix() (p PrefixTurn, ok bool) {
	if t.prefix == nil {
		return PrefixTurn{}, false
	}
	p = t.prefix.turn
	if a := t.spent(); a != nil {
		p.CacheReadTokens, p.CacheWriteTokens = a.usage.CacheReadTokens, a.usage.CacheWriteTokens
	}
	return p, true
}
