package turn

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
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
	maxPrefixTurns  = 10
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
// and the breaks counted by cause. Its slices and map are never changed in
// place once set (record replaces them), which lets clones share them.
type PrefixState struct {
	Tracks []prefixTrack    `json:"tracks,omitempty"`
	Turns  []PrefixTurn     `json:"turns,omitempty"`
	Breaks map[string]int64 `json:"breaks,omitempty"`
	// storedTurns, when not empty, is the turns as a serialising store
	// held them (a JSON array of at least one element), not decoded: Turns
	// is then nil. A turn reads only the tracks, and record keeps the last
	// turns as they are, so a request served from Redis decodes no turn
	// (prefix_codec.go). PrefixOf, which the sessions API reads, decodes
	// them.
	storedTurns string
}

// prefixTrack is one conversation of the session, known by the hash of the
// agent's first element (First): the element hashes of the latest request
// sent upstream for it (Upstream), and of the agent's latest request only
// its length and the hash of its element hashes (all the next turn needs
// to tell whether the agent's history only grew).
type prefixTrack struct {
	First    uint32       `json:"first"`
	AgentLen int          `json:"agent_len"`
	AgentSum uint64       `json:"agent_sum"`
	Upstream packedHashes `json:"upstream"`
}

// packedHashes is element hashes, kept as they are in memory (a turn
// compares with them, the memory store keeps them) and written in JSON as
// one string, the base64 of their little-endian bytes, so that a stored
// slot stays small and cheap to encode. Its elements are never changed in
// place once set.
type packedHashes []uint32

// MarshalJSON implements json.Marshaler.
func (h packedHashes) MarshalJSON() ([]byte, error) {
	return h.appendJSON(nil), nil
}

// appendJSON appends h's JSON string to dst.
func (h packedHashes) appendJSON(dst []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, hashBytes(h))
	return append(dst, '"')
}

// UnmarshalJSON implements json.Unmarshaler: a string that is not such an
// encoding reads as no hashes (the next turn then finds no break), any
// other JSON value is an error.
func (h *packedHashes) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*h = unpackHashes(s)
	return nil
}

// SlotVersion implements state.Slot.
func (s *PrefixState) SlotVersion() int { return PrefixSlotVersion }

// CloneSlot implements state.Slot. The copy shares the receiver's slices
// and map: nothing changes them in place (record builds new ones), so
// sharing is as good as a deep copy, and the store clones a session's
// slots up to three times per turn.
func (s *PrefixState) CloneSlot() state.Slot {
	return &PrefixState{Tracks: s.Tracks[:len(s.Tracks):len(s.Tracks)], Turns: s.Turns[:len(s.Turns):len(s.Turns)], Breaks: s.Breaks,
		storedTurns: s.storedTurns}
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

// PrefixOf returns the session's cache-integrity slot with its turns
// decoded: nil when it has none, an error when the stored slot cannot be
// read. The session keeps the slot as it was (its turns, if they came from
// a store, undecoded).
func PrefixOf(sess *state.Session) (*PrefixState, error) {
	st, err := prefixSlot(sess)
	if st == nil || err != nil || st.storedTurns == "" {
		return st, err
	}
	out := *st
	if err := out.decodeStoredTurns(); err != nil {
		return nil, fmt.Errorf("state: slot %q: %w", PrefixSlotName, err)
	}
	return &out, nil
}

// prefixSlot is the session's slot as the turn engine reads it: decoded
// into sess, but for its stored turns.
func prefixSlot(sess *state.Session) (*PrefixState, error) {
	return state.SlotAs(sess, PrefixSlotName, decodePrefixSlot)
}

// hashBytes is element hashes as little-endian bytes: what packedHashes
// encodes, and what the sums of a track (prefixTrack.AgentSum,
// PrefixTurn.Hash) are the xxhash64 of. On a little-endian machine it is
// h's own memory (no copy: a 1 MB history has a few thousand elements,
// hashed and compared on every turn); elsewhere a copy.
func hashBytes(h []uint32) []byte {
	if len(h) == 0 {
		return nil
	}
	if littleEndian {
		return unsafe.Slice((*byte)(unsafe.Pointer(&h[0])), 4*len(h))
	}
	raw := make([]byte, 4*len(h))
	for i, v := range h {
		binary.LittleEndian.PutUint32(raw[4*i:], v)
	}
	return raw
}

// littleEndian reports whether this machine stores a uint32 low byte
// first, as packedHashes encodes it.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// unpackHashes decodes packedHashes' string; nil when it is malformed or
// empty.
func unpackHashes(s string) packedHashes {
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(raw)%4 != 0 || len(raw) == 0 {
		return nil
	}
	out := make(packedHashes, len(raw)/4)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(raw[4*i:])
	}
	return out
}

