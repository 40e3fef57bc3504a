package responses

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/tidwall/gjson"
)

// This file holds the Responses StreamSplicer. Events are edited in place:
// only the top-level sequence_number and output_index values (and, in the
// final terminal event, the response member) are spliced, every other byte
// of an event is kept. The agent sees one rising sequence_number sequence,
// starting where the first stream's started, and output_index values
// counting the output items it was shown, across all streams of the turn.
//
// The events that close the reply's last text (output_text.done,
// content_part.done and its message's output_item.done) are held until
// another block starts, Release writes a call, or Next, Finish or an error
// closes the text; they are numbered when written, so a stream that is not
// continued reaches the agent byte for byte, only its close events later.
// A continuation (Continue) moves its first message's text onto the held
// text's item (item_id, output_index, content_index), through a SeamFilter,
// and the held events are rewritten to repeat the merged text.

// Event types the splicer treats specially.
const (
	respEvCreated    = "response.created"
	respEvInProgress = "response.in_progress"
	respEvQueued     = "response.queued"
	respEvCompleted  = "response.completed"
	respEvIncomplete = "response.incomplete"
	respEvFailed     = "response.failed"
	respEvError      = "error"
	respEvItemAdded  = "response.output_item.added"
	respEvItemDone   = "response.output_item.done"
	respEvArgsPrefix = "response.function_call_arguments."
	// respEvInputPrefix starts the events of a custom tool call's input
	// (…delta, …done).
	respEvInputPrefix = "response.custom_tool_call_input."
	// The events of a message's content parts.
	respEvPartAdded  = "response.content_part.added"
	respEvPartDone   = "response.content_part.done"
	respEvTextDelta  = "response.output_text.delta"
	respEvTextDone   = "response.output_text.done"
	respEvTextPrefix = "response.output_text."
	respEvPartPrefix = "response.content_part."
)

// respHeld is an event kept for later: owned copies of its bytes.
type respHeld struct {
	raw, name, data []byte
	typ             string // the event type, for the held close events of an open text
	bare            bool   // a data-less event, written as it is
	counted         bool   // a bare event that counts in Events (not a comment)
}

// holdEvent copies ev for later use, into the splicer's arena.
func (s *responsesSplicer) holdEvent(ev *rewrite.Event) respHeld {
	return respHeld{raw: s.arena.Keep(ev.Raw), name: s.arena.Keep(ev.Name), data: s.arena.Keep(ev.Data)}
}

// respItemState is one output item of a stream, keyed by its upstream
// output_index.
type respItemState struct {
	call  bool       // a function_call or custom_tool_call: its events are held until Release
	agent int        // the output_index the agent sees; -1 until shown
	held  []respHeld // held events of a call
	item  []byte     // the item JSON of its latest output_item.added/done
	drop  bool       // a continuation's reasoning item: its events are dropped
	merge bool       // a continuation's message, merged into the open text's message
	// edit is what continuations added to this shown message (nil when
	// none continued it).
	edit *respTextEdit
}

// respStream is one upstream stream of the turn.
type respStream struct {
	items    map[int64]*respItemState
	order    []int64          // upstream indices, first seen first
	ids      map[string]int64 // item id -> upstream index
	seen     []int64          // upstream indices in the order the agent was shown them
	done     bool             // terminal event (or error) arrived
	reply    []byte           // the terminal event's response (nil after an error event)
	term     respHeld         // held response.completed/incomplete
	released bool
	remove   []int
	first    []int
	cont     bool // a continuation (Continue) rather than a follow-up
}

func newRespStream() *respStream {
	return &respStream{items: map[int64]*respItemState{}, ids: map[string]int64{}}
}

type responsesSplicer struct {
	fields   respFields    // the event Feed is taking (feedEvent)
	fedData  []byte        // that event's payload, which fields were read from
	streams  []*respStream // the current one last
	nextSeq  int64         // the next sequence_number the agent gets
	seqInit  bool          // nextSeq is fixed (first numbered event seen or sent)
	nextOut  int           // the next output_index the agent gets
	events   int
	crlf     bool // the upstream frames events with CRLF (for synthesized events)
	framed   bool // crlf was determined
	failed   bool // an error event or response.failed was forwarded
	finished bool
	doneRaw  []byte // a held data: [DONE] event, re-sent after the terminal event
	followID string // the id of the latest follow-up response
	open     *respOpen
	pending  []byte // events rendered (numbered) but not written yet: they go first

	watch   rewrite.CallWatch // the tool calls' observer (observe.go)
	scratch respScratch       // emitRewrite's buffers
	arena   rewrite.Arena     // the held events' bytes
}

var _ rewrite.ContinueSplicer = (*responsesSplicer)(nil)

func newResponsesSplicer() *responsesSplicer {
	return &responsesSplicer{streams: []*respStream{newRespStream()}}
}

func (s *responsesSplicer) cur() *respStream { return s.streams[len(s.streams)-1] }

// respFields are the top-level members of an event payload the splicer
// reads.
type respFields struct {
	typ, seq, out, itemID, item, response gjson.Result
	// Members only continuations edit; dupEdit is set when one repeats.
	content, delta, text, part gjson.Result
	dupEdit                    bool
}

// parseRespFields parses an event payload. A payload that is not a JSON
// object, or that repeats a member the splicer edits or routes by, is an
// error (decoders disagree on which duplicate wins).
func parseRespFields(data []byte) (respFields, error) {
	var f respFields
	return f, parseRespFieldsInto(data, &f)
}

// parseRespFieldsInto is parseRespFields into f (which must be zero).
func parseRespFieldsInto(data []byte, f *respFields) error {
	root, err := rewrite.ParseReplyRoot(data)
	if err != nil {
		return err
	}
	return readRespFields(&root, f)
}

