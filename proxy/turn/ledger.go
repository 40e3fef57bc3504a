package turn

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/state"
)

// maxLedgerEntries bounds a session's ledger; the oldest entries go first.
// Unmatched entries are kept (another conversation may share the session id,
// e.g. a sub-agent), so the bound is what keeps the ledger finite.
const maxLedgerEntries = 512

// replayStats counts what a replay did, for metrics.
type replayStats struct {
	applied, missed, unreadable int
}

// replayLedger rebuilds the model's view of the conversation in body (the
// agent's copy, whose messages have anchors) from the session's ledger.
// Entries are matched by anchor; an entry whose anchor is not in the
// conversation is a miss (history edited or compacted, or another
// conversation) and is skipped, as is an entry of an unknown record version
// (unreadable). Edits are applied from the last message to the first so
// earlier positions stay valid. root is the conversation's first anchor
// (rootAnchor of the view's anchors, before any reshaping): an entry
// recorded in a conversation with another first anchor cannot match and
// is counted missed without being looked for (a long session shares its
// ledger with its sub-agents' conversations, and each entry looked for in
// vain cost a pass over the anchors). An entry that says where its anchor
// is (LedgerEntry.At) is looked for there only: left is how many messages
// the reshape left out before the anchors given (their positions are At
// less left), and when it left none an entry whose anchor is not at its
// position is missed without a search (a conversation rewound to an
// earlier turn kept its later entries, and each cost a pass; once there
// were four, the finder built a map of every anchor, on every request).
//
// fresh, when not nil, is this request's own text for its newest user turn
// (the highest position): it is applied with the first run of user-text
// entries, in the same pass.
//
// With deferLast it leaves the last batch of user texts (the run after the
// newest turn entry; all of them when there is none) unapplied and returns
// it, for the request edits to make in the same copy of the body
// (rewrite.UserTextsEditor). Those count as applied.
func replayLedger(tc rewrite.TurnCodec, body []byte, anchors []string, left int, root string, ledger []state.LedgerEntry, fresh *rewrite.UserTexts, deferLast bool) ([]byte, []rewrite.UserTexts, replayStats, error) {
	var st replayStats
	if len(ledger) == 0 && fresh == nil {
		return body, nil, st, nil
	}
	find := anchorFinder(anchors)
	type op struct {
		pos   int
		order int // user text before turn at the same position is impossible; keep stable
		e     *state.LedgerEntry
	}
	ops := make([]op, 0, len(ledger))       // one allocation: a long session's ledger grew it a dozen times
	for i := len(ledger) - 1; i >= 0; i-- { // newest first: see anchorFinder
		if r := ledger[i].Root; r != "" && r != root {
			st.missed++
			continue
		}
		p := locate(&ledger[i], anchors, left, find)
		if p < 0 {
			st.missed++
			continue
		}
		ops = append(ops, op{pos: p, order: i, e: &ledger[i]})
	}
	// Descending (pos, order): entries are recorded in conversation order
	// and looked up newest first, so ops usually descend already (a
	// generic sort of a long session's ops through sort.SliceStable's
	// reflection cost a quarter of its begin: pprof,
	// BenchmarkBeginLongSession).
	descending := func(a, b op) int { return cmp.Or(cmp.Compare(b.pos, a.pos), cmp.Compare(b.order, a.order)) }
	if !slices.IsSortedFunc(ops, descending) {
		slices.SortFunc(ops, descending)
	}
	// Runs of user-text entries go to the codec as one batch (one pass over
	// the body instead of one per entry); a turn entry, which renumbers the
	// messages after it, ends a run. In descending order every position of
	// a run is still valid when the run is applied.
	out := body
	batch := make([]rewrite.UserTexts, 0, len(ops)+1)
	replayed := 0 // ledger entries in batch (fresh is not one)
	if fresh != nil {
		batch = append(batch, *fresh)
	}
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		var err error
		if out, err = tc.AppendUserTexts(out, batch); err != nil {
			return fmt.Errorf("turn: applying user text to %d turns: %w", len(batch), err)
		}
		st.applied += replayed
		batch, replayed = batch[:0], 0
		return nil
	}
	for _, o := range ops {
		var err error
		switch o.e.Kind {
		case kindUserText:
			var texts []string
			if texts, err = userTexts.decode(o.e.Data); err == nil {
				batch = append(batch, rewrite.UserTexts{Pos: o.pos, Texts: texts})
				replayed++
				continue
			}
		case kindTurn:
			var r turnRecord
			if r, err = decodeTurnRecord(o.e.Data); err == nil {
				if err = flush(); err != nil {
					return body, nil, st, err
				}
				out, err = replayTurn(tc, out, o.pos, &r)
			}
		default:
			st.missed++
			continue
		}
		if errors.Is(err, errRecordVersion) {
			st.unreadable++
			continue
		}
		if err != nil {
			return body, nil, st, fmt.Errorf("turn: replaying %s entry at message %d: %w", o.e.Kind, o.pos, err)
		}
		st.applied++
	}
	if deferLast && len(batch) > 0 {
		st.applied += replayed
		return out, batch, st, nil
	}
	if err := flush(); err != nil {
		return body, nil, st, err
	}
	return out, nil, st, nil
}

