package turn

import (
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/shepherd-proxy/shepherd/state"
)

// The history memo keeps, per session, the previous request's bodies (the
// agent's and the one sent upstream, copied) with their conversation
// hashes (rewrite.History), so that the next request of the session, which
// resends that history and adds a few KB, hashes only what is new: the
// bytes it shares with the previous body are found by comparing them
// (rewrite.HashHistoryLike: memcmp, about 30 µs per MB), and the elements
// inside them take their offsets and hashes from the memo. A prefix is
// never trusted on a hash alone: the memo's bodies are the engine's own
// immutable copies and the shared part is compared byte for byte, so a
// request that changed anything in its history is hashed from the first
// byte that differs, exactly as without the memo.
//
// Memory is bounded in bytes (the two bodies of each entry), least recently
// used first out; an entry larger than a quarter of the budget is not kept.

// historyMemoKey is a session's conversation: sessions may hold several
// (a main agent and its subagents); the memo keeps the latest one seen.
type historyMemoKey struct {
	key    state.Key
	member string
}

// historyRef is one request's bodies and hashes. Immutable once stored.
type historyRef struct {
	agent, sent         []byte
	agentHist, sentHist rewrite.History
	// agentGen names agent's bytes (conv.BodyLineage.Gen of the request
	// it copies; 0: unknown).
	agentGen uint64
	// sentRuns says how sent was made from agent (rewrite.CopyRun); nil:
	// unknown, or sent is agent.
	sentRuns []rewrite.CopyRun
}

func (r *historyRef) size() int64 {
	n := int64(cap(r.agent) + 12*(len(r.agentHist.Starts)+len(r.sentHist.Starts)) + 24*cap(r.sentRuns))
	if !rewrite.SameSlice(r.agent, r.sent) {
		n += int64(cap(r.sent))
	}
	return n
}

// historyMemo is safe for concurrent use; a nil *historyMemo keeps nothing.
type historyMemo struct {
	refs *rewrite.TakeMemo[historyMemoKey, *historyRef]
}

// newHistoryMemo returns a memo of up to budget bytes; nil when budget <= 0.
func newHistoryMemo(budget int64) *historyMemo {
	if budget <= 0 {
		return nil
	}
	return &historyMemo{rewrite.NewTakeMemo[historyMemoKey](budget, (*historyRef).size)}
}

// take removes the session's latest ref from the memo and returns it (nil:
// none): the caller owns its buffers and recycles them (hashHistories), so
// a concurrent request of the same session finds none and hashes its
// bodies whole.
func (m *historyMemo) take(k historyMemoKey) *historyRef {
	if m == nil {
		return nil
	}
	r, _ := m.refs.Take(k)
	return r
}

// put makes r the session's latest ref, evicting the least recently used
// entries beyond the budget.
func (m *historyMemo) put(k historyMemoKey, r *historyRef) {
	if m == nil {
		return
	}
	m.refs.Put(k, r)
}