// followed notes the turn's last upstream request (after follow-ups or
// continuations), whose conversation the next turn must extend.
func (c *prefixCheck) followed(key string, lastSent []byte) {
	var h rewrite.History
	rewrite.HashHistory(&h, lastSent, key)
	c.track.Upstream = h.Hashes // h is this call's
}

// prefixCheck is what Begin found for the turn and save records.
type prefixCheck struct {
	turn  PrefixTurn
	track prefixTrack // what the next turn of the conversation compares with
}

// PrefixMetrics is what a Metrics may also implement to count prefix
// breaks by cause (the proxy's Prometheus metrics do).
type PrefixMetrics interface {
	PrefixBreak(route, cause string)
}

// prefixJob is what a cache-integrity check reads, taken from the turn
// when Begin starts it: the check runs while the request is upstream, in a
// goroutine of its own, and must not touch what the turn goes on changing
// (the session, the codec, the call).
type prefixJob struct {
	body, sent []byte
	runs       []rewrite.CopyRun // how sent was made from body; nil: unknown
	key        string            // the codec's conversation member
	memo       historyMemoKey
	lineage    conv.BodyLineage
	prev       *PrefixState // the session's slot as loaded (nil: none)
	// replaced and dropped say whether the request edits replaced tool
	// results or left messages out.
	replaced, dropped bool
	route, requestID  string
	at                time.Time
	// agentIdx is body's index, as the codec parsed it (nil: none).
	agentIdx *jsonkit.Index
	// hold is the session's history memo entry when Begin took it (nil:
	// the check takes it); when sent was built in its buffer, the check
	// leaves it to the turn (Turn.held), which gives it back in
	// releaseSent.
	hold *sentHold
}

// startPrefix starts the turn's cache-integrity check (checkPrefix) in
// the background: nothing before the reply needs it, and it hashes the
// conversation (for a long history, the bytes past what the session's
// previous request shared with it, and one comparison of them), which
// pprof put at about a tenth of a 1 MB request's time. Its result is read
// through prefixResult, which waits for it; Settle waits for it too,
// before the request's body can be reused.
func (t *Turn) startPrefix(sess *state.Session, key string, hold *sentHold, replaced, dropped bool) {
	j := &prefixJob{body: t.body, sent: t.sent, key: key, memo: historyMemoKey{key: t.key, member: key},
		lineage: t.lineage(), replaced: replaced, dropped: dropped, hold: hold, agentIdx: t.agentIdx,
		route: t.call.Route, requestID: t.call.RequestID, at: t.e.now()}
	if cm, ok := t.codec.(rewrite.CopyMapper); ok {
		j.runs = slices.Clone(cm.CopyRuns(t.body, t.sent))
	}
	j.prev, _ = prefixSlot(sess) // decodes the slot into sess: here, not beside the turn
	done := make(chan struct{})
	t.prefixDone = done
	go func() {
		defer close(done)
		// Off the handler's goroutine no middleware recovers a panic: the
		// check is diagnostics, so the turn goes on without it (fail-open),
		// as the engine does for a failing hook.
		defer func() {
			if r := recover(); r != nil { // t.prefix stays nil: the check did not return
				t.e.metrics.HookFailed("cache_integrity")
				t.e.log.Error("cache-integrity check failed; the turn goes on without it",
					zap.String("request_id", j.requestID), zap.Any("panic", r))
			}
		}()
		t.prefix, t.held = t.e.checkPrefix(j)
	}()
}

// prefixResult is the turn's cache-integrity check, once it is done (nil:
// none).
func (t *Turn) prefixResult() *prefixCheck {
	t.Settle()
	return t.prefix
}

// Settle waits for the work Begin left running beside the request (the
// cache-integrity check, which reads the agent's body and the one sent
// upstream). Run waits for it before it saves; a caller that drops a turn
// without running it must call Settle before the request's body is reused.
// It may be called any number of times, from any goroutine.
func (t *Turn) Settle() {
	if t != nil && t.prefixDone != nil {
		<-t.prefixDone
	}
}