// locate is the position of e's anchor among anchors (the conversation
// with its first left messages left out), or -1: at the position e
// records when it does and the anchor is there; missing when it is not and
// no message was left out (an anchor can be nowhere else); else as find
// finds it.
func locate(e *state.LedgerEntry, anchors []string, left int, find func(string) int) int {
	if e.At > 0 {
		if p := e.At - 1 - left; p >= 0 && p < len(anchors) && anchors[p] == e.Anchor {
			return p
		}
		if left == 0 {
			return -1
		}
	}
	return find(e.Anchor)
}

// rootAnchor is the first of a conversation's anchors, "" when it has
// none: LedgerEntry.Root of the entries recorded in it.
func rootAnchor(anchors []string) string {
	if len(anchors) == 0 {
		return ""
	}
	return anchors[0]
}

// anchorFinder returns the position of an anchor among anchors, or -1.
// Anchors chain the digests of every message up to theirs, so a
// conversation holds each at most once (of equal ones, any may be found).
// It serves the entries recorded before LedgerEntry.At was, and those
// whose position moved because the reshape left messages out. The
// ledger's entries are appended as the conversation goes, and the
// replay looks them up newest first, so each lookup scans back from where
// the previous one was found, starting at the last anchor and wrapping
// around: a whole replay costs one pass over the anchors the ledger spans,
// from its oldest entry to the end. A ledger that spans only the latest
// turns of a long conversation (a session first seen in the middle of
// one, or whose oldest entries were dropped) costs those turns, where a
// scan from the first anchor cost the whole history (~6 µs per replay at
// 1,860 messages, BenchmarkAnchorFinder). Lookups out of order or missing
// cost a pass each; once the passes cost more than a map of the anchors
// would, the finder builds one (pprof: the map, built for every replay,
// was the replay's largest allocation, ~50 KB per request at 900
// messages).
func anchorFinder(anchors []string) func(string) int {
	n := len(anchors)
	cursor, budget := n-1, 4*n+64
	var pos map[string]int
	return func(a string) int {
		if pos != nil {
			if p, ok := pos[a]; ok {
				return p
			}
			return -1
		}
		found := -1
		k := 0
		for ; k < n; k++ {
			i := cursor - k
			if i < 0 {
				i += n
			}
			if anchors[i] == a {
				found = i
				break
			}
		}
		if found >= 0 {
			cursor = found - 1
			if cursor < 0 {
				cursor = n - 1
			}
		}
		if budget -= k + 1; budget < 0 {
			pos = make(map[string]int, n)
			for i, a := range anchors {
				pos[a] = i
			}
		}
		return found
	}
}

func replayTurn(tc rewrite.TurnCodec, body []byte, pos int, r *turnRecord) ([]byte, error) {
	items := make([][]byte, len(r.Items))
	for i, it := range r.Items {
		items[i] = []byte(it)
	}
	if ac, ok := tc.(rewrite.AgentCallIDs); ok {
		// The agent answers the calls it ran under the ids it gave them;
		// the replayed calls must carry those ids too.
		var err error
		if items, err = ac.AdoptAgentCallIDs(body, pos, items); err != nil {
			return nil, err
		}
	}
	out, err := tc.ReplaceMessages(body, pos, items)
	if err != nil {
		return nil, err
	}
	if len(r.Results) > 0 {
		out, err = tc.PrependToolResults(out, pos+r.Tail-1, r.Results)
	}
	return out, err
}

// appendLedger appends entries to a session's ledger, dropping the oldest
// beyond maxLedgerEntries. An entry with the same kind and anchor as an
// existing one replaces it (a retried request records the same turn again).
// The session's ledger array is shared with the store's other copies of it
// (state.Session.Ledger is copied on write): the entries go into a copy,
// made once, which becomes s's ledger.
func appendLedger(s *state.Session, entries []state.LedgerEntry) {
	if len(entries) == 0 {
		return
	}
	l := append(make([]state.LedgerEntry, 0, len(s.Ledger)+len(entries)), s.Ledger...)
	for _, e := range entries {
		replaced := false
		for i := range l {
			if l[i].Kind == e.Kind && l[i].Anchor == e.Anchor {
				l[i] = e
				replaced = true
				break
			}
		}
		if !replaced {
			l = append(l, e)
		}
	}
	if n := len(l) - maxLedgerEntries; n > 0 {
		l = append(l[:0], l[n:]...) // l is ours
	}
	s.Ledger = l
}