// readRespFields is parseRespFields of a payload whose root object is root
// (f must be zero). It reads the members with jsonkit.EachMember, not
// gjson's ForEach, which parses every number as a float on the way (its
// stack, under a streamed turn's reading chain, is what Feed must spare):
// the numbers the splicer reads, it reads from their Raw (respInt).
func readRespFields(root *gjson.Result, f *respFields) error {
	var dup string
	raw := root.Raw
	jsonkit.EachMember(raw, strings.IndexByte(raw, '{'), func(key string, start, end int) bool {
		var dst *gjson.Result
		switch key {
		case "type":
			dst = &f.typ
		case "sequence_number":
			dst = &f.seq
		case "output_index":
			dst = &f.out
		case "item_id":
			dst = &f.itemID
		case "item":
			dst = &f.item
		case "response":
			dst = &f.response
		case "content_index", "delta", "text", "part":
			var e *gjson.Result
			switch key {
			case "content_index":
				e = &f.content
			case "delta":
				e = &f.delta
			case "text":
				e = &f.text
			default:
				e = &f.part
			}
			if e.Exists() {
				f.dupEdit = true
			} else {
				*e = jsonkit.ValueAtRaw(raw[start:end], root.Index, start)
			}
			return true
		default:
			return true
		}
		if dst.Exists() {
			dup = key
			return false
		}
		*dst = jsonkit.ValueAtRaw(raw[start:end], root.Index, start)
		return true
	})
	if dup != "" {
		return fmt.Errorf("%w: event repeats %q", rewrite.ErrMalformedReply, dup)
	}
	return nil
}

// respInt reads a non-negative integer that fits comfortably in an int.
func respInt(r gjson.Result) (int64, bool) {
	if r.Type != gjson.Number {
		return 0, false
	}
	v, err := strconv.ParseInt(r.Raw, 10, 64)
	if err != nil || v < 0 || v > 1<<40 {
		return 0, false
	}
	return v, true
}

func (s *responsesSplicer) Done() bool { return s.cur().done }

func (s *responsesSplicer) Events() int { return s.events }

func (s *responsesSplicer) Feed(ev *rewrite.Event) ([]byte, error) {
	if s.finished {
		return nil, errors.New("rewrite: Feed after Finish")
	}
	s.reserve(len(ev.Raw), len(ev.Data))
	b, err := s.feed(ev)
	if err != nil {
		return nil, err
	}
	return s.out(b), nil
}

// reserve grows the scratch emitRewrite renders an event in (respScratch)
// to fit an event of raw bytes with a payload of data bytes, renumbered.
// It runs here, with only Feed's callers below it: grown deep under
// feedEvent, a buffer now and then takes the allocator's slow path, over a
// kilobyte deep, on top of a streamed turn's reading chain, and the
// stream's goroutine keeps the larger stack that took for its whole life.
//
//go:noinline
func (s *responsesSplicer) reserve(raw, data int) {
	const digits = 24 // a renumbered member's new value, and then some
	sc := &s.scratch
	if cap(sc.event) < raw+digits {
		sc.event = make([]byte, 0, raw+raw/4+digits)
	}
	if cap(sc.data) < data+digits {
		sc.data = make([]byte, 0, data+data/4+digits)
	}
	if cap(sc.edits) == 0 {
		sc.edits = make([]respEdit, 0, 8) // at most eight members are edited
		sc.seq = make([]byte, 0, digits)
		sc.out = make([]byte, 0, digits)
	}
}

// out returns b after the events rendered earlier and not written yet.
func (s *responsesSplicer) out(b []byte) []byte {
	if len(s.pending) == 0 {
		return b
	}
	p := s.pending
	s.pending = nil
	return append(p, b...)
}

// feed handles one upstream event: data-less events and [DONE]
// (feedDataless), response-level events (feedResponseEvent), then item
// events routed to their item's state (itemFor, feedItem).
func (s *responsesSplicer) feed(ev *rewrite.Event) ([]byte, error) {
	s.fedData = nil
	if !s.framed && len(ev.Raw) > 0 {
		s.framed, s.crlf = true, bytes.Contains(ev.Raw, []byte("\r\n"))
	}
	if s.events > 0 || len(s.streams) > 1 {
		ev.Raw = bytes.TrimPrefix(ev.Raw, rewrite.BOM) // a follow-up's BOM is not the agent stream's start
	}
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 || bytes.Equal(data, rewrite.DoneData) {
		return s.feedDataless(ev, len(data) == 0), nil
	}
	// Validated here, not under feedEvent's frame: the validator recurses
	// once per level of nesting.
	root, err := rewrite.ParseReplyRoot(ev.Data)
	if err != nil {
		return nil, err
	}
	return s.feedEvent(ev, &root)
}

// feedEvent takes an event whose payload's root object is root. Its fields
// are read into the splicer (s.fields), not into this frame: a streamed
// turn's goroutine runs Feed on top of its whole reading chain, and ten
// gjson.Results here would grow every stream's stack past its first 4 KB.
//
//go:noinline
func (s *responsesSplicer) feedEvent(ev *rewrite.Event, root *gjson.Result) ([]byte, error) {
	f := &s.fields
	*f = respFields{}
	if err := readRespFields(root, f); err != nil {
		return nil, err
	}
	s.fedData = ev.Data
	st := s.cur()
	if !s.seqInit && len(s.streams) == 1 && f.seq.Exists() {
		s.seqInit = true
		if v, ok := respInt(f.seq); ok {
			s.nextSeq = v
		}
	}
	typ := f.typ.Str
	if f.typ.Type != gjson.String {
		typ = string(ev.Name)
	}
	if b, handled, err := s.feedResponseEvent(st, typ, f, ev); handled {
		return b, err
	}

	// Item events are routed by output_index (or, lacking it, item_id).
	var idx int64
	switch {
	case f.out.Exists():
		v, ok := respInt(f.out)
		if !ok {
			return nil, fmt.Errorf("%w: bad output_index %s", rewrite.ErrMalformedReply, f.out.Raw)
		}
		idx = v
	case f.itemID.Type == gjson.String:
		v, ok := st.ids[f.itemID.Str]
		if !ok {
			s.breakOpen()
			return s.emit(ev.Raw, ev.Name, ev.Data, -1)
		}
		idx = v
	default:
		s.breakOpen()
		return s.emit(ev.Raw, ev.Name, ev.Data, -1) // unknown or item-less event
	}
	return s.feedItem(st, s.itemFor(st, idx, typ, f), idx, typ, f, ev)
}

