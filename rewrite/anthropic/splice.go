package anthropic

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/tidwall/gjson"
)

// This file holds the Anthropic Messages StreamSplicer.
//
// Text, thinking and every block that is not a tool_use (server_tool_use and
// the server tool results included: those are the provider's business) are
// forwarded at once with their index renumbered to the agent's sequence. A
// tool_use block is held, all its events, until Release decides on it; a
// kept one is then written with the next agent index. So within one stream a
// tool_use block the agent gets comes after every non-tool block that started
// before Release, which is the order the agent sees anyway once the
// arguments are complete (agents act on tool calls only after the reply).
//
// Renumbering touches only the digits of the "index" member: the rest of
// the data and the event's framing (event line, id, comments, LF or CRLF)
// stay byte for byte. message_start passes through on the first stream and
// is dropped on follow-ups; message_delta and message_stop are held for
// Finish.
//
// Truncation recovery (ContinueSplicer): the content_block_stop of the
// reply's last text block is held, with any pass-through event (ping,
// comment, unknown) that follows it, until something else is written: the
// start of another block (a held tool_use block included), an error, the
// tool calls Release writes, or the terminal events. So the concatenated
// output of a stream is byte-identical to what it was without holding, only
// written a little later, and a continuation stream (Continue) can still run
// on in that block: its first text block is delivered as text_delta events
// of the open block, through a SeamFilter, its thinking blocks are dropped
// and its other blocks follow, renumbered like a follow-up's.

// Block states.
const (
	asForward  uint8 = iota // non-tool block: events go out at once
	asHeld                  // tool_use block waiting for Release
	asReleased              // kept by Release: later events go out at once
	asDropped               // removed by Release: events are swallowed
	asSkipped               // continuation thinking: never reaches the agent
	asMerged                // continuation text: runs on in the open text block
)

// asEvent is a copy of one wire event kept for later: a held tool-block
// event (idxStart/idxEnd locate the index digits in data) or a terminal
// event.
type asEvent struct {
	name, data, raw  []byte
	idxStart, idxEnd int
}

// asBlock is one content block of the current stream.
type asBlock struct {
	up    int64  // upstream index
	start []byte // content_block object of the start event
	state uint8
	agent int // agent index (forwarded and released blocks)
	held  []asEvent

	// Accumulated deltas, for Reply.
	text, thinking, signature, input []byte
	hasText, hasThinking, hasSig     bool
	citations                        [][]byte
}

// asMember is one member of a message_delta's delta object, applied to the
// message in Reply.
type asMember struct {
	key string
	raw []byte
}

type anthropicSplicer struct {
	arena rewrite.Arena // the held events' bytes
	// fields and delta are the event Feed is taking, read into the
	// splicer rather than into Feed's frames (readAnthropicEvent).
	fields anthropicEventFields
	delta  asDelta

	// Turn state.
	streams  int   // streams started (1 + follow-ups)
	next     int   // next agent block index
	prevOut  int64 // output tokens of the streams before the current one
	events   int
	failed   bool // an error event was forwarded
	finished bool
	crlf     bool // the upstream frames lines with CRLF

	// Current stream.
	started    bool
	done       bool
	released   bool
	removedAll bool   // Release removed every tool call
	msg        []byte // message object of message_start
	usage      []byte // usage: message_start's, overlaid by message_delta's
	overlay    []asMember
	blocks     []*asBlock
	byUp       map[int64]*asBlock
	term       []asEvent // message_delta and message_stop events, verbatim
	lastDelta  int       // the last message_delta in term, -1 if none
	stopEvent  int       // message_stop in term, -1 if none
	errMessage string

	// The open text block: the agent's last block while it is a text block
	// that a continuation may extend.
	openAgent int      // its agent index, -1 when there is none
	openText  []byte   // the tail of its text as the agent saw it
	closeEv   []byte   // its content_block_stop, renumbered, held
	after     [][]byte // pass-through events that came after closeEv, held
	pending   [][]byte // events written before the next one (left by Next or Continue)

	// Continuation stream state.
	cont    bool                // the current stream continues the reply (Continue)
	merged  bool                // its first text block was merged into the open block
	merging bool                // the merged block is between its start and stop
	seam    *rewrite.SeamFilter // de-duplicates the merged text's seam

	watch rewrite.CallWatch // the tool calls' observer (observe.go)
}

func newAnthropicSplicer() *anthropicSplicer {
	return &anthropicSplicer{streams: 1, byUp: map[int64]*asBlock{}, lastDelta: -1, stopEvent: -1, openAgent: -1}
}

var _ rewrite.ContinueSplicer = (*anthropicSplicer)(nil)

// spliceErr reports an event the splicer cannot parse (wrapping
// ErrMalformedReply).
func spliceErr(format string, args ...any) error {
	return fmt.Errorf("%w: anthropic stream: "+format, append([]any{rewrite.ErrMalformedReply}, args...)...)
}

