package rewrite

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// This file holds the Responses StreamSplicer. Events are edited in place:
// only the top-level sequence_number and output_index values (and, in the
// final terminal event, the response member) are spliced, every other byte
// of an event is kept. The agent sees one rising sequence_number sequence,
// starting where the first stream's started, and output_index values
// counting the output items it was shown, across all streams of the turn.

func init() {
	splicerFactories[APIOpenAIResponses] = func() StreamSplicer { return newResponsesSplicer() }
}

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
)

// respHeld is an event kept for later: owned copies of its bytes.
type respHeld struct {
	raw, name, data []byte
}

func respHoldEvent(ev *Event) respHeld {
	return respHeld{raw: bytes.Clone(ev.Raw), name: bytes.Clone(ev.Name), data: bytes.Clone(ev.Data)}
}

// respItemState is one output item of a stream, keyed by its upstream
// output_index.
type respItemState struct {
	call  bool       // a function_call or custom_tool_call: its events are held until Release
	agent int        // the output_index the agent sees; -1 until shown
	held  []respHeld // held events of a call
	item  []byte     // the item JSON of its latest output_item.added/done
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
}

func newRespStream() *respStream {
	return &respStream{items: map[int64]*respItemState{}, ids: map[string]int64{}}
}

type responsesSplicer struct {
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
}

func newResponsesSplicer() *responsesSplicer {
	return &responsesSplicer{streams: []*respStream{newRespStream()}}
}

func (s *responsesSplicer) cur() *respStream { return s.streams[len(s.streams)-1] }

// respFields are the top-level members of an event payload the splicer
// reads.
type respFields struct {
	typ, seq, out, itemID, item, response gjson.Result
}