// feedDataless handles an event without data (bare: comments, pings) or
// data [DONE].
func (s *responsesSplicer) feedDataless(ev *rewrite.Event, bare bool) []byte {
	if bare {
		// Comments, pings without data: pass (on the stream that holds
		// close events, behind them, keeping the order of its events).
		h := respHeld{raw: bytes.Clone(ev.Raw), bare: true, counted: !ev.IsComment()}
		if o := s.open; o != nil && len(o.held) > 0 && o.st == s.cur() {
			o.held = append(o.held, h)
			return nil
		}
		return s.writeBare(h)
	}
	if s.failed {
		s.events++
		return respCompleteEvent(bytes.Clone(ev.Raw))
	}
	s.doneRaw = respCompleteEvent(bytes.Clone(ev.Raw)) // sent after the terminal event
	return nil
}

// feedResponseEvent handles the response-level events of stream st
// (created, in progress, queued, completed, incomplete, failed, error);
// handled is false for any other event.
func (s *responsesSplicer) feedResponseEvent(st *respStream, typ string, f *respFields, ev *rewrite.Event) (b []byte, handled bool, err error) {
	switch typ {
	case respEvCreated, respEvInProgress, respEvQueued:
		if len(s.streams) > 1 {
			if id := jsonkit.Member(f.response, "id"); id.Type == gjson.String {
				s.followID = jsonkit.OwnedString(id)
			}
			return nil, true, nil
		}
		s.breakOpen()
		b, err = s.emit(ev.Raw, ev.Name, ev.Data, -1)
		return b, true, err
	case respEvCompleted, respEvIncomplete:
		if st.done {
			return nil, true, fmt.Errorf("%w: second terminal event %q", rewrite.ErrMalformedReply, typ)
		}
		if !f.response.IsObject() {
			return nil, true, fmt.Errorf("%w: %s without a response object", rewrite.ErrMalformedReply, typ)
		}
		st.reply = st.buildReply(f.response)
		st.term = s.holdEvent(ev)
		st.done = true
		s.flushSeam() // the continuation's text ended with its stream
		return nil, true, nil
	case respEvFailed, respEvError:
		if st.done {
			return nil, true, fmt.Errorf("%w: %q after the terminal event", rewrite.ErrMalformedReply, typ)
		}
		if typ == respEvFailed && f.response.IsObject() {
			st.reply = []byte(f.response.Raw)
		}
		st.done, s.failed = true, true
		s.closeOpen()
		b, err = s.emit(ev.Raw, ev.Name, ev.Data, -1)
		return b, true, err
	}
	return nil, false, nil
}

// itemFor returns the state of output item idx of stream st, creating it
// on the item's first event (a call, a dropped reasoning item of a
// continuation, or a message merged into the open text), and records the
// item's body and id from output_item events.
func (s *responsesSplicer) itemFor(st *respStream, idx int64, typ string, f *respFields) *respItemState {
	it := st.items[idx]
	if it == nil {
		call := strings.HasPrefix(typ, respEvArgsPrefix) || strings.HasPrefix(typ, respEvInputPrefix) ||
			(typ == respEvItemAdded || typ == respEvItemDone) && responsesCallType(jsonkit.Member(f.item, "type").Str)
		it = &respItemState{call: call, agent: -1}
		if st.cont && !call {
			if respReasoningEvent(typ, f.item) {
				it.drop = true
			} else if o := s.open; o != nil && o.m == nil && o.filter != nil && respMessageEvent(typ, f.item) {
				it.merge, o.m = true, it
			}
		}
		st.items[idx] = it
		st.order = append(st.order, idx)
	}
	if (typ == respEvItemAdded || typ == respEvItemDone) && f.item.IsObject() {
		it.item = []byte(f.item.Raw)
		if id := jsonkit.Member(f.item, "id"); id.Type == gjson.String {
			st.ids[id.Str] = idx
		}
	}
	return it
}

// feedItem handles an event of output item it (index idx of stream st):
// dropped, merged into the open text, held (a call until the engine
// decides), or emitted at the item's index in the agent's stream.
func (s *responsesSplicer) feedItem(st *respStream, it *respItemState, idx int64, typ string, f *respFields, ev *rewrite.Event) ([]byte, error) {
	switch {
	case it.drop:
		return nil, nil
	case it.merge:
		return s.feedMerge(it, typ, f, ev)
	case it.call:
		if s.watch.On() {
			s.watchItem(idx, typ, f, ev)
		}
		if it.agent >= 0 {
			return s.emit(ev.Raw, ev.Name, ev.Data, it.agent) // a late event of a released call
		}
		if st.released {
			return nil, nil // a late event of a removed call
		}
		it.held = append(it.held, s.holdEvent(ev))
		return nil, nil
	}
	if o := s.open; o != nil {
		if o.st != st || o.key != idx {
			s.closeOpen() // another block follows the text
		} else {
			switch o.feed(typ, f) {
			case respHold:
				h := s.holdEvent(ev)
				h.typ = strings.Clone(typ) // typ aliases the event's bytes
				o.held = append(o.held, h)
				return nil, nil
			case respClose:
				s.closeOpen()
			}
		}
	}
	if it.agent < 0 {
		it.agent = s.nextOut
		s.nextOut++
		st.seen = append(st.seen, idx)
	}
	b, err := s.emit(ev.Raw, ev.Name, ev.Data, it.agent)
	if err != nil {
		return nil, err
	}
	if s.open == nil {
		s.open = newRespOpen(st, idx, it, typ, f)
	}
	return b, nil
}

// writeBare returns a data-less event as it is.
func (s *responsesSplicer) writeBare(h respHeld) []byte {
	if h.counted {
		s.events++
	}
	return respCompleteEvent(h.raw)
}

// respReasoningEvent reports whether an event of a new item is a reasoning
// item's.
func respReasoningEvent(typ string, item gjson.Result) bool {
	if typ == respEvItemAdded || typ == respEvItemDone {
		return jsonkit.Member(item, "type").Str == "reasoning"
	}
	return strings.HasPrefix(typ, "response.reasoning")
}

// respMessageEvent reports whether an event of a new item is a message's.
func respMessageEvent(typ string, item gjson.Result) bool {
	if typ == respEvItemAdded || typ == respEvItemDone {
		return jsonkit.Member(item, "type").Str == "message"
	}
	return strings.HasPrefix(typ, respEvTextPrefix) || strings.HasPrefix(typ, respEvPartPrefix) ||
		strings.HasPrefix(typ, "response.refusal.")
}