// Events returns the number of events emitted so far.
func (s *anthropicSplicer) Events() int { return s.events }

// Done reports whether message_stop (or an error event) arrived.
func (s *anthropicSplicer) Done() bool { return s.done }

// emit appends the raw event to out, completing its terminating blank line
// if the upstream cut it off, and counts it. Pending events go first.
func (s *anthropicSplicer) emit(out, raw []byte) []byte {
	if len(raw) == 0 {
		return out
	}
	if len(s.pending) > 0 {
		p := s.pending
		s.pending = nil
		for _, r := range p {
			out = s.emit(out, r)
		}
	}
	s.events++
	term := eventTerminator(raw, s.crlf)
	if out == nil && term == "" {
		// The event as is: no copy. The result may alias the event being
		// fed (valid until the caller reads the next one); its capacity is
		// cut so that appending to it copies.
		return raw[:len(raw):len(raw)]
	}
	out = append(out, raw...)
	return append(out, term...)
}

// eventTerminator returns what raw lacks to end with a blank line.
func eventTerminator(raw []byte, crlf bool) string {
	eol := "\n"
	if crlf {
		eol = "\r\n"
	}
	n, ok := stripEOL(raw, len(raw))
	switch {
	case !ok:
		return eol + eol
	case n == 0:
		return ""
	}
	if _, ok := stripEOL(raw, n); ok {
		return ""
	}
	if raw[len(raw)-1] == '\r' {
		return "\r\n" // a lone LF would join the CR into one line ending
	}
	return eol
}

// stripEOL removes one line ending from the end of b[:n].
func stripEOL(b []byte, n int) (int, bool) {
	switch {
	case n >= 2 && b[n-2] == '\r' && b[n-1] == '\n':
		return n - 2, true
	case n >= 1 && (b[n-1] == '\n' || b[n-1] == '\r'):
		return n - 1, true
	}
	return n, false
}

// rawDataOffset returns the offset of data in raw when raw has exactly one
// data line and its value is data, else -1.
func rawDataOffset(raw, data []byte) int {
	off, vend, n := -1, -1, 0
	for i := 0; i < len(raw); {
		j := i
		for j < len(raw) && raw[j] != '\n' && raw[j] != '\r' {
			j++
		}
		line := raw[i:j]
		if bytes.HasPrefix(line, []byte("data")) && (len(line) == 4 || line[4] == ':') {
			n++
			v := j
			if len(line) > 4 {
				v = i + 5
				if v < j && raw[v] == ' ' {
					v++
				}
			}
			off, vend = v, j
		}
		if j+1 < len(raw) && raw[j] == '\r' && raw[j+1] == '\n' {
			j++
		}
		i = j + 1
	}
	if n != 1 || !bytes.Equal(raw[off:vend], data) {
		return -1
	}
	return off
}

// reframe returns the event raw (whose data is data) with newData as its
// data: spliced into the data line when possible, so every other byte stays;
// otherwise rebuilt from name and newData with raw's line endings.
func reframe(raw, data, newData, name []byte) []byte {
	if off := rawDataOffset(raw, data); off >= 0 && bytes.IndexAny(newData, "\r\n") < 0 {
		return jsonkit.Splice(raw, off, off+len(data), newData)
	}
	out := rewrite.AppendEvent(nil, name, newData)
	if bytes.Contains(raw, []byte("\r\n")) {
		out = bytes.ReplaceAll(out, []byte("\n"), []byte("\r\n"))
	}
	return out
}

// renumber returns ev with its index digits replaced by n (ev.raw itself
// SideIf they are n already).
func renumber(ev *asEvent, n int) []byte {
	if digitsEqual(ev.data[ev.idxStart:ev.idxEnd], n) {
		return ev.raw
	}
	num := strconv.AppendInt(nil, int64(n), 10)
	return reframe(ev.raw, ev.data, jsonkit.Splice(ev.data, ev.idxStart, ev.idxEnd, num), ev.name)
}

// digitsEqual reports whether b is n in decimal, as strconv.AppendInt
// writes it.
func digitsEqual(b []byte, n int) bool {
	var buf [20]byte
	return string(b) == string(strconv.AppendInt(buf[:0], int64(n), 10))
}

// copyEvent copies ev for later use, into the splicer's arena.
func (s *anthropicSplicer) copyEvent(ev *rewrite.Event, idx gjson.Result) asEvent {
	e := asEvent{name: s.arena.Keep(ev.Name), data: s.arena.Keep(ev.Data), raw: s.arena.Keep(ev.Raw)}
	if idx.Exists() {
		e.idxStart, e.idxEnd = idx.Index, jsonkit.ValueEnd(idx)
	}
	return e
}

// anthropicEventFields is what Feed reads from an event's top level.
type anthropicEventFields struct {
	typ, index, cb, delta, msg, usage gjson.Result
}

