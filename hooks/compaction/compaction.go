package compaction

import (
	"context"
	"maps"
	"time"

	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// Options configure the hook (Config.Provision builds them from the
// configuration section). A zero TriggerTokens or ItemChars takes the
// default; TotalChars and KeepRecent may be 0.
type Options struct {
	Scope         hooks.Scope
	TriggerTokens int
	ItemChars     int
	TotalChars    int
	KeepRecent    int
	Note          string
	// Events is the live feed context.compacted goes to (nil: none).
	Events events.Emitter
	// Log gets one info line per epoch (nil: none).
	Log *zap.Logger
	// Metrics count epochs, results and characters (nil: none).
	Metrics *metrics
	// Now is the clock of events (tests); default time.Now.
	Now func() time.Time
}

// minSavingShare: an epoch starts only when it saves at least
// 1/minSavingShare of the trigger (in estimated tokens). Each epoch breaks
// the prompt cache's prefix at its first compacted result; an epoch that
// would save little (one result aged since the last) costs more in cache
// writes than it saves (bench/README.md, "Compaction and the prompt
// cache"), so the epoch waits until more results have aged.
const minSavingShare = 4

// Hook is evidence compaction. On every request it acts on, it replays the
// compacted texts the session's earlier epochs stored, byte for byte, onto
// the results they compacted (found by their message's anchor). When the
// request's estimated size, with those, passes the trigger and compacting
// the old results not yet compacted (Options) saves at least a quarter of
// the trigger, it starts a new epoch: it compacts them, most
// relevant to the latest user message first, and stores their texts with
// the turn (Call.Defer), so the model's view changes at the epoch's request
// and stays append-only until the next one.
//
// Hook keeps no state of its own: the epochs live in the session's slot
// (State). It is safe for concurrent use.
type Hook struct{ cfg Options }

var _ hooks.RequestHook = (*Hook)(nil)

// New builds the hook.
func New(cfg Options) *Hook {
	if cfg.TriggerTokens <= 0 {
		cfg.TriggerTokens = DefaultTriggerTokens
	}
	if cfg.ItemChars <= 0 {
		cfg.ItemChars = DefaultItemChars
	}
	if cfg.Note == "" {
		cfg.Note = DefaultNote
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Hook{cfg: cfg}
}

// Name implements hooks.Hook.
func (h *Hook) Name() string { return Name }

// OnRequest replays the stored epochs and, past the trigger, starts a new
// one. Side requests and requests the scope leaves out are not touched.
func (h *Hook) OnRequest(_ context.Context, call *hooks.Call, req *conv.Request) (conv.RequestEdits, *hooks.Response, error) {
	if call.Side != "" || !h.cfg.Scope.Active(call, Name) {
		return conv.RequestEdits{}, nil, nil
	}
	st, err := Of(call.Session)
	if err != nil {
		return conv.RequestEdits{}, nil, err
	}
	var anchors []string
	var edits conv.RequestEdits
	compacted := map[pos]int{}
	var stale []string
	if st != nil && len(st.Items) > 0 {
		anchors = req.Anchors()
		edits.ReplaceResults, stale = replay(st.Items, req.Messages, anchors, compacted)
	}
	before := estimateTokens(req, compacted)
	if before <= h.cfg.TriggerTokens {
		return edits, nil, nil
	}
	results := toolResults(req.Messages, compacted)
	cands := candidates(req.Messages, results, h.cfg.KeepRecent, h.cfg.ItemChars)
	minSaving := h.cfg.TriggerTokens / minSavingShare
	if upTo := candidateChars(cands) / charsPerToken; upTo < minSaving {
		// Even as bare stubs they would not save enough: skip the ranking.
		return edits, nil, nil
	}
	if anchors == nil {
		anchors = req.Anchors()
	}
	ep := h.epoch(req, cands, anchors)
	after := estimateTokens(req, withLens(compacted, ep.lens))
	if before-after < minSaving {
		// Not worth breaking the prompt cache's prefix for: wait until
		// more results have aged.
		return edits, nil, nil
	}
	edits.ReplaceResults = append(edits.ReplaceResults, ep.edits...)
	epoch := 1
	if st != nil {
		epoch = st.Epoch + 1
	}
	call.Defer(addEpoch(ep.items, stale))
	h.report(call, epoch, ep, before, after)
	return edits, nil, nil
}

// withLens returns the compacted lengths of a and b together (b wins).
func withLens(a, b map[pos]int) map[pos]int {
	out := make(map[pos]int, len(a)+len(b))
	maps.Copy(out, a)
	maps.Copy(out, b)
	return out
}

// replay finds each stored item's result in the view by its message's
// anchor and returns the edits that put its stored text back, recording
// the compacted lengths; items whose message is gone (or no longer holds a
// result at their block) are left out, and their anchors returned as stale
// when the message is gone.
func replay(items []Item, msgs []conv.Message, anchors []string, compacted map[pos]int) ([]conv.ResultEdit, []string) {
	at := make(map[string]int, len(anchors))
	for i, a := range anchors {
		at[a] = i
	}
	var edits []conv.ResultEdit
	var stale []string
	for _, it := range items {
		m, ok := at[it.Anchor]
		if !ok {
			stale = append(stale, it.Anchor)
			continue
		}
		if it.Block < 0 || it.Block >= len(msgs[m].Blocks) || msgs[m].Blocks[it.Block].Kind != conv.BlockToolResult {
			continue
		}
		edits = append(edits, conv.ResultEdit{Msg: m, Block: it.Block, Text: it.Text})
		compacted[pos{m, it.Block}] = len([]rune(it.Text))
	}
	return edits, stale
}

// epochPlan is what one epoch compacts.
type epochPlan struct {
	edits []conv.ResultEdit
	items []Item
	// lens are the compacted lengths by position.
	lens          map[pos]int
	kept, omitted int
}

// epoch compacts cands: ranked against the latest user message, cut within
// the budgets, each with its note.
func (h *Hook) epoch(req *conv.Request, cands []result, anchors []string) epochPlan {
	texts := make([]string, len(cands))
	for i, c := range cands {
		texts[i] = req.Messages[c.msg].Blocks[c.block].Text
	}
	names := toolNames(req.Messages)
	p := plan(latestUserText(req.Messages), cands, texts, h.cfg.ItemChars, h.cfg.TotalChars)
	ep := epochPlan{lens: make(map[pos]int, len(p))}
	for i, c := range p {
		blk := &req.Messages[c.msg].Blocks[c.block]
		tool := blk.ToolName
		if tool == "" {
			tool = names[blk.ToolCallID]
		}
		out := compact(texts[i], c.keep, h.cfg.Note, tool)
		ep.edits = append(ep.edits, conv.ResultEdit{Msg: c.msg, Block: c.block, Text: out.text})
		ep.items = append(ep.items, Item{Anchor: anchors[c.msg], Block: c.block, CallID: blk.ToolCallID, Text: out.text})
		ep.lens[pos{c.msg, c.block}] = len([]rune(out.text))
		ep.kept += out.kept
		ep.omitted += out.omitted
	}
	return ep
}

// report emits context.compacted, counts the epoch and logs it.
func (h *Hook) report(call *hooks.Call, epoch int, ep epochPlan, before, after int) {
	if m := h.cfg.Metrics; m != nil {
		m.epochs.Inc()
		m.results.Add(float64(len(ep.items)))
		m.omitted.Add(float64(ep.omitted))
	}
	if h.cfg.Events != nil {
		h.cfg.Events.Emit(events.Event{
			Type: events.ContextCompacted, At: h.cfg.Now(), Session: call.SessionID, Tenant: call.Tenant,
			Route: call.Route, RequestID: call.RequestID,
			Data: map[string]any{
				"epoch": epoch, "results": len(ep.items), "kept_chars": ep.kept, "omitted_chars": ep.omitted,
				"estimated_tokens_before": before, "estimated_tokens_after": after,
			},
		})
	}
	if h.cfg.Log != nil {
		h.cfg.Log.Info("compaction epoch", zap.String("request_id", call.RequestID), zap.String("route", call.Route),
			zap.String("session", call.SessionID), zap.Int("epoch", epoch), zap.Int("results", len(ep.items)),
			zap.Int("kept_chars", ep.kept), zap.Int("omitted_chars", ep.omitted),
			zap.Int("estimated_tokens_before", before), zap.Int("estimated_tokens_after", after))
	}
}
