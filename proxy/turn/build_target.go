package turn

import "github.com/shepherd-proxy/shepherd/rewrite"

// buildTargetMin is the smallest agent body whose upstream body is built
// in the buffer of the session's previous one (rewrite.BuildTarget): below
// it, copying the body costs less than a few microseconds.
const buildTargetMin = 32 << 10

// sentHold is the session's history memo entry while a turn builds its
// upstream body in that entry's sent buffer (rewrite.BuildTarget). The
// entry leaves the memo when Begin takes it, before the build, and goes
// back only once the turn is done with the body it sent (releaseSent): a
// concurrent request of the session finds no entry and builds its own
// body, and nothing can overwrite a body still on its way upstream.
type sentHold struct {
	ref    *historyRef
	target *rewrite.BuildTarget // nil: the ref is used only by the check
}

// offerTarget takes the session's history memo entry for the turn's
// conversation and, when the entry's sent body can take this turn's,
// offers its buffer to the codec's last edit. The entry is the turn's
// until the check has it (startPrefix) or Begin gives it back
// (dropHold). Nothing is taken for a short body, a codec that cannot
// build in place, or a body the index memo did not compare with the
// entry's agent body (conv.BodyLineage).
func (t *Turn) offerTarget() *sentHold {
	bt, ok := t.codec.(rewrite.BuildTargeter)
	if !ok || len(t.body) < buildTargetMin || t.e.history == nil {
		return nil
	}
	ref := t.e.history.take(historyMemoKey{key: t.key, member: t.prefixKey})
	if ref == nil {
		return nil
	}
	h := &sentHold{ref: ref}
	shared, compared := ref.sharedWith(t.body, t.lineage())
	if !compared || rewrite.SameSlice(ref.agent, ref.sent) || ref.sentRuns == nil || !ref.sentHist.ClosedIn(ref.sent) {
		return h // the check still takes it: no second look-up
	}
	h.target = &rewrite.BuildTarget{Prev: ref.sent, PrevRuns: ref.sentRuns, Agent: t.body, Shared: shared}
	bt.BuildInto(h.target)
	return h
}

// built reports whether the turn's upstream body is in the held entry's
// buffer.
func (h *sentHold) built() bool {
	return h != nil && h.target != nil && h.target.Built
}

// dropHold gives the entry back to the memo when a turn ends in Begin
// (a failed build): unless the build overwrote its sent body, which then
// no longer matches its hashes, and is left to the collector.
func (t *Turn) dropHold(h *sentHold) {
	if h != nil && !h.built() {
		t.e.history.put(historyMemoKey{key: t.key, member: t.prefixKey}, h.ref)
	}
}