// readAnthropicEvent sets *f to the top-level members of the event's
// payload, whose root object is root (rewrite.ParseReplyRoot; f must be
// zero), and returns the event's type. The fields go through a pointer, as
// they do to every step of Feed: six gjson.Results passed or returned by
// value take stack space in Feed's frames, and a streamed turn's goroutine
// runs Feed on top of its whole reading chain (see turn.Turn.Run).
func readAnthropicEvent(ev *rewrite.Event, root *gjson.Result, f *anthropicEventFields) (string, error) {
	// jsonkit.EachMember rather than gjson's ForEach, which parses every
	// number as a float on the way (strconv.ParseFloat alone takes more
	// stack than a streamed turn can spare); no field's Num is read.
	var dup string
	raw := root.Raw
	jsonkit.EachMember(raw, strings.IndexByte(raw, '{'), func(key string, start, end int) bool {
		var dst *gjson.Result
		switch key {
		case "type":
			dst = &f.typ
		case "index":
			dst = &f.index
		case "content_block":
			dst = &f.cb
		case "delta":
			dst = &f.delta
		case "message":
			dst = &f.msg
		case "usage":
			dst = &f.usage
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
		return "", spliceErr("duplicate member %q", dup)
	}
	typ := jsonkit.UnsafeString(ev.Name)
	switch {
	case f.typ.Type == gjson.String:
		typ = f.typ.Str
	case f.typ.Exists():
		return "", spliceErr("type must be a string")
	}
	return typ, nil
}

// Feed takes one event of the current stream.
func (s *anthropicSplicer) Feed(ev *rewrite.Event) ([]byte, error) {
	if s.finished {
		return nil, errors.New("rewrite: anthropic splicer: Feed after Finish")
	}
	if bytes.Contains(ev.Raw, []byte("\r\n")) {
		s.crlf = true
	} else if bytes.IndexByte(ev.Raw, '\n') >= 0 {
		s.crlf = false
	}
	if len(ev.Data) == 0 {
		// Comments, data-less pings and unknown events.
		return s.passThrough(ev.Raw), nil
	}
	if anthropicFastDeltas {
		if out, ok, err := s.feedFastDelta(ev); ok {
			return out, err
		}
	}
	// Validated here, not under feedEvent's frame: the validator recurses
	// once per level of nesting.
	root, err := rewrite.ParseReplyRoot(ev.Data)
	if err != nil {
		return nil, err
	}
	return s.feedEvent(ev, &root)
}

// feedFastDelta takes a content_block_delta through the fast path
// (stream_fast.go); ok is false when the event is not one it reads. It and
// feedEvent are Feed's two paths, each with its own locals: only one of
// them is on a streamed turn's stack at a time (see readAnthropicEvent).
//
//go:noinline
func (s *anthropicSplicer) feedFastDelta(ev *rewrite.Event) (out []byte, ok bool, err error) {
	f, fd := &s.fields, &s.delta
	*f, *fd = anthropicEventFields{}, asDelta{}
	up, ok := fastBlockDelta(ev.Data, f, fd)
	if !ok {
		return nil, false, nil
	}
	out, err = s.blockEvent(ev, f, up, fd, true)
	return out, true, err
}

// feedEvent takes an event with data by its type; root is its payload's
// root object.
//
//go:noinline
func (s *anthropicSplicer) feedEvent(ev *rewrite.Event, root *gjson.Result) ([]byte, error) {
	f := &s.fields
	*f = anthropicEventFields{}
	typ, err := readAnthropicEvent(ev, root, f)
	if err != nil {
		return nil, err
	}
	switch typ {
	case "message_start":
		return s.messageStart(ev, f)
	case "content_block_start":
		return s.blockStart(ev, f)
	case "content_block_delta", "content_block_stop":
		up, err := blockIndex(f, ev.Data)
		if err != nil {
			return nil, err
		}
		return s.blockEvent(ev, f, up, nil, typ == "content_block_delta")
	case "message_delta":
		return nil, s.messageDelta(ev, f)
	case "message_stop":
		s.messageStop(ev)
		return nil, nil
	case "error":
		return s.errorEvent(ev), nil
	}
	// ping and unknown events.
	return s.passThrough(ev.Raw), nil
}

// messageStop holds the stream's message_stop for Finish.
//
//go:noinline
func (s *anthropicSplicer) messageStop(ev *rewrite.Event) {
	s.term = append(s.term, s.copyEvent(ev, gjson.Result{}))
	s.stopEvent = len(s.term) - 1
	s.done = true
}

// errorEvent ends the stream with the provider's error event, after what
// is held.
//
//go:noinline
func (s *anthropicSplicer) errorEvent(ev *rewrite.Event) []byte {
	s.done, s.failed = true, true
	s.errMessage = gjson.GetBytes(ev.Data, "error.message").String()
	out := s.flushClose(s.flushSeam(nil))
	return s.emit(out, ev.Raw)
}

// passThrough writes an event that belongs to no block: at once, or, while
// the open text block's close is held (and no continuation text is running
// in it), held behind that close so the agent's byte order stays.
func (s *anthropicSplicer) passThrough(raw []byte) []byte {
	if s.closeEv != nil && !s.merging {
		s.after = append(s.after, bytes.Clone(raw))
		return nil
	}
	return s.emit(nil, raw)
}

// flushClose writes the held close of the open text block and the events
// held behind it; the block can no longer be extended.
func (s *anthropicSplicer) flushClose(out []byte) []byte {
	held, after := s.closeEv, s.after
	s.closeEv, s.after, s.openAgent, s.openText = nil, nil, -1, nil
	out = s.emit(out, held)
	for _, raw := range after {
		out = s.emit(out, raw)
	}
	return out
}

// flushSeam writes the text the seam filter still holds, as a text_delta of
// the open block.
func (s *anthropicSplicer) flushSeam(out []byte) []byte {
	return s.emit(out, s.seamRest())
}

// seamRest returns the text the seam filter still holds as a text_delta
// event of the open block (nil when there is none) and decides the seam.
func (s *anthropicSplicer) seamRest() []byte {
	if s.seam == nil || s.seam.Decided() {
		return nil
	}
	text := s.seam.Flush()
	if text == "" || s.openAgent < 0 {
		return nil
	}
	s.addOpenText(text)
	return s.textDelta(s.openAgent, text)
}

// textDelta renders a text_delta event for the agent's block index.
func (s *anthropicSplicer) textDelta(index int, text string) []byte {
	data := []byte(`{"type":"content_block_delta","index":`)
	data = strconv.AppendInt(data, int64(index), 10)
	data = append(data, `,"delta":{"type":"text_delta","text":`...)
	data = jsonkit.AppendString(data, text)
	data = append(data, "}}"...)
	return s.frame([]byte("content_block_delta"), data)
}

// addOpenText records text the agent got in the open block (only the tail a
// seam filter needs is kept).
func (s *anthropicSplicer) addOpenText(text string) {
	s.openText = append(s.openText, text...)
	if len(s.openText) > 4*rewrite.SeamWindow {
		// Keep the tail, in place: openText is never shared.
		n := copy(s.openText, s.openText[len(s.openText)-rewrite.SeamWindow:])
		s.openText = s.openText[:n]
	}
}

func (s *anthropicSplicer) messageStart(ev *rewrite.Event, f *anthropicEventFields) ([]byte, error) {
	if s.started || len(s.blocks) > 0 {
		return nil, spliceErr("message_start after the stream started")
	}
	if !f.msg.IsObject() {
		return nil, spliceErr("message_start without a message object")
	}
	s.started = true
	s.msg = []byte(f.msg.Raw)
	if u := jsonkit.Member(f.msg, "usage"); u.IsObject() {
		s.usage = []byte(u.Raw)
	}
	if s.streams > 1 {
		return nil, nil
	}
	return s.emit(nil, ev.Raw), nil
}

// blockIndex reads a block event's index.
func blockIndex(f *anthropicEventFields, data []byte) (int64, error) {
	if f.index.Type != gjson.Number {
		return 0, spliceErr("content block event without a numeric index")
	}
	if i := f.index.Index; i <= 0 || jsonkit.ValueEnd(f.index) > len(data) || string(data[i:jsonkit.ValueEnd(f.index)]) != f.index.Raw {
		return 0, spliceErr("cannot locate the content block index")
	}
	n, err := strconv.ParseInt(f.index.Raw, 10, 64)
	if err != nil {
		return 0, spliceErr("content block index %q is not an integer", f.index.Raw)
	}
	return n, nil
}

func (s *anthropicSplicer) blockStart(ev *rewrite.Event, f *anthropicEventFields) ([]byte, error) {
	if !s.started {
		return nil, spliceErr("content_block_start before message_start")
	}
	up, err := blockIndex(f, ev.Data)
	if err != nil {
		return nil, err
	}
	if _, dup := s.byUp[up]; dup {
		return nil, spliceErr("content block %d started twice", up)
	}
	if !f.cb.IsObject() {
		return nil, spliceErr("content_block_start without a content_block object")
	}
	b := &asBlock{up: up, start: []byte(f.cb.Raw)}
	typ := jsonkit.Member(f.cb, "type").Str
	if typ == "tool_use" && s.released {
		return nil, spliceErr("tool_use block %d started after Release", up)
	}
	s.blocks = append(s.blocks, b)
	s.byUp[up] = b
	if s.cont {
		switch {
		case typ == "thinking" || typ == "redacted_thinking":
			b.state = asSkipped
			return nil, nil
		case typ == "text" && !s.merged && s.openAgent >= 0:
			// The continuation's text runs on in the open block: its start
			// is dropped, its text goes through the seam filter.
			b.state, b.agent = asMerged, s.openAgent
			s.merged, s.merging = true, true
			s.seam = rewrite.NewSeamFilter(string(s.openText))
			if t := jsonkit.Member(f.cb, "text"); t.Str != "" {
				return s.mergedText(nil, nil, nil, t.Str), nil
			}
			return nil, nil
		}
	}
	// Another block starts: the open text block is closed for good.
	out := s.flushClose(s.flushSeam(nil))
	if typ == "tool_use" {
		if s.watch.On() {
			s.watchStart(up, f.cb)
		}
		b.state = asHeld
		b.held = append(b.held, s.copyEvent(ev, f.index))
		return out, nil
	}
	b.agent = s.next
	s.next++
	if typ == "text" {
		s.openAgent = b.agent
		s.openText = append(s.openText[:0], jsonkit.Member(f.cb, "text").Str...)
	}
	e := asEvent{name: ev.Name, data: ev.Data, raw: ev.Raw, idxStart: f.index.Index, idxEnd: jsonkit.ValueEnd(f.index)}
	return s.emit(out, renumber(&e, b.agent)), nil
}

// mergedText writes text of the continuation's merged block through the
// seam filter: as ev (a text_delta of that block, its text replaced when
// the filter changed it) or, without ev, as a new text_delta event. Nothing
// is written while the filter holds the text.
func (s *anthropicSplicer) mergedText(ev *rewrite.Event, f *anthropicEventFields, d *asDelta, text string) []byte {
	text2 := s.seam.Write(text)
	if text2 == "" {
		return nil
	}
	s.addOpenText(text2)
	if ev == nil {
		return s.emit(nil, s.textDelta(s.openAgent, text2))
	}
	e := asEvent{name: ev.Name, data: ev.Data, raw: ev.Raw, idxStart: f.index.Index, idxEnd: jsonkit.ValueEnd(f.index)}
	if text2 != text {
		t := d.val // the delta's text
		lit := jsonkit.Quote(text2)
		data := jsonkit.Splice(ev.Data, t.Index, jsonkit.ValueEnd(t), lit)
		if e.idxStart > t.Index {
			shift := len(lit) - len(t.Raw)
			e.idxStart, e.idxEnd = e.idxStart+shift, e.idxEnd+shift
		}
		e.raw, e.data = reframe(ev.Raw, ev.Data, data, ev.Name), data
	}
	return s.emit(nil, renumber(&e, s.openAgent))
}

// blockEvent handles a content_block_delta (isDelta) or content_block_stop
// of block up; pre is the delta when the fast path read it already.
func (s *anthropicSplicer) blockEvent(ev *rewrite.Event, f *anthropicEventFields, up int64, pre *asDelta, isDelta bool) ([]byte, error) {
	b := s.byUp[up]
	if b == nil {
		return nil, spliceErr("event for content block %d, which was not started", up)
	}
	var d asDelta
	if isDelta {
		if pre != nil {
			d = *pre
		} else {
			var err error
			if d, err = readDelta(f.delta); err != nil {
				return nil, err
			}
		}
		if err := b.addDelta(&d); err != nil {
			return nil, err
		}
	}
	if s.watch.On() {
		s.watchBlock(b, &d, isDelta)
	}
	switch b.state {
	case asHeld:
		b.held = append(b.held, s.copyEvent(ev, f.index))
		return nil, nil
	case asDropped, asSkipped:
		return nil, nil
	case asMerged:
		return s.mergedEvent(ev, f, &d, b, isDelta), nil
	}
	e := asEvent{name: ev.Name, data: ev.Data, raw: ev.Raw, idxStart: f.index.Index, idxEnd: jsonkit.ValueEnd(f.index)}
	if b.agent == s.openAgent && s.closeEv == nil {
		if !isDelta {
			// The open block's close is held.
			s.closeEv = bytes.Clone(renumber(&e, b.agent))
			return nil, nil
		}
		if d.typ == "text_delta" {
			s.addOpenText(d.val.Str)
		}
		return s.emit(nil, renumber(&e, b.agent)), nil
	}
	out := s.flushClose(s.flushSeam(nil))
	return s.emit(out, renumber(&e, b.agent)), nil
}

// mergedEvent handles an event of the continuation's merged text block.
func (s *anthropicSplicer) mergedEvent(ev *rewrite.Event, f *anthropicEventFields, d *asDelta, b *asBlock, isDelta bool) []byte {
	if s.openAgent != b.agent {
		return nil // the open block was closed by an odd event order
	}
	if !isDelta {
		s.merging = false
		out := s.flushSeam(nil)
		if s.closeEv == nil {
			e := asEvent{name: ev.Name, data: ev.Data, raw: ev.Raw, idxStart: f.index.Index, idxEnd: jsonkit.ValueEnd(f.index)}
			s.closeEv = bytes.Clone(renumber(&e, b.agent))
		}
		return out
	}
	if d.typ == "text_delta" {
		return s.mergedText(ev, f, d, d.val.Str)
	}
	e := asEvent{name: ev.Name, data: ev.Data, raw: ev.Raw, idxStart: f.index.Index, idxEnd: jsonkit.ValueEnd(f.index)}
	return s.emit(nil, renumber(&e, b.agent))
}

// asDelta is what the splicer reads from a content_block_delta's delta
// object, in one pass: its type (delta.type when it is a string) and the
// member that carries the content for that type (text, thinking, signature,
// partial_json or citation; absent for other types). Like gjson's Get, the
// first member with a key counts.
type asDelta struct {
	typ   string
	field string // the key of val
	val   gjson.Result
}

// deltaField is the member that carries a delta type's content ("" for
// unknown types, which are forwarded, not modelled).
func deltaField(typ string) string {
	switch typ {
	case "text_delta":
		return "text"
	case "thinking_delta":
		return "thinking"
	case "signature_delta":
		return "signature"
	case "input_json_delta":
		return "partial_json"
	case "citations_delta":
		return "citation"
	}
	return ""
}

// readDelta reads a content_block_delta's delta object.
func readDelta(obj gjson.Result) (asDelta, error) {
	var d asDelta
	if !obj.IsObject() {
		return d, spliceErr("content_block_delta without a delta object")
	}
	// The content member's key depends on the type, which may come after
	// it: keep the first of each candidate.
	var typ gjson.Result
	var vals [5]gjson.Result // text, thinking, signature, partial_json, citation
	var seen [6]bool         // the same, then type
	obj.ForEach(func(k, v gjson.Result) bool {
		i := 0
		switch k.Str {
		case "text":
		case "thinking":
			i = 1
		case "signature":
			i = 2
		case "partial_json":
			i = 3
		case "citation":
			i = 4
		case "type":
			if !seen[5] {
				typ, seen[5] = v, true
			}
			return true
		default:
			return true
		}
		if !seen[i] {
			vals[i], seen[i] = v, true
		}
		return true
	})
	d.typ = typ.Str
	switch d.field = deltaField(d.typ); d.field {
	case "text":
		d.val = vals[0]
	case "thinking":
		d.val = vals[1]
	case "signature":
		d.val = vals[2]
	case "partial_json":
		d.val = vals[3]
	case "citation":
		d.val = vals[4]
	}
	return d, nil
}

// addDelta accumulates one delta for Reply.
func (b *asBlock) addDelta(d *asDelta) error {
	typ, field, v := d.typ, d.field, d.val
	if field == "" {
		return nil // unknown delta types are forwarded, not modelled
	}
	if typ == "citations_delta" {
		if !v.IsObject() {
			return spliceErr("citations_delta without a citation object")
		}
		b.citations = append(b.citations, []byte(v.Raw))
		return nil
	}
	if v.Type != gjson.String {
		return spliceErr("%s without a string %s", typ, field)
	}
	switch typ {
	case "text_delta":
		b.text, b.hasText = append(b.text, v.Str...), true
	case "thinking_delta":
		b.thinking, b.hasThinking = append(b.thinking, v.Str...), true
	case "signature_delta":
		b.signature, b.hasSig = append(b.signature, v.Str...), true
	case "input_json_delta":
		b.input = append(b.input, v.Str...)
	}
	return nil
}

func (s *anthropicSplicer) messageDelta(ev *rewrite.Event, f *anthropicEventFields) error {
	if !jsonkit.IsNull(f.delta) && !f.delta.IsObject() {
		return spliceErr("message_delta delta must be an object")
	}
	if !jsonkit.IsNull(f.usage) && !f.usage.IsObject() {
		return spliceErr("message_delta usage must be an object")
	}
	f.delta.ForEach(func(k, v gjson.Result) bool {
		s.overlay = append(s.overlay, asMember{key: k.Str, raw: []byte(v.Raw)})
		return true
	})
	if f.usage.IsObject() {
		u := s.usage
		if u == nil {
			u = []byte("{}")
		}
		f.usage.ForEach(func(k, v gjson.Result) bool {
			if v.Type != gjson.Null {
				u = setTop(u, k.Str, []byte(v.Raw))
			}
			return true
		})
		s.usage = u
	}
	s.term = append(s.term, s.copyEvent(ev, gjson.Result{}))
	s.lastDelta = len(s.term) - 1
	return nil
}

// usageOutput reads output_tokens of a usage object.
func usageOutput(u []byte) int64 {
	obj, ok := jsonkit.RootObject(jsonkit.UnsafeString(u))
	if !ok {
		return 0
	}
	return rewrite.BlocksCount(obj, "output_tokens")
}

// Reply rebuilds the non-streaming Message of the current stream.
func (s *anthropicSplicer) Reply() ([]byte, error) {
	if s.failed {
		return nil, fmt.Errorf("rewrite: anthropic stream ended with an error event: %s", s.errMessage)
	}
	if !s.started {
		return nil, spliceErr("no message_start")
	}
	// A tool_use block cut by the output limit has an incomplete input: it
	// gets {} (the turn engine discards a cut call and the model makes it
	// again).
	cut := s.done && s.stopReason().Str == "max_tokens"
	content := []byte{'['}
	for i, b := range s.blocks {
		if i > 0 {
			content = append(content, ',')
		}
		blk, err := b.json(cut && i == len(s.blocks)-1)
		if err != nil {
			return nil, err
		}
		content = append(content, blk...)
	}
	content = append(content, ']')
	if !s.contentLast() {
		out := setTop(bytes.Clone(s.msg), "content", content)
		for _, m := range s.overlay {
			out = setTop(out, m.key, m.raw)
		}
		if s.usage != nil {
			out = setTop(out, "usage", s.usage)
		}
		return out, nil
	}
	// The same edits with content last, so that the members after it are
	// set on the small message object rather than on the whole reply.
	out := bytes.Clone(s.msg)
	for _, m := range s.overlay {
		out = setTop(out, m.key, m.raw)
	}
	if s.usage != nil {
		out = setTop(out, "usage", s.usage)
	}
	return setTop(out, "content", content), nil
}

// contentLast reports whether Reply may set the message's content after its
// other members and get the same bytes: message_start's message has a
// content member (so content is replaced where it stands rather than
// appended after the members message_delta adds) and no message_delta sets
// content itself.
func (s *anthropicSplicer) contentLast() bool {
	for _, m := range s.overlay {
		if m.key == "content" {
			return false
		}
	}
	root, ok := jsonkit.RootObject(jsonkit.UnsafeString(s.msg))
	if !ok {
		return false
	}
	found := false
	root.ForEach(func(k, _ gjson.Result) bool {
		found = k.Str == "content"
		return !found
	})
	return found
}

// setTop sets a top-level member of the object body.
func setTop(body []byte, key string, raw []byte) []byte {
	root, ok := jsonkit.RootObject(jsonkit.UnsafeString(body))
	if !ok {
		return body
	}
	return jsonkit.SetMember(body, root, key, raw)
}

// json returns the block with its deltas applied; cut gives an incomplete
// input {}.
func (b *asBlock) json(cut bool) ([]byte, error) {
	out := b.start
	str := func(key string, add []byte) {
		prev := gjson.GetBytes(out, key).Str
		var lit []byte
		if prev == "" {
			lit = jsonkit.AppendString(make([]byte, 0, len(add)+2), jsonkit.UnsafeString(add))
		} else {
			lit = jsonkit.AppendString(nil, prev+string(add))
		}
		out = setTop(out, key, lit)
	}
	if b.hasText {
		str("text", b.text)
	}
	if b.hasThinking {
		str("thinking", b.thinking)
	}
	if b.hasSig {
		str("signature", b.signature)
	}
	if len(b.input) > 0 {
		switch {
		case gjson.ValidBytes(b.input):
			out = setTop(out, "input", b.input)
		case cut:
			out = setTop(out, "input", []byte("{}"))
		default:
			return nil, spliceErr("content block %d: input is not valid JSON", b.up)
		}
	} else if gjson.GetBytes(out, "type").Str == "tool_use" && !gjson.GetBytes(out, "input").Exists() {
		out = setTop(out, "input", []byte("{}"))
	}
	if len(b.citations) > 0 {
		prev := gjson.GetBytes(out, "citations")
		arr := []byte{'['}
		if prev.IsArray() {
			if inner := rewrite.BlocksInner(prev); inner != "" {
				arr = append(arr, inner...)
				arr = append(arr, ',')
			}
		}
		arr = append(arr, bytes.Join(b.citations, []byte{','})...)
		out = setTop(out, "citations", append(arr, ']'))
	}
	return out, nil
}

// Release writes the kept tool calls of the current stream.
func (s *anthropicSplicer) Release(remove, first []int) ([]byte, error) {
	if s.released {
		return nil, errors.New("rewrite: anthropic splicer: Release called twice for one stream")
	}
	var calls []int
	for i, b := range s.blocks {
		if b.state == asHeld {
			calls = append(calls, i)
		}
	}
	order, left, err := rewrite.BlocksCallOrder(len(s.blocks), calls, remove, first)
	if err != nil {
		return nil, err
	}
	s.released = true
	s.removedAll = len(remove) > 0 && left == 0
	for _, i := range calls {
		s.blocks[i].state = asDropped
	}
	var evs [][]byte
	for _, i := range order {
		b := s.blocks[i]
		if b.state != asDropped {
			continue // not a tool call
		}
		b.state, b.agent = asReleased, s.next
		s.next++
		if s.failed {
			continue
		}
		for j := range b.held {
			evs = append(evs, renumber(&b.held[j], b.agent))
		}
	}
	var out []byte
	if len(evs) > 0 {
		// The calls follow the open text block, which is closed first.
		out = s.flushClose(s.flushSeam(nil))
	}
	for _, raw := range evs {
		out = s.emit(out, raw)
	}
	for _, i := range calls {
		s.blocks[i].held = nil
	}
	return out, nil
}

// Next starts a follow-up stream. The held close of the open text block is
// written before the follow-up's first event.
func (s *anthropicSplicer) Next() {
	if raw := s.seamRest(); raw != nil {
		s.pending = append(s.pending, raw)
	}
	if s.closeEv != nil {
		s.pending = append(s.pending, s.closeEv)
	}
	s.pending = append(s.pending, s.after...)
	s.closeEv, s.after, s.openAgent, s.openText = nil, nil, -1, nil
	s.cont = false
	s.nextStream()
}

// Continue starts a continuation stream: its first text block runs on in
// the open text block (if there is one), its thinking blocks are dropped.
func (s *anthropicSplicer) Continue() {
	if raw := s.seamRest(); raw != nil {
		s.pending = append(s.pending, raw)
	}
	// Pass-through events held behind the close go out with the
	// continuation's first event; the close stays held.
	s.pending = append(s.pending, s.after...)
	s.after = nil
	s.cont = true
	s.nextStream()
}

// nextStream resets the per-stream state.
func (s *anthropicSplicer) nextStream() {
	s.prevOut += usageOutput(s.usage)
	s.streams++
	s.started, s.done, s.released, s.removedAll = false, false, false, false
	s.msg, s.usage, s.overlay, s.blocks, s.term = nil, nil, nil, nil, nil
	s.lastDelta, s.stopEvent = -1, -1
	s.byUp = map[int64]*asBlock{}
	s.merged, s.merging, s.seam = false, false, nil
}

// Finish writes the terminal events.
func (s *anthropicSplicer) Finish() ([]byte, error) {
	if s.finished {
		return nil, errors.New("rewrite: anthropic splicer: Finish called twice")
	}
	s.finished = true
	if s.failed {
		return nil, nil
	}
	if !s.done {
		return nil, errors.New("rewrite: anthropic stream did not end with message_stop")
	}
	stop := s.stopReason()
	endTurn := s.removedAll && (jsonkit.IsNull(stop) || stop.Str == "tool_use")
	out := s.flushClose(s.flushSeam(nil))
	if s.streams == 1 && !endTurn && s.lastDelta >= 0 {
		for i := range s.term {
			out = s.emit(out, s.term[i].raw)
		}
		return out, nil
	}
	var tmpl *asEvent
	if s.lastDelta >= 0 {
		tmpl = &s.term[s.lastDelta]
	} else {
		tmpl = &asEvent{name: []byte("message_delta"),
			data: []byte(`{"type":"message_delta","delta":{"stop_reason":null,"stop_sequence":null},"usage":{}}`)}
		tmpl.raw = s.frame(tmpl.name, tmpl.data)
	}
	data := tmpl.data
	if endTurn {
		root, _ := jsonkit.RootObject(jsonkit.UnsafeString(data))
		if d := root.Get("delta"); d.IsObject() {
			data = jsonkit.SetMember(data, d, "stop_reason", []byte(`"end_turn"`))
		} else {
			data = setTop(data, "delta", []byte(`{"stop_reason":"end_turn","stop_sequence":null}`))
		}
	}
	if s.streams > 1 || s.lastDelta < 0 {
		u := s.usage
		if u == nil {
			u = []byte("{}")
		}
		total := s.prevOut + usageOutput(s.usage)
		data = setTop(data, "usage", rewrite.BlocksSetCounts(u, []string{"output_tokens"}, []int64{total}))
	}
	out = s.emit(out, reframe(tmpl.raw, tmpl.data, data, tmpl.name))
	if s.stopEvent >= 0 {
		out = s.emit(out, s.term[s.stopEvent].raw)
	} else {
		out = s.emit(out, s.frame([]byte("message_stop"), []byte(`{"type":"message_stop"}`)))
	}
	return out, nil
}

// stopReason returns the current stream's stop_reason: the last
// message_delta's, else message_start's.
func (s *anthropicSplicer) stopReason() gjson.Result {
	stop := gjson.Result{}
	for _, m := range s.overlay {
		if m.key == "stop_reason" {
			stop = gjson.ParseBytes(m.raw)
		}
	}
	if jsonkit.IsNull(stop) && s.msg != nil {
		stop = gjson.GetBytes(s.msg, "stop_reason")
	}
	return stop
}

// frame renders an event with the upstream's line endings.
func (s *anthropicSplicer) frame(name, data []byte) []byte {
	out := rewrite.AppendEvent(nil, name, data)
	if s.crlf {
		out = bytes.ReplaceAll(out, []byte("\n"), []byte("\r\n"))
	}
	return out
}