// buildReply returns the reply body of a terminal response: the response
// object itself, or, when its output is missing or empty although items
// were streamed, the response with the streamed items as output.
func (st *respStream) buildReply(resp gjson.Result) []byte {
	body := []byte(resp.Raw)
	if out := resp.Get("output"); (out.IsArray() && rewrite.OpenAIInnerString(out) != "") || len(st.order) == 0 {
		return body
	}
	order := slices.Clone(st.order)
	slices.Sort(order)
	var items [][]byte
	for _, idx := range order {
		if it := st.items[idx]; it.item != nil {
			items = append(items, it.item)
		}
	}
	if len(items) == 0 {
		return body
	}
	root, ok := jsonkit.RootObject(jsonkit.UnsafeString(body))
	if !ok {
		return body
	}
	return jsonkit.SetMember(body, root, "output", rewrite.Enclose('[', rewrite.OpenAIJoin(items), ']'))
}

// emit returns one event renumbered for the agent: sequence_number set to
// the next number when present, output_index set to out when out >= 0 and
// the event has one.
func (s *responsesSplicer) emit(raw, name, data []byte, out int) ([]byte, error) {
	return s.emitRewrite(raw, name, data, out, nil)
}

// respRewrite lists more members of an event to replace (each when the
// event has it and the value is not nil): a continuation's events are moved
// onto the message they continue.
type respRewrite struct {
	itemID, content, delta, text, part, item []byte
}

// emitRewrite is emit with the members of rw replaced too.
//
// A streamed turn's goroutine runs it under its whole reading chain, for
// nearly every event: its frame holds no respFields and no gjson.Result
// (the payload's members are read into the splicer, by emitFields, and the
// edits name their spans), so that the stack of a stream that waits
// between events stays at its first 4 KB.
func (s *responsesSplicer) emitRewrite(raw, name, data []byte, out int, rw *respRewrite) ([]byte, error) {
	f, err := s.emitFields(data)
	if err != nil {
		return nil, err
	}
	if rw != nil && f.dupEdit {
		return nil, fmt.Errorf("%w: event repeats a member to edit", rewrite.ErrMalformedReply)
	}
	// The edits, their numbers and the rendered payload and event live in
	// the splicer's scratch (respScratch): the result is valid until the
	// next emit, and every caller writes or copies it before that.
	sc := &s.scratch
	edits := sc.edits[:0]
	if f.seq.Exists() {
		s.seqInit = true
		sc.seq = strconv.AppendInt(sc.seq[:0], s.nextSeq, 10)
		edits = appendRespEdit(edits, &f.seq, sc.seq)
		s.nextSeq++
	}
	if out >= 0 {
		sc.out = strconv.AppendInt(sc.out[:0], int64(out), 10)
		edits = appendRespEdit(edits, &f.out, sc.out)
	}
	if rw != nil {
		edits = rw.appendEdits(edits, f)
	}
	sc.edits = edits
	s.events++
	newData := data // unless an edit changes it
	if d := appendRespEdits(sc.data[:0], data, edits); d != nil {
		sc.data, newData = d, d
	}
	return s.reframeInto(&sc.event, raw, name, data, newData), nil
}

// emitFields returns the members of an event payload that emitRewrite
// edits: the fields feedEvent read when data is the payload Feed is
// taking (the same bytes, not equal ones), else data's, read into the
// splicer's scratch. Either stays valid until the next emit or Feed.
//
//go:noinline
func (s *responsesSplicer) emitFields(data []byte) (*respFields, error) {
	if len(data) > 0 && len(data) == len(s.fedData) && &data[0] == &s.fedData[0] {
		return &s.fields, nil
	}
	f := &s.scratch.fields
	*f = respFields{}
	if err := parseRespFieldsInto(data, f); err != nil {
		return nil, err
	}
	return f, nil
}

// appendEdits adds the edits of rw's members that the payload whose
// fields are f has.
func (rw *respRewrite) appendEdits(edits []respEdit, f *respFields) []respEdit {
	edits = appendRespEdit(edits, &f.itemID, rw.itemID)
	edits = appendRespEdit(edits, &f.content, rw.content)
	edits = appendRespEdit(edits, &f.delta, rw.delta)
	edits = appendRespEdit(edits, &f.text, rw.text)
	edits = appendRespEdit(edits, &f.part, rw.part)
	return appendRespEdit(edits, &f.item, rw.item)
}

// respScratch holds the buffers emitRewrite renders one event with, reused
// from event to event so that forwarding an event allocates nothing.
type respScratch struct {
	fields   respFields // the payload's members, when not the fed event's
	edits    []respEdit
	seq, out []byte // sequence_number, output_index
	data     []byte // the edited payload
	event    []byte // the event as the agent gets it
}

// appendRespEdit adds the edit of at to val when the event has at and val
// is set.
func appendRespEdit(edits []respEdit, at *gjson.Result, val []byte) []respEdit {
	if val != nil && at.Exists() {
		edits = append(edits, respEdit{start: at.Index, end: jsonkit.ValueEnd(*at), old: at.Raw, val: val})
	}
	return edits
}

// respEdit replaces one value of a payload: the bytes old, at
// [start, end).
type respEdit struct {
	start, end int
	old        string
	val        []byte
}

// applyRespEdits returns data with each edit's value replaced (data itself
// if nothing changes).
func applyRespEdits(data []byte, edits []respEdit) []byte {
	if out := appendRespEdits(nil, data, edits); out != nil {
		return out
	}
	return data
}

// appendRespEdits appends data with each edit's value replaced to dst, or
// returns nil when no edit changes anything.
func appendRespEdits(dst, data []byte, edits []respEdit) []byte {
	sortRespEdits(edits)
	changed := false
	for i := range edits {
		if edits[i].old != jsonkit.UnsafeString(edits[i].val) {
			changed = true
		}
	}
	if !changed {
		return nil
	}
	out := dst
	if out == nil {
		out = make([]byte, 0, len(data)+16)
	}
	pos := 0
	for i := range edits {
		e := &edits[i]
		if e.start < pos || e.end > len(data) {
			continue // cannot happen for distinct top-level members
		}
		out = append(out, data[pos:e.start]...)
		out = append(out, e.val...)
		pos = e.end
	}
	return append(out, data[pos:]...)
}