// hashHistories hashes the conversation member key of the agent's body
// and of the body sent upstream, reusing what ref (the session's previous
// request, taken from the memo; nil: none) hashed of the bytes they share
// with it, and returns the ref for the next request: copies of both bodies
// (one when they are the same bytes) with their hashes (agentHist,
// sentHist: the caller reads this request's hashes there, and must be done
// with them before it puts the ref in the memo, where the next request of
// the session takes it and extends them in place). The copies and the
// hashes recycle ref's buffers: the bytes and elements shared with ref are
// already there, so only the rest is copied or hashed. lin is body's
// lineage: when the index memo compared body with the very bytes ref
// copied (lin.Prev is ref's agentGen), the length they share is
// lin.Shared, and body is not compared with ref's copy again. runs says
// how sent was made from body (nil: unknown): with ref's, the bytes sent
// shares with ref's sent body are found by comparing only what the two
// turns' edits wrote (rewrite.SharedPrefix), not the whole history a
// second time. built, when its Built is set, says sent was built in ref's
// sent buffer (rewrite.BuildTarget): it shares its first built.Kept bytes
// with ref's sent body, whose bytes past those are gone, and it becomes
// the next ref's sent body as it is. agentIdx is body's index when the
// codec has it (nil: none): without ref, body's elements are hashed where
// it says they lie, and sent's like body's, instead of walking a body
// whole.
func hashHistories(body, sent []byte, runs []rewrite.CopyRun, key string, ref *historyRef, lin conv.BodyLineage, built *rewrite.BuildTarget, agentIdx *jsonkit.Index) *historyRef {
	next := historyRef{agentGen: lin.Gen}
	if rewrite.SameSlice(body, sent) || !rewrite.ValidCopyRuns(runs, len(sent), len(body)) {
		runs = nil
	}
	if ref == nil {
		// Without agentIdx, HashHistoryIndexed walks body: one body is
		// walked and the other hashed like it, as ever.
		rewrite.HashHistoryIndexed(&next.agentHist, body, key, agentIdx)
		rewrite.HashHistoryLike(&next.sentHist, sent, key, &next.agentHist, body)
		next.agent = rewrite.CopyForGrowth(body)
		if rewrite.SameSlice(body, sent) {
			next.sent = next.agent
		} else {
			next.sent = rewrite.CopyForGrowth(sent)
		}
	} else {
		na, compared := ref.sharedWith(body, lin)
		if !compared {
			na = rewrite.CommonPrefix(body, ref.agent)
		}
		// ref is ours (taken): its hashes are extended, and its buffers
		// overwritten past the shared bytes, in place.
		next.sentHist, next.agentHist = ref.sentHist, ref.agentHist
		inPlace := built != nil && built.Built
		ns := na
		if inPlace {
			// ref's sent body is gone past Kept; the build checked its
			// closing bracket before it wrote.
			ns = built.Kept
			rewrite.HashHistoryKnown(&next.sentHist, sent, key, &next.sentHist, ns)
		} else {
			if !rewrite.SameSlice(body, sent) || !rewrite.SameSlice(ref.agent, ref.sent) {
				ns = sharedSent(body, sent, runs, ref, na)
			}
			rewrite.HashHistoryShared(&next.sentHist, sent, key, &next.sentHist, ref.sent, ns)
		}
		rewrite.HashHistoryShared(&next.agentHist, body, key, &next.agentHist, ref.agent, na)
		sentBuf := ref.sent
		if rewrite.SameSlice(ref.agent, ref.sent) {
			sentBuf = nil // one buffer for both: the agent's copy reuses it
		}
		next.agent = append(ref.agent[:na], body[na:]...)
		if rewrite.SameSlice(body, sent) {
			next.sent = next.agent
		} else if inPlace {
			next.sent = sent
		} else if sentBuf != nil {
			next.sent = append(sentBuf[:ns], sent[ns:]...)
		} else {
			next.sent = rewrite.CopyForGrowth(sent)
		}
	}
	if runs != nil {
		var buf []rewrite.CopyRun
		if ref != nil {
			buf = ref.sentRuns[:0] // ref is ours: its runs are done with
		}
		next.sentRuns = append(buf, runs...)
	}
	return &next
}

// sharedWith is how many bytes body shares with r's agent body, as the
// index memo compared them (lin: body's lineage); ok is false when the
// memo did not compare body with the very bytes r's agent body copies.
func (r *historyRef) sharedWith(body []byte, lin conv.BodyLineage) (n int, ok bool) {
	if lin.Prev == 0 || lin.Prev != r.agentGen || lin.Shared > min(len(body), len(r.agent)) {
		return 0, false
	}
	return lin.Shared, true
}

// sharedSent is the length of the prefix sent shares with ref's sent body,
// given that body shares its first na bytes with ref's agent body and
// runs (nil: unknown) says how sent was made from body.
func sharedSent(body, sent []byte, runs []rewrite.CopyRun, ref *historyRef, na int) int {
	refRuns := ref.sentRuns
	if rewrite.SameSlice(ref.agent, ref.sent) {
		refRuns = identityRun(len(ref.agent))
	}
	if rewrite.SameSlice(body, sent) {
		runs = identityRun(len(body))
	}
	if runs == nil || refRuns == nil {
		return rewrite.CommonPrefix(sent, ref.sent)
	}
	return rewrite.SharedPrefix(sent, ref.sent, runs, refRuns, na)
}

// identityRun is the copy run of a body sent as it is; nil when empty.
func identityRun(n int) []rewrite.CopyRun {
	if n == 0 {
		return nil
	}
	return []rewrite.CopyRun{{Len: n}}
}