// parseRespFields parses an event payload. A payload that is not a JSON
// object, or that repeats a member the splicer edits or routes by, is an
// error (decoders disagree on which duplicate wins).
func parseRespFields(data []byte) (respFields, error) {
	var f respFields
	root, err := parseReplyRoot(data)
	if err != nil {
		return f, err
	}
	var dup string
	root.ForEach(func(k, v gjson.Result) bool {
		var dst *gjson.Result
		switch k.Str {
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
		default:
			return true
		}
		if dst.Exists() {
			dup = k.Str
			return false
		}
		*dst = v
		return true
	})
	if dup != "" {
		return f, fmt.Errorf("%w: event repeats %q", ErrMalformedReply, dup)
	}
	return f, nil
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

func (s *responsesSplicer) Feed(ev Event) ([]byte, error) {
	if s.finished {
		return nil, errors.New("rewrite: Feed after Finish")
	}
	if !s.framed && len(ev.Raw) > 0 {
		s.framed, s.crlf = true, bytes.Contains(ev.Raw, []byte("\r\n"))
	}
	if s.events > 0 || len(s.streams) > 1 {
		ev.Raw = bytes.TrimPrefix(ev.Raw, bom) // a follow-up's BOM is not the agent stream's start
	}
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 {
		// Comments, pings without data: pass.
		if !ev.IsComment() {
			s.events++
		}
		return respCompleteEvent(bytes.Clone(ev.Raw)), nil
	}
	if bytes.Equal(data, dataDone) {
		if s.failed {
			s.events++
			return respCompleteEvent(bytes.Clone(ev.Raw)), nil
		}
		s.doneRaw = respCompleteEvent(bytes.Clone(ev.Raw)) // sent after the terminal event
		return nil, nil
	}
	f, err := parseRespFields(ev.Data)
	if err != nil {
		return nil, err
	}
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
	switch typ {
	case respEvCreated, respEvInProgress, respEvQueued:
		if len(s.streams) > 1 {
			if id := f.response.Get("id"); id.Type == gjson.String {
				s.followID = id.Str
			}
			return nil, nil
		}
		return s.emit(ev.Raw, ev.Name, ev.Data, -1)
	case respEvCompleted, respEvIncomplete:
		if st.done {
			return nil, fmt.Errorf("%w: second terminal event %q", ErrMalformedReply, typ)
		}
		if !f.response.IsObject() {
			return nil, fmt.Errorf("%w: %s without a response object", ErrMalformedReply, typ)
		}
		st.reply = st.buildReply(f.response)
		st.term = respHoldEvent(&ev)
		st.done = true
		return nil, nil
	case respEvFailed, respEvError:
		if st.done {
			return nil, fmt.Errorf("%w: %q after the terminal event", ErrMalformedReply, typ)
		}
		if typ == respEvFailed && f.response.IsObject() {
			st.reply = []byte(f.response.Raw)
		}
		st.done, s.failed = true, true
		return s.emit(ev.Raw, ev.Name, ev.Data, -1)
	}

	// Item events are routed by output_index (or, lacking it, item_id).
	var idx int64
	switch {
	case f.out.Exists():
		v, ok := respInt(f.out)
		if !ok {
			return nil, fmt.Errorf("%w: bad output_index %s", ErrMalformedReply, f.out.Raw)
		}
		idx = v
	case f.itemID.Type == gjson.String:
		v, ok := st.ids[f.itemID.Str]
		if !ok {
			return s.emit(ev.Raw, ev.Name, ev.Data, -1)
		}
		idx = v
	default:
		return s.emit(ev.Raw, ev.Name, ev.Data, -1) // unknown or item-less event
	}
	it := st.items[idx]
	if it == nil {
		call := strings.HasPrefix(typ, respEvArgsPrefix) || strings.HasPrefix(typ, respEvInputPrefix) ||
			(typ == respEvItemAdded || typ == respEvItemDone) && responsesCallType(f.item.Get("type").Str)
		it = &respItemState{call: call, agent: -1}
		st.items[idx] = it
		st.order = append(st.order, idx)
	}
	if (typ == respEvItemAdded || typ == respEvItemDone) && f.item.IsObject() {
		it.item = []byte(f.item.Raw)
		if id := f.item.Get("id"); id.Type == gjson.String {
			st.ids[id.Str] = idx
		}
	}
	if it.call {
		if it.agent >= 0 {
			return s.emit(ev.Raw, ev.Name, ev.Data, it.agent) // a late event of a released call
		}
		if st.released {
			return nil, nil // a late event of a removed call
		}
		it.held = append(it.held, respHoldEvent(&ev))
		return nil, nil
	}
	if it.agent < 0 {
		it.agent = s.nextOut
		s.nextOut++
		st.seen = append(st.seen, idx)
	}
	return s.emit(ev.Raw, ev.Name, ev.Data, it.agent)
}

// buildReply returns the reply body of a terminal response: the response
// object itself, or, when its output is missing or empty although items
// were streamed, the response with the streamed items as output.
func (st *respStream) buildReply(resp gjson.Result) []byte {
	body := []byte(resp.Raw)
	if out := resp.Get("output"); (out.IsArray() && oaInnerString(out) != "") || len(st.order) == 0 {
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
	root, ok := rootObject(bstr(body))
	if !ok {
		return body
	}
	return setMember(body, root, "output", wrap('[', oaJoin(items), ']'))
}

// emit returns one event renumbered for the agent: sequence_number set to
// the next number when present, output_index set to out when out >= 0 and
// the event has one.
func (s *responsesSplicer) emit(raw, name, data []byte, out int) ([]byte, error) {
	f, err := parseRespFields(data)
	if err != nil {
		return nil, err
	}
	var edits []respEdit
	if f.seq.Exists() {
		s.seqInit = true
		edits = append(edits, respEdit{f.seq, strconv.AppendInt(nil, s.nextSeq, 10)})
		s.nextSeq++
	}
	if out >= 0 && f.out.Exists() {
		edits = append(edits, respEdit{f.out, strconv.AppendInt(nil, int64(out), 10)})
	}
	s.events++
	return s.reframe(raw, name, data, applyRespEdits(data, edits)), nil
}

// respEdit replaces one value of a payload.
type respEdit struct {
	at  gjson.Result
	val []byte
}

// applyRespEdits returns data with each edit's value replaced (data itself
// when nothing changes).
func applyRespEdits(data []byte, edits []respEdit) []byte {
	slices.SortFunc(edits, func(a, b respEdit) int { return a.at.Index - b.at.Index })
	changed := false
	for _, e := range edits {
		if e.at.Raw != string(e.val) {
			changed = true
		}
	}
	if !changed {
		return data
	}
	out := make([]byte, 0, len(data)+16)
	pos := 0
	for _, e := range edits {
		if e.at.Index < pos || end(e.at) > len(data) {
			continue // cannot happen for distinct top-level members
		}
		out = append(out, data[pos:e.at.Index]...)
		out = append(out, e.val...)
		pos = end(e.at)
	}
	return append(out, data[pos:]...)
}

// reframe returns the event raw with its data replaced by newData, keeping
// every other byte when the event has a single data line and newData fits
// on one line; otherwise the event is written anew (name and data lines,
// in the upstream's line ending).
func (s *responsesSplicer) reframe(raw, name, oldData, newData []byte) []byte {
	if raw != nil {
		if bytes.Equal(oldData, newData) {
			return respCompleteEvent(bytes.Clone(raw))
		}
		if bytes.IndexAny(newData, "\r\n") < 0 {
			if a, b, ok := respSingleDataLine(raw); ok && bytes.Equal(raw[a:b], oldData) {
				return respCompleteEvent(splice(raw, a, b, newData))
			}
		}
	}
	crlf := s.crlf
	if raw != nil {
		crlf = bytes.Contains(raw, []byte("\r\n"))
	}
	b := AppendEvent(nil, name, newData)
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
		return nil, fmt.Errorf("%w: stream has no terminal event", ErrMalformedReply)
	}
	if st.reply == nil {
		return nil, fmt.Errorf("%w: stream ended with an error event", ErrMalformedReply)
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
		return nil, nil
	}
	var out []byte
	if !st.done || st.reply == nil {
		if len(remove) > 0 || len(first) > 0 {
			return nil, fmt.Errorf("%w: cannot edit the tool calls of an unfinished stream", ErrMalformedReply)
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
		return out, nil
	}
	root, err := parseReplyRoot(st.reply)
	if err != nil {
		return nil, err
	}
	elems := oaElems(root.Get("output"))
	var calls []int // output positions of the call items, as ParseReply numbers them
	for i, it := range elems {
		if responsesCallType(it.Get("type").Str) {
			calls = append(calls, i)
		}
	}
	plan, err := oaCallOrder(len(calls), remove, first)
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
	return out, nil
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

func (s *responsesSplicer) Next() {
	if s.finished {
		return
	}
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
	if s.failed {
		return out, nil
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
	edits := []respEdit{{f.response, merged}}
	if f.seq.Exists() {
		edits = append(edits, respEdit{f.seq, strconv.AppendInt(nil, s.nextSeq, 10)})
		s.nextSeq++
	}
	s.events++
	out = append(out, s.reframe(term.raw, term.name, term.data, applyRespEdits(term.data, edits))...)
	if s.doneRaw != nil {
		s.events++
		out = append(out, s.doneRaw...)
	}
	return out, nil
}

// mergedResponse returns MergeReplies over every stream's reply as
// EditReply left it, with output holding exactly the items the agent was
// shown, in the order it was shown them.
func (s *responsesSplicer) mergedResponse() ([]byte, error) {
	var merged []byte
	var shown [][]byte
	for i, st := range s.streams {
		if !st.done || st.reply == nil {
			return nil, fmt.Errorf("%w: stream %d has no terminal event", ErrMalformedReply, i)
		}
		edited, err := responsesCodec{}.EditReply(st.reply, st.remove, st.first)
		if err != nil {
			return nil, err
		}
		if merged == nil {
			merged = edited
		} else if merged, err = (responsesCodec{}).MergeReplies(merged, edited); err != nil {
			return nil, err
		}
		root, err := parseReplyRoot(st.reply)
		if err != nil {
			return nil, err
		}
		elems := oaElems(root.Get("output"))
		for _, key := range st.seen {
			if b := st.shownItem(key, elems); b != nil {
				shown = append(shown, b)
			}
		}
	}
	root, err := parseReplyRoot(merged)
	if err != nil {
		return nil, err
	}
	out := root.Get("output")
	elems := oaElems(out)
	same := out.IsArray() && len(elems) == len(shown)
	for i := 0; same && i < len(elems); i++ {
		same = elems[i].Raw == string(shown[i])
	}
	if !same {
		merged = setMember(merged, root, "output", wrap('[', oaJoin(shown), ']'))
	}
	if len(s.streams) > 1 && s.followID != "" {
		// A follow-up whose terminal response lacks an id: the agent must
		// still continue from the follow-up.
		if root, ok := rootObject(bstr(merged)); ok && root.Get("id").Type != gjson.String {
			merged = setMember(merged, root, "id", jsonString(s.followID))
		}
	}
	return merged, nil
}