// sortRespEdits orders edits by their offset in the payload (an insertion
// sort: there are at most eight, and a sort with a closure would allocate).
func sortRespEdits(edits []respEdit) {
	for i := 1; i < len(edits); i++ {
		for j := i; j > 0 && edits[j].start < edits[j-1].start; j-- {
			edits[j], edits[j-1] = edits[j-1], edits[j]
		}
	}
}

// reframe returns the event raw with its data replaced by newData, keeping
// every other byte when the event has a single data line and newData fits
// on one line; otherwise the event is written anew (name and data lines,
// in the upstream's line ending).
func (s *responsesSplicer) reframe(raw, name, oldData, newData []byte) []byte {
	return s.reframeInto(nil, raw, name, oldData, newData)
}

// reframeInto is reframe rendering into *buf (reused; a fresh slice when
// buf is nil).
func (s *responsesSplicer) reframeInto(buf *[]byte, raw, name, oldData, newData []byte) []byte {
	var dst []byte
	if buf != nil {
		dst = (*buf)[:0]
	}
	if raw != nil {
		if bytes.Equal(oldData, newData) {
			dst = respCompleteEvent(append(dst, raw...))
			if buf != nil {
				*buf = dst
			}
			return dst
		}
		if bytes.IndexAny(newData, "\r\n") < 0 {
			if a, b, ok := respSingleDataLine(raw); ok && bytes.Equal(raw[a:b], oldData) {
				dst = append(append(append(dst, raw[:a]...), newData...), raw[b:]...)
				dst = respCompleteEvent(dst)
				if buf != nil {
					*buf = dst
				}
				return dst
			}
		}
	}
	crlf := s.crlf
	if raw != nil {
		crlf = bytes.Contains(raw, []byte("\r\n"))
	}
	b := rewrite.AppendEvent(nil, name, newData)
	if crlf {
		b = bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n"))
	}
	return b
}

// respCompleteEvent returns raw ending in the blank line that ends an SSE
// event, appending line endings to an event cut at the end of a stream (so
// it cannot run into the next event the agent gets).
func respCompleteEvent(raw []byte) []byte {
	if len(raw) == 0 {
		return raw
	}
	eol := "\n"
	if bytes.Contains(raw, []byte("\r\n")) {
		eol = "\r\n"
	}
	rest, ok := respCutEOL(raw)
	switch {
	case !ok:
		return append(raw, eol+eol...)
	case len(rest) == 0:
		return raw
	}
	if _, ok := respCutEOL(rest); !ok {
		return append(raw, eol...)
	}
	return raw
}

// respCutEOL strips one line ending from the end of b.
func respCutEOL(b []byte) ([]byte, bool) {
	switch {
	case bytes.HasSuffix(b, []byte("\r\n")):
		return b[:len(b)-2], true
	case bytes.HasSuffix(b, []byte("\n")), bytes.HasSuffix(b, []byte("\r")):
		return b[:len(b)-1], true
	}
	return b, false
}

// respSingleDataLine returns the span of the value of raw's only data line.
func respSingleDataLine(raw []byte) (start, stop int, ok bool) {
	n := 0
	for i := 0; i < len(raw); {
		j := i
		for j < len(raw) && raw[j] != '\n' && raw[j] != '\r' {
			j++
		}
		line := raw[i:j]
		if bytes.HasPrefix(line, []byte("data")) && (len(line) == 4 || line[4] == ':') {
			n++
			v := i + 4
			if v < j {
				v++ // the colon
				if v < j && raw[v] == ' ' {
					v++
				}
			}
			start, stop = v, j
		}
		if j < len(raw) && raw[j] == '\r' && j+1 < len(raw) && raw[j+1] == '\n' {
			j++
		}
		i = j + 1
	}
	return start, stop, n == 1
}

func (s *responsesSplicer) Reply() ([]byte, error) {
	st := s.cur()
	if !st.done {
		return nil, fmt.Errorf("%w: stream has no terminal event", rewrite.ErrMalformedReply)
	}
	if st.reply == nil {
		return nil, fmt.Errorf("%w: stream ended with an error event", rewrite.ErrMalformedReply)
	}
	return st.reply, nil
}