// checkPrefix compares a turn's conversations with the session's previous
// request of the same conversation.
//
// When the body sent was built in the memo entry's buffer (j.hold), the
// entry is returned as held, not put back: the turn gives it back once it
// is done with that body.
func (e *Engine) checkPrefix(j *prefixJob) (c *prefixCheck, held *historyRef) {
	var ref *historyRef
	var target *rewrite.BuildTarget
	if j.hold != nil {
		ref, target = j.hold.ref, j.hold.target
	} else {
		ref = e.history.take(j.memo)
	}
	ref = hashHistories(j.body, j.sent, j.runs, j.key, ref, j.lineage, target, j.agentIdx)
	// The hashes are the ref's: read them all before the ref goes back to
	// the memo, where the session's next request extends them in place.
	if j.hold.built() {
		held = ref
	} else {
		defer e.history.put(j.memo, ref)
	}
	agent, up := &ref.agentHist, &ref.sentHist
	if len(agent.Hashes) == 0 {
		return nil, held
	}
	// Each conversation's hashes as bytes (their own memory): summed,
	// and (the agent's) summed again up to the previous request's length.
	// The track keeps a copy of the upstream ones: the ref's are extended
	// in place by the session's next request.
	agentRaw, upRaw := hashBytes(agent.Hashes), hashBytes(up.Hashes)
	c = &prefixCheck{track: prefixTrack{First: agent.Hashes[0], AgentLen: len(agent.Hashes),
		AgentSum: xxhash.Sum64(agentRaw), Upstream: slices.Clone(up.Hashes)}}
	c.turn = PrefixTurn{At: j.at, RequestID: j.requestID, Hash: hex16(xxhash.Sum64(upRaw)),
		Elements: len(up.Hashes), BreakOffset: -1, BreakElement: -1}
	tr := j.prev.track(agent.Hashes[0])
	if tr == nil {
		c.turn.First = true
		return c, held
	}
	k := firstDiff(tr.Upstream, up.Hashes)
	if k < 0 {
		return c, held
	}
	c.turn.BreakElement = k
	c.turn.BreakOffset = up.End
	if k < len(up.Starts) {
		c.turn.BreakOffset = up.Starts[k]
	}
	switch {
	case tr.AgentLen > len(agent.Hashes) || xxhash.Sum64(agentRaw[:4*tr.AgentLen]) != tr.AgentSum:
		c.turn.Cause = CauseClient
	case j.replaced:
		c.turn.Cause = CauseCompaction
	case j.dropped:
		c.turn.Cause = CauseGating
	default:
		c.turn.Cause = CauseProxy
	}
	if m, ok := e.metrics.(PrefixMetrics); ok {
		m.PrefixBreak(j.route, c.turn.Cause)
	}
	return c, held
}

// lineage is the agent body's lineage from its parse (zero without a view).
func (t *Turn) lineage() conv.BodyLineage {
	if t.view == nil {
		return conv.BodyLineage{}
	}
	return t.view.Lineage
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

// track is the conversation whose agent request began with first; nil when
// s is nil or follows no such conversation.
func (s *PrefixState) track(first uint32) *prefixTrack {
	if s == nil {
		return nil
	}
	for i := range s.Tracks {
		if s.Tracks[i].First == first {
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
	st := &PrefixState{} // the session's own: its slot may be shared (state.Slot)
	if cur, err := prefixSlot(sess); cur != nil && err == nil {
		*st = *cur
	}
	tracks := make([]prefixTrack, 0, maxPrefixTracks)
	tracks = append(tracks, c.track)
	for _, tr := range st.Tracks {
		if len(tracks) == maxPrefixTracks {
			break
		}
		if tr.First != c.track.First {
			tracks = append(tracks, tr)
		}
	}
	st.Tracks = tracks
	p := c.turn
	if u != nil {
		p.CacheReadTokens, p.CacheWriteTokens = u.usage.CacheReadTokens, u.usage.CacheWriteTokens
	}
	// New slices and map, never the old ones changed: clones share them
	// (CloneSlot).
	if !st.appendStoredTurn(&p) {
		keep := st.Turns[max(0, len(st.Turns)-(maxPrefixTurns-1)):]
		st.Turns = append(append(make([]PrefixTurn, 0, len(keep)+1), keep...), p)
	}
	if p.Cause != "" {
		breaks := make(map[string]int64, len(st.Breaks)+1)
		maps.Copy(breaks, st.Breaks)
		breaks[p.Cause]++
		st.Breaks = breaks
	}
	sess.SetSlot(PrefixSlotName, st)
}

// Prefix is the turn's cache-integrity record (cache tokens filled in once
// the turn's replies were read); ok is false when the turn kept none (a
// side request, an API without a conversation member, an empty one).
func (t *Turn) Prefix() (p PrefixTurn, ok bool) {
	c := t.prefixResult()
	if c == nil {
		return PrefixTurn{}, false
	}
	p = c.turn
	if a := t.spent(); a != nil {
		p.CacheReadTokens, p.CacheWriteTokens = a.usage.CacheReadTokens, a.usage.CacheWriteTokens
	}
	return p, true
}

// hex16 is v as 16 lowercase hex digits (fmt's %016x, without fmt).
func hex16(v uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return hex.EncodeToString(b[:])
}