func (s *responsesSplicer) Release(remove, first []int) ([]byte, error) {
	if s.finished {
		return nil, errors.New("rewrite: Release after Finish")
	}
	st := s.cur()
	if st.released {
		return nil, errors.New("rewrite: Release called twice for one stream")
	}
	if s.failed {
		st.released = true
		return s.out(nil), nil
	}
	s.flushSeam() // the stream is over: its text too
	var out []byte
	if !st.done || st.reply == nil {
		if len(remove) > 0 || len(first) > 0 {
			return nil, fmt.Errorf("%w: cannot edit the tool calls of an unfinished stream", rewrite.ErrMalformedReply)
		}
		order := slices.Clone(st.order)
		slices.Sort(order)
		for _, idx := range order {
			b, err := s.releaseItem(st, idx, gjson.Result{})
			if err != nil {
				return nil, err
			}
			out = append(out, b...)
		}
		st.released = true
		return s.out(out), nil
	}
	root, err := rewrite.ParseReplyRoot(st.reply)
	if err != nil {
		return nil, err
	}
	elems := rewrite.BlocksElems(root.Get("output"))
	var calls []int // output positions of the call items, as ParseReply numbers them
	for i, it := range elems {
		if responsesCallType(it.Get("type").Str) {
			calls = append(calls, i)
		}
	}
	plan, err := rewrite.OpenAICallOrder(len(calls), remove, first)
	if err != nil {
		return nil, err
	}
	for _, c := range plan {
		b, err := s.releaseItem(st, st.callKey(calls[c], elems[calls[c]]), elems[calls[c]])
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	st.released = true
	st.remove, st.first = slices.Clone(remove), slices.Clone(first)
	return s.out(out), nil
}

// callKey finds the streamed item of the call item at position pos of
// the terminal response's output: by item id, else by output_index; a
// position the stream used for another kind of item gives a fresh negative
// key (the call is then sent from the response's copy).
func (st *respStream) callKey(pos int, item gjson.Result) int64 {
	if id := item.Get("id"); id.Type == gjson.String {
		if k, ok := st.ids[id.Str]; ok && st.items[k].call {
			return k
		}
	}
	if it := st.items[int64(pos)]; it == nil || it.call {
		return int64(pos)
	}
	return -1 - int64(pos)
}

// shownItem returns the JSON of the item the agent was shown under key:
// its element in the terminal response's output (found by id, else by
// position when the kinds agree), else the item of its last
// output_item.added/done event.
func (st *respStream) shownItem(key int64, elems []gjson.Result) []byte {
	it := st.items[key]
	if it == nil {
		return nil
	}
	if it.edit != nil {
		return it.edit.apply(st.shownBase(it, key, elems))
	}
	return st.shownBase(it, key, elems)
}

// shownBase is shownItem before the edits of continuations.
func (st *respStream) shownBase(it *respItemState, key int64, elems []gjson.Result) []byte {
	if id := gjson.GetBytes(it.item, "id"); id.Type == gjson.String {
		for _, e := range elems {
			if e.IsObject() && e.Get("id").Str == id.Str {
				return []byte(e.Raw)
			}
		}
	}
	if key >= 0 && key < int64(len(elems)) && elems[key].IsObject() &&
		responsesCallType(elems[key].Get("type").Str) == it.call {
		return []byte(elems[key].Raw)
	}
	return it.item
}

// releaseItem sends the held events of the call at upstream index idx under
// the next output_index. A call the stream never showed (it is only in the
// terminal response) is sent as output_item.added and .done events built
// from item.
func (s *responsesSplicer) releaseItem(st *respStream, idx int64, item gjson.Result) ([]byte, error) {
	it := st.items[idx]
	if it != nil && (!it.call || it.agent >= 0) {
		return nil, nil // already shown
	}
	if it == nil {
		if !item.IsObject() {
			return nil, nil
		}
		it = &respItemState{call: true, agent: -1, item: []byte(item.Raw)}
		for _, typ := range []string{respEvItemAdded, respEvItemDone} {
			d := []byte(`{"type":"` + typ + `","sequence_number":0,"output_index":0,"item":`)
			d = append(append(d, item.Raw...), '}')
			it.held = append(it.held, respHeld{name: []byte(typ), data: d})
		}
		st.items[idx] = it
		st.order = append(st.order, idx)
	}
	if !it.call {
		return nil, nil
	}
	s.closeOpen() // the call follows the text: its close events go first
	it.agent = s.nextOut
	s.nextOut++
	st.seen = append(st.seen, idx)
	var out []byte
	for _, h := range it.held {
		b, err := s.emit(h.raw, h.name, h.data, it.agent)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	it.held = nil
	return out, nil
}

// Next closes the open text (its held close events are written first by
// the next call that writes) and starts a follow-up.
func (s *responsesSplicer) Next() {
	if s.finished {
		return
	}
	s.closeOpen()
	s.streams = append(s.streams, newRespStream())
}

func (s *responsesSplicer) Finish() ([]byte, error) {
	if s.finished {
		return nil, nil
	}
	var out []byte
	if st := s.cur(); !st.released && !s.failed {
		b, err := s.Release(nil, nil)
		if err != nil {
			s.finished = true
			return nil, err
		}
		out = b
	}
	s.finished = true
	s.closeOpen()
	if s.failed {
		return append(out, s.out(nil)...), nil
	}
	merged, err := s.mergedResponse()
	if err != nil {
		return nil, err
	}
	term := s.cur().term
	f, err := parseRespFields(term.data)
	if err != nil {
		return nil, err
	}
	edits := appendRespEdit(nil, &f.response, merged)
	if f.seq.Exists() {
		edits = appendRespEdit(edits, &f.seq, strconv.AppendInt(nil, s.nextSeq, 10))
		s.nextSeq++
	}
	s.events++
	out = append(out, s.out(s.reframe(term.raw, term.name, term.data, applyRespEdits(term.data, edits)))...)
	if s.doneRaw != nil {
		s.events++
		out = append(out, s.doneRaw...)
	}
	return out, nil
}

// mergedResponse returns MergeReplies (ContinueReply for a continuation)
// over every stream's reply as EditReply left it, with output holding
// exactly the items the agent was shown, in the order it was shown them,
// continued messages with what continuations added.
func (s *responsesSplicer) mergedResponse() ([]byte, error) {
	var merged []byte
	var shown [][]byte
	for i, st := range s.streams {
		if !st.done || st.reply == nil {
			return nil, fmt.Errorf("%w: stream %d has no terminal event", rewrite.ErrMalformedReply, i)
		}
		edited, err := responsesCodec{}.EditReply(st.reply, st.remove, st.first)
		if err != nil {
			return nil, err
		}
		switch {
		case merged == nil:
			merged = edited
		case st.cont:
			if merged, err = (responsesCodec{}).ContinueReply(merged, edited); err != nil {
				return nil, err
			}
		default:
			if merged, err = (responsesCodec{}).MergeReplies(merged, edited); err != nil {
				return nil, err
			}
		}
		root, err := rewrite.ParseReplyRoot(st.reply)
		if err != nil {
			return nil, err
		}
		elems := rewrite.BlocksElems(root.Get("output"))
		for _, key := range st.seen {
			if b := st.shownItem(key, elems); b != nil {
				shown = append(shown, b)
			}
		}
	}
	root, err := rewrite.ParseReplyRoot(merged)
	if err != nil {
		return nil, err
	}
	out := root.Get("output")
	elems := rewrite.BlocksElems(out)
	same := out.IsArray() && len(elems) == len(shown)
	for i := 0; same && i < len(elems); i++ {
		same = elems[i].Raw == string(shown[i])
	}
	if !same {
		merged = jsonkit.SetMember(merged, root, "output", rewrite.Enclose('[', rewrite.OpenAIJoin(shown), ']'))
	}
	if len(s.streams) > 1 && s.followID != "" {
		// A follow-up whose terminal response lacks an id: the agent must
		// still continue from the follow-up.
		if root, ok := jsonkit.RootObject(jsonkit.UnsafeString(merged)); ok && root.Get("id").Type != gjson.String {
			merged = jsonkit.SetMember(merged, root, "id", jsonkit.Quote(s.followID))
		}
	}
	return merged, nil
}

// respOpen is the reply's last text block while a continuation may still
// extend it: the output_text part content of the shown message item key of
// stream st. Its close events (output_text.done, content_part.done and the
// message's output_item.done) are held from the moment they arrive until
// another block starts, Release writes a call, or Next, Finish or an error
// closes it; a data-less event arriving behind them waits with them.
type respOpen struct {
	st       *respStream
	key      int64
	agent    int    // the message's output_index for the agent
	itemID   []byte // the message's id as a JSON string; nil when unknown
	content  int64  // the part's content_index (the agent's too)
	text     strings.Builder
	held     []respHeld
	itemDone bool          // the message's output_item.done is held
	edit     *respTextEdit // what continuations added; nil before the first

	// The current continuation (Continue).
	m          *respItemState // its message, merged into this one
	mText      int64          // m's text part (content_index); -1 until seen
	filter     *rewrite.SeamFilter
	tmpl       respHeld // the last delta event whose text the filter kept
	hasTmpl    bool
	extra      map[int64]respExtraPart // m's other parts by content_index
	nextPart   int64                   // the agent's content_index for the next one
	textClosed bool                    // a part follows the text: it is final
}

// respExtraPart is a part of a continuation's message other than its text,
// appended to the continued message.
type respExtraPart struct {
	agent int64 // its content_index for the agent
	pos   int   // its place in edit.extra
}

// newRespOpen opens the reply's last text block when ev, just shown, starts
// or extends an output_text part; nil otherwise.
func newRespOpen(st *respStream, key int64, it *respItemState, typ string, f *respFields) *respOpen {
	ci, ok := respInt(f.content)
	if !ok || it.call || it.agent < 0 {
		return nil
	}
	switch {
	case typ == respEvPartAdded && jsonkit.Member(f.part, "type").Str == "output_text":
	case typ == respEvTextDelta && f.delta.Type == gjson.String:
	default:
		return nil
	}
	o := &respOpen{st: st, key: key, agent: it.agent, content: ci, mText: -1}
	item := gjson.Result{Type: gjson.JSON, Raw: jsonkit.UnsafeString(it.item)}
	switch id := jsonkit.Member(item, "id"); {
	case f.itemID.Type == gjson.String:
		o.itemID = []byte(f.itemID.Raw)
	case id.Type == gjson.String:
		o.itemID = []byte(id.Raw)
	}
	if typ == respEvTextDelta {
		o.text.WriteString(f.delta.Str)
	}
	return o
}

// respAction is what to do with an event of the open text's message.
type respAction int

const (
	respPass  respAction = iota // send it; the text stays open
	respHold                    // hold it: a close event of the text
	respClose                   // close the text first, then send it
)

func (o *respOpen) feed(typ string, f *respFields) respAction {
	ci, ok := respInt(f.content)
	part := ok && ci == o.content
	if !o.itemDone {
		switch typ {
		case respEvTextDone:
			if part {
				if f.text.Type == gjson.String {
					o.text.Reset()
					o.text.WriteString(f.text.Str)
				}
				return respHold
			}
		case respEvPartDone:
			if part {
				return respHold
			}
		case respEvItemDone:
			o.itemDone = true
			return respHold
		}
	}
	if len(o.held) > 0 || typ == respEvPartAdded || (f.content.Exists() && !part) {
		return respClose
	}
	if typ == respEvTextDelta && part {
		o.text.WriteString(f.delta.Str)
	}
	return respPass
}

// breakOpen closes the open text when the current stream holds its close
// events: an event that belongs to no block is sent after them, as the
// stream ordered them. (A continuation's such events pass before them.)
func (s *responsesSplicer) breakOpen() {
	if o := s.open; o != nil && len(o.held) > 0 && o.st == s.cur() {
		s.closeOpen()
	}
}

// closeOpen renders the open text's held events into pending, rewritten
// with what continuations added; the text can no longer be extended.
func (s *responsesSplicer) closeOpen() {
	o := s.open
	if o == nil {
		return
	}
	s.flushSeam()
	s.open = nil
	s.writeHeld(o, o.held)
	o.held = nil
}

// writeHeld renders held events of o into pending.
func (s *responsesSplicer) writeHeld(o *respOpen, held []respHeld) {
	for _, h := range held {
		if h.bare {
			s.pending = append(s.pending, s.writeBare(h)...)
			continue
		}
		b, err := s.emitRewrite(h.raw, h.name, h.data, o.agent, o.closeRewrite(h))
		if err != nil {
			continue // cannot happen: the event was parsed when it was held
		}
		s.pending = append(s.pending, b...)
	}
}

// closeRewrite returns the edits of a held close event that carry what
// continuations added: the text of output_text.done, the part of
// content_part.done and the item of output_item.done.
func (o *respOpen) closeRewrite(h respHeld) *respRewrite {
	if o.edit.empty() {
		return nil
	}
	f, err := parseRespFields(h.data)
	if err != nil {
		return nil
	}
	rw := &respRewrite{}
	added := o.edit.added.String()
	switch h.typ {
	case respEvTextDone:
		if added != "" && f.text.Type == gjson.String {
			rw.text = jsonkit.AppendToString([]byte(f.text.Raw), gjson.Result{Type: gjson.String, Raw: f.text.Raw}, added)
		}
	case respEvPartDone:
		if added != "" && f.part.IsObject() {
			part := []byte(f.part.Raw)
			if root, ok := jsonkit.RootObject(jsonkit.UnsafeString(part)); ok {
				if t := root.Get("text"); t.Type == gjson.String {
					rw.part = jsonkit.AppendToString(part, t, added)
				}
			}
		}
	case respEvItemDone:
		if f.item.IsObject() {
			rw.item = o.edit.apply([]byte(f.item.Raw))
		}
	}
	return rw
}

// flushPartCloses renders the held close events of the open text's part
// (not its message's): a part of a continuation's message follows it.
func (s *responsesSplicer) flushPartCloses(o *respOpen) {
	var now, keep []respHeld
	for _, h := range o.held {
		if h.typ == respEvTextDone || h.typ == respEvPartDone {
			now = append(now, h)
		} else {
			keep = append(keep, h)
		}
	}
	s.writeHeld(o, now)
	o.held = keep
}

// flushSeam decides the seam of the current continuation with the text
// its filter still holds, rendering that text into pending as a delta of
// the open text.
func (s *responsesSplicer) flushSeam() {
	o := s.open
	if o == nil || o.filter == nil {
		return
	}
	if rest := o.filter.Flush(); rest != "" && o.hasTmpl {
		b, err := s.emitMerged(o, o.tmpl.raw, o.tmpl.name, o.tmpl.data, rest)
		if err == nil {
			s.pending = append(s.pending, b...)
		}
	}
	o.hasTmpl, o.tmpl = false, respHeld{}
}

// emitMerged returns a continuation's text delta event as a delta of the
// open text carrying delta.
func (s *responsesSplicer) emitMerged(o *respOpen, raw, name, data []byte, delta string) ([]byte, error) {
	b, err := s.emitRewrite(raw, name, data, o.agent, &respRewrite{
		itemID: o.itemID, content: strconv.AppendInt(nil, o.content, 10), delta: jsonkit.Quote(delta)})
	if err != nil {
		return nil, err
	}
	o.text.WriteString(delta)
	o.edit.added.WriteString(delta)
	return b, nil
}

// feedMerge takes an event of the continuation's message m, merged into
// the open text's message: its added event and its text part's start and
// close events are dropped, its text deltas pass through the seam filter
// as deltas of the open text, its other parts become parts of the open
// text's message after the text, and its output_item.done gives its status
// to the message.
func (s *responsesSplicer) feedMerge(m *respItemState, typ string, f *respFields, ev *rewrite.Event) ([]byte, error) {
	o := s.open
	if o == nil || o.m != m {
		return nil, nil // the text it continued was closed
	}
	if f.dupEdit {
		return nil, fmt.Errorf("%w: event repeats a member to edit", rewrite.ErrMalformedReply)
	}
	ci, hasCI := respInt(f.content)
	switch typ {
	case respEvItemAdded:
		return nil, nil
	case respEvItemDone:
		s.mergeItemDone(o, f)
		return nil, nil
	case respEvPartAdded:
		if s.mergePartAdded(o, f, ci, hasCI) {
			return nil, nil
		}
	case respEvPartDone:
		if hasCI && ci == o.mText {
			s.flushSeam()
			return nil, nil
		}
		if x, ok := o.extra[ci]; ok && hasCI && f.part.IsObject() {
			o.edit.extra[x.pos] = []byte(f.part.Raw)
		}
	case respEvTextDone:
		if hasCI && ci == o.mText {
			s.flushSeam()
			return nil, nil
		}
	case respEvTextDelta:
		if hasCI && o.mText < 0 && !o.textClosed {
			o.mText = ci // a text part that came without its added event
		}
		if hasCI && ci == o.mText {
			if o.textClosed || f.delta.Type != gjson.String {
				return nil, nil
			}
			out := o.filter.Write(f.delta.Str)
			if out == "" {
				if !o.filter.Decided() {
					o.tmpl, o.hasTmpl = s.holdEvent(ev), true
				}
				return nil, nil
			}
			o.hasTmpl, o.tmpl = false, respHeld{}
			return s.emitMerged(o, ev.Raw, ev.Name, ev.Data, out)
		}
	}
	if !f.content.Exists() {
		// An event of the message itself.
		return s.emitRewrite(ev.Raw, ev.Name, ev.Data, o.agent, &respRewrite{itemID: o.itemID})
	}
	x, ok := o.extra[ci]
	if !ok || !hasCI {
		return nil, nil // another event of the merged text part (its offsets are m's)
	}
	return s.emitRewrite(ev.Raw, ev.Name, ev.Data, o.agent, &respRewrite{
		itemID: o.itemID, content: strconv.AppendInt(nil, x.agent, 10)})
}

// mergeItemDone takes the merged message's output_item.done: its status
// and its extra parts as they finally are go to the open text's message.
func (s *responsesSplicer) mergeItemDone(o *respOpen, f *respFields) {
	s.flushSeam()
	if st := jsonkit.Member(f.item, "status"); st.Type == gjson.String {
		o.edit.status = []byte(st.Raw)
	}
	parts := rewrite.BlocksElems(jsonkit.Member(f.item, "content"))
	for mi, x := range o.extra {
		if mi < int64(len(parts)) && parts[mi].IsObject() {
			o.edit.extra[x.pos] = []byte(parts[mi].Raw)
		}
	}
	if o.textClosed {
		s.closeOpen() // the message ends with another part
	}
}

// mergePartAdded takes a content_part.added of the merged message (content
// index ci): its first output_text part becomes the merged text, and any
// other new part an extra part of the open text's message, closing the
// text. It reports whether the event is consumed (nothing to emit).
func (s *responsesSplicer) mergePartAdded(o *respOpen, f *respFields, ci int64, hasCI bool) (consumed bool) {
	if !hasCI {
		return true
	}
	if o.mText < 0 && !o.textClosed && jsonkit.Member(f.part, "type").Str == "output_text" {
		o.mText = ci
		return true
	}
	if _, ok := o.extra[ci]; !ok && ci != o.mText {
		s.flushSeam()
		s.flushPartCloses(o)
		o.textClosed = true
		o.extra[ci] = respExtraPart{agent: o.nextPart, pos: len(o.edit.extra)}
		o.nextPart++
		part := []byte("{}")
		if f.part.IsObject() {
			part = []byte(f.part.Raw)
		}
		o.edit.extra = append(o.edit.extra, part)
	}
	return false
}

// Continue starts a continuation stream: its first message continues the
// open text (the reply's last output_text part, whose close events are
// still held), the seam de-duplicated; its reasoning items are dropped; its
// other items follow like a follow-up's. With no open text it is Next
// with reasoning dropped.
func (s *responsesSplicer) Continue() {
	if s.finished {
		return
	}
	o := s.open
	if o == nil || o.textClosed || s.failed {
		s.Next()
		s.cur().cont = true
		return
	}
	s.flushSeam()
	if o.edit == nil {
		o.edit = &respTextEdit{content: int(o.content)}
		if it := o.st.items[o.key]; it != nil {
			it.edit = o.edit
		}
	}
	o.filter = rewrite.NewSeamFilter(o.text.String())
	o.m, o.mText, o.hasTmpl, o.tmpl = nil, -1, false, respHeld{}
	o.extra, o.nextPart = map[int64]respExtraPart{}, o.content+1
	st := newRespStream()
	st.cont = true
	s.streams = append(s.streams, st)
}
