package openaichat

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

// This file holds the OpenAI Chat Completions StreamSplicer.
//
// Chat streams are data-only SSE: every event is a chat.completion.chunk
// (or data: [DONE]). The splicer looks at choice 0 only:
//
//   - a chunk whose choice 0 carries no tool_calls and no finish_reason
//     (role, content, refusal, reasoning deltas, empty deltas) passes
//     through at once: byte for byte on the first stream; on a follow-up its
//     id and created are set to the first stream's, its delta.role is
//     deleted, and a chunk without any text (the role preamble, an empty
//     delta) is dropped;
//   - tool-call fragments are held per tool index (id, type, name,
//     concatenated arguments). When the chunk also carries text, or the first
//     stream's role that the agent has not seen yet, a copy of it without
//     tool_calls (finish_reason and usage nulled) is sent at once;
//   - the chunk carrying finish_reason, the usage chunk (no choice 0, a usage
//     object) and [DONE] are held; Finish sends those of the last stream,
//     edited in place (id, created, finish_reason, merged usage) and byte
//     for byte when nothing changed;
//   - chunks of other choices (n > 1), comments, empty events and error
//     chunks pass through untouched. A chunk is classified by its choice 0:
//     the other choices of a chunk that is held are lost (agents send n=1).
//     The deprecated delta.function_call is not a tool call here (ParseReply
//     does not view it either): it passes through like text.
//
// Listed members present twice in a chunk (root, choice, delta, tool call)
// are an error, so that the agent's JSON parser cannot read a member the
// splicer did not see.
//
// Release sends one chunk per kept call carrying the whole call, numbered
// 0, 1, 2, … across the streams of the turn, with the first stream's id,
// created, model and system_fingerprint. Bytes returned by Feed may alias
// ev.Raw (write them before reading the next event).
//
// Truncation recovery (ContinueSplicer): Chat has no block close events, so
// nothing is held for it and the reply's text (choice 0's content, one value
// whatever tool calls follow it) is always open. A continuation stream
// (Continue) is a follow-up whose content deltas run on in that text through
// a SeamFilter built from the content the agent has seen in this turn: the
// filter holds the continuation's first SeamWindow bytes, and a chunk left
// without text by it is dropped (or forwarded without content when it
// carries a refusal). The held text is flushed, in the chunk that ends it,
// by the first tool-call or finish chunk, or as a built content chunk at
// [DONE], a usage or error chunk, Release, Next, Continue (sent ahead of the
// next bytes returned) or Finish. A continuation's reasoning_content and
// reasoning deltas are dropped (Reply still has them); its tool calls are
// held and numbered on like a follow-up's.

// chatSpliceCall is one tool call of the current stream, assembled from its
// fragments.
type chatSpliceCall struct {
	key            float64 // the upstream tool_calls index
	id, typ, name  string
	args           []byte
	hasID, hasName bool
}

// chatHeld is a held terminal event of the current stream.
type chatHeld struct {
	raw    []byte // the event as received (complete), nil when data was cleaned
	data   []byte // the chunk JSON (nil for [DONE])
	done   bool   // data: [DONE]
	finish bool   // choice 0 carries finish_reason
	usage  bool   // the chunk carries a usage object
}

// chatSpliceStream is the state of the current upstream stream.
type chatSpliceStream struct {
	id, created, model []byte // raw JSON of the stream's first values
	content, refusal   []byte
	reasoningContent   []byte
	reasoning          []byte
	sawContent         bool // a content string (possibly empty) arrived
	calls              []chatSpliceCall
	finish             string
	usage              []byte // the last usage object, raw
	held               []chatHeld
	done, errored      bool
	released           bool
	kept               int
	cont               bool // a continuation stream (Continue)
}

type chatSplicer struct {
	stream int // 0 for the first stream
	cur    chatSpliceStream

	// root and delta are what Feed reads of the chunk it is taking, kept
	// here rather than in Feed's frames: a streamed turn's goroutine runs
	// Feed on top of its whole reading chain, and gjson.Results there
	// would grow every stream's stack past its first 4 KB.
	root    [7]gjson.Result // the chunk's members (chatRootKeys)
	choice0 [3]gjson.Result // its choice 0's members (chatChoiceKeys)
	delta   chatChunkDelta

	// First-stream values used in every chunk the splicer builds or edits.
	firstID, firstCreated, firstModel, fingerprint []byte

	eol       []byte // line ending of the upstream framing
	eolSet    bool
	roleSent  bool // the agent has seen a delta.role
	usageNull bool // chunks carry "usage": null (include_usage)
	calls     int  // tool calls sent to the agent so far
	usage     []byte
	finished  bool
	events    int

	// text is the tail (at most 2*SeamWindow bytes) of the content the
	// agent has seen in this turn; seam filters the current continuation's
	// content (nil when not continuing or nothing to continue); pending holds
	// a flushed content chunk sent ahead of the next bytes returned.
	text    []byte
	seam    *rewrite.SeamFilter
	pending []byte

	watch rewrite.CallWatch // the tool calls' observer (observe.go)
}

var _ rewrite.ContinueSplicer = (*chatSplicer)(nil)

func newChatSplicer() *chatSplicer { return &chatSplicer{eol: []byte("\n")} }

var (
	chatRootKeys   = []string{"id", "created", "model", "choices", "usage", "error", "system_fingerprint"}
	chatChoiceKeys = []string{"index", "delta", "finish_reason"}
	chatDeltaKeys  = []string{"role", "content", "refusal", "reasoning_content", "reasoning", "tool_calls"}
	chatCallKeys   = []string{"index", "id", "type", "function"}
	chatFuncKeys   = []string{"name", "arguments"}
	errChatSplice  = errors.New("rewrite: chat splicer")
)

// chatMembers fills out[i] with obj's member keys[i]; a listed key present
// twice is an error (the agent's parser would read another value than ours).
//
// A number's Num is left 0 (jsonkit.ValueAtRaw; read it with jsonkit.Num):
// gjson's ForEach would parse every number as a float on the way, and
// strconv's float parser takes more stack than Feed, which runs under a
// streamed turn's whole reading chain, can spare.
func chatMembers(obj *gjson.Result, keys []string, out []gjson.Result) error {
	if !obj.IsObject() {
		return nil
	}
	raw := obj.Raw
	for j := strings.IndexByte(raw, '{') + 1; j >= 0; {
		k, start, end, next, ok := jsonkit.NextMember(raw, j)
		if !ok {
			return nil
		}
		for i, key := range keys {
			if k == key {
				if out[i].Exists() {
					return chatDuplicate(key)
				}
				out[i] = jsonkit.ValueAtRaw(raw[start:end], obj.Index, start)
			}
		}
		j = next
	}
	return nil
}

// The type errors of readChoiceMembers, made once.
var (
	errChatDelta     = fmt.Errorf("%w: delta is not an object", rewrite.ErrMalformedReply)
	errChatFinish    = fmt.Errorf("%w: finish_reason is not a string", rewrite.ErrMalformedReply)
	errChatDeltaRole = fmt.Errorf("%w: delta.role is not a string", rewrite.ErrMalformedReply)
)

// readChoiceMembers reads choice c's members into s.choice0 and its
// delta's into d.members, and checks their types. It runs in a small
// frame of its own, before readChoice: reading members decodes strings,
// the deepest call of a chunk, and readChoice's larger frame is not under
// it.
//
//go:noinline
func (s *chatSplicer) readChoiceMembers(c *gjson.Result, d *chatChunkDelta) error {
	cm := &s.choice0
	*cm = [3]gjson.Result{}
	if err := chatMembers(c, chatChoiceKeys, cm[:]); err != nil {
		return err
	}
	delta, fr := &cm[1], &cm[2]
	if !jsonkit.IsNull(*delta) && !delta.IsObject() {
		return errChatDelta
	}
	if !jsonkit.IsNull(*fr) && fr.Type != gjson.String {
		return errChatFinish
	}
	dm := &d.members
	if err := chatMembers(delta, chatDeltaKeys, dm[:]); err != nil {
		return err
	}
	if role := &dm[0]; !jsonkit.IsNull(*role) && role.Type != gjson.String {
		return errChatDeltaRole
	}
	return nil
}

// chatDuplicate is chatMembers' error for a repeated member.
func chatDuplicate(key string) error {
	return fmt.Errorf("%w: duplicate member %q", rewrite.ErrMalformedReply, key)
}

// chatChoice0 returns the element of choices with index 0 (an absent or null
// index counts as 0); ok is false when there is none. A non-object element,
// a non-number index or two choices 0 are errors.
func chatChoice0(choices *gjson.Result) (c gjson.Result, ok bool, err error) {
	if !choices.IsArray() {
		return c, false, nil
	}
	// A loop over jsonkit.NextElement, not EachElement's callback: Feed
	// runs under a streamed turn's whole reading chain (chatMembers).
	s := choices.Raw
	for j := strings.IndexByte(s, '[') + 1; ; {
		start, end, next, more := jsonkit.NextElement(s, j)
		if !more {
			return c, ok, nil
		}
		e := jsonkit.ValueAt(s[start:end], choices.Index, start)
		if !e.IsObject() {
			return c, false, fmt.Errorf("%w: choices element is not an object", rewrite.ErrMalformedReply)
		}
		var m [1]gjson.Result
		if err := chatMembers(&e, chatChoiceKeys[:1], m[:]); err != nil {
			return c, false, err
		}
		idx := &m[0]
		if !jsonkit.IsNull(*idx) && idx.Type != gjson.Number {
			return c, false, fmt.Errorf("%w: choices index is not a number", rewrite.ErrMalformedReply)
		}
		if jsonkit.IsNull(*idx) || jsonkit.Num(*idx) == 0 {
			if ok {
				return c, false, fmt.Errorf("%w: two choices with index 0", rewrite.ErrMalformedReply)
			}
			c, ok = e, true
		}
		j = next
	}
}

func (s *chatSplicer) Feed(ev *rewrite.Event) ([]byte, error) {
	if s.finished {
		return nil, fmt.Errorf("%w: Feed after Finish", errChatSplice)
	}
	out, err := s.feed(ev)
	if s.pending != nil && err == nil {
		out = append(s.pending, out...)
		s.pending = nil
	}
	return out, err
}

func (s *chatSplicer) feed(ev *rewrite.Event) ([]byte, error) {
	s.noteEOL(ev.Raw)
	data := bytes.TrimSpace(ev.Data)
	if ev.IsComment() || len(data) == 0 {
		return s.pass(ev.Raw), nil
	}
	if bytes.Equal(data, rewrite.DoneData) {
		return s.doneChunk(ev), nil
	}
	// Validated here, not under feedChunk's frame: the validator recurses
	// once per level of nesting.
	root, err := rewrite.ParseReplyRoot(ev.Data)
	if err != nil {
		return nil, err
	}
	return s.feedChunk(ev, &root)
}

// feedChunk takes a chunk whose payload's root object is root.
//
//go:noinline
func (s *chatSplicer) feedChunk(ev *rewrite.Event, root *gjson.Result) ([]byte, error) {
	m := &s.root
	*m = [7]gjson.Result{}
	if err := chatMembers(root, chatRootKeys, m[:]); err != nil {
		return nil, err
	}
	choices, usage, errv := &m[3], &m[4], &m[5]
	if err := rewrite.WantArray(*choices, "choices"); err != nil {
		return nil, fmt.Errorf("%w: choices is not an array", rewrite.ErrMalformedReply)
	}
	if !jsonkit.IsNull(*errv) && jsonkit.LastValueEnd(*choices) < 0 {
		return s.errorChunk(ev), nil
	}
	switch {
	case usage.IsObject():
	case jsonkit.IsNull(*usage):
		if usage.Exists() {
			s.usageNull = true
		}
	default:
		return nil, fmt.Errorf("%w: usage is not an object", rewrite.ErrMalformedReply)
	}
	s.noteIDs(&m[0], &m[1], &m[2], &m[6])
	c, ok, err := chatChoice0(choices)
	if err != nil {
		return nil, err
	}
	if !ok {
		if usage.IsObject() {
			return s.usageChunk(ev, usage), nil
		}
		return s.pass(ev.Raw), nil // another choice, or nothing of ours
	}
	return s.choice(ev, &c, usage)
}

// doneChunk holds the stream's [DONE] for Finish. It, errorChunk and
// usageChunk are feed's rare steps, each in a frame of its own so that
// feed's and feedChunk's frames, under which the splicer's common steps
// run, stay small.
//
//go:noinline
func (s *chatSplicer) doneChunk(ev *rewrite.Event) []byte {
	s.cur.held = append(s.cur.held, chatHeld{raw: s.complete(ev.Raw), done: true})
	s.cur.done = true
	if s.watch.On() {
		s.watchEnd()
	}
	return s.flushSeam(nil)
}

// errorChunk passes a mid-stream error chunk: the agent must see it; the
// stream ends.
//
//go:noinline
func (s *chatSplicer) errorChunk(ev *rewrite.Event) []byte {
	s.cur.errored = true
	if held := s.flushSeam(nil); held != nil {
		return append(held, s.pass(ev.Raw)...)
	}
	return s.pass(ev.Raw)
}

// usageChunk holds a chunk that carries only the usage.
//
//go:noinline
func (s *chatSplicer) usageChunk(ev *rewrite.Event, usage *gjson.Result) []byte {
	s.cur.usage = []byte(usage.Raw)
	s.cur.held = append(s.cur.held, chatHeld{raw: s.complete(ev.Raw), data: bytes.Clone(ev.Data), usage: true})
	return s.flushSeam(nil)
}

// chatChunkDelta is what choice reads from a chunk's choice 0.
type chatChunkDelta struct {
	members   [6]gjson.Result // delta's members (chatDeltaKeys)
	isObject  bool            // delta is an object
	content   string          // the content delta
	hasText   bool            // some text delta (content, refusal, reasoning) is non-empty
	hasCalls  bool            // tool call deltas
	hasFinish bool            // a finish_reason
	hasRole   bool            // a role
}

// choice handles a chunk whose choice 0 is c: readChoiceMembers and
// readChoice record its deltas, then a continuation's chunk goes to
// contChoice and any other to passChoice.
func (s *chatSplicer) choice(ev *rewrite.Event, c, usage *gjson.Result) ([]byte, error) {
	d := &s.delta
	*d = chatChunkDelta{}
	if err := s.readChoiceMembers(c, d); err != nil {
		return nil, err
	}
	if err := s.readChoice(usage, d); err != nil {
		return nil, err
	}
	if s.cur.cont {
		return s.contChoice(ev, d.isObject, d.members[:], usage.IsObject(), d.content, d.hasCalls, d.hasFinish, d.hasText)
	}
	s.noteText(d.content)
	return s.passChoice(ev, d, usage.IsObject()), nil
}

// readChoice records the text, tool call, finish and usage deltas of
// choice 0 (its members, which readChoiceMembers read and checked, are in
// s.choice0 and d.members) and of the chunk's usage in the current stream.
func (s *chatSplicer) readChoice(usage *gjson.Result, d *chatChunkDelta) error {
	delta, fr := &s.choice0[1], &s.choice0[2]
	dm := &d.members
	role, calls := &dm[0], &dm[5]
	for i, dst := range [...]*[]byte{&s.cur.content, &s.cur.refusal, &s.cur.reasoningContent, &s.cur.reasoning} {
		t := &dm[1+i]
		if jsonkit.IsNull(*t) {
			continue
		}
		if t.Type != gjson.String {
			return fmt.Errorf("%w: delta.%s is not a string", rewrite.ErrMalformedReply, chatDeltaKeys[1+i])
		}
		if i == 0 {
			s.cur.sawContent = true
			d.content = t.Str
		}
		if t.Str != "" {
			d.hasText = true
			*dst = append(*dst, t.Str...)
		}
	}
	if err := rewrite.WantArray(*calls, ""); err != nil {
		return fmt.Errorf("%w: delta.tool_calls is not an array", rewrite.ErrMalformedReply)
	}
	d.hasCalls = jsonkit.LastValueEnd(*calls) >= 0
	if d.hasCalls {
		if err := s.addCalls(*calls); err != nil {
			return err
		}
	}
	d.hasFinish = fr.Type == gjson.String && fr.Str != ""
	if d.hasFinish {
		s.cur.finish = jsonkit.OwnedString(*fr)
		if s.watch.On() {
			s.watchEnd()
		}
	}
	if usage.IsObject() {
		s.cur.usage = []byte(usage.Raw)
	}
	d.hasRole = role.Type == gjson.String
	d.isObject = delta.IsObject()
	return nil
}

// passChoice renders a chunk of the first stream or a follow-up (not a
// continuation) for the agent: text passes (a follow-up's without its
// role), tool call deltas are held back, and a finish is held until the
// engine decides the turn.
func (s *chatSplicer) passChoice(ev *rewrite.Event, d *chatChunkDelta, usageObj bool) []byte {
	if !d.hasCalls && !d.hasFinish {
		if s.stream == 0 {
			s.roleSent = s.roleSent || d.hasRole
			return s.pass(ev.Raw)
		}
		if !d.hasText {
			return nil // a follow-up's preamble or an empty delta
		}
		cp := bytes.Clone(ev.Data)
		if d.hasRole {
			cp = chatEditDelta(cp, func(b []byte, d gjson.Result) []byte { return rewrite.OpenAIDeleteMember(b, d, "role") })
		}
		return s.frame(nil, s.rewriteIDs(cp))
	}

	var out []byte
	forward := d.hasText || (s.stream == 0 && d.hasRole && !s.roleSent)
	if forward {
		cp := bytes.Clone(ev.Data)
		if d.hasCalls {
			cp = chatEditDelta(cp, func(b []byte, d gjson.Result) []byte { return rewrite.OpenAIDeleteMember(b, d, "tool_calls") })
		}
		if d.hasRole && s.stream > 0 {
			cp = chatEditDelta(cp, func(b []byte, d gjson.Result) []byte { return rewrite.OpenAIDeleteMember(b, d, "role") })
		}
		if d.hasFinish {
			cp = chatEditChoice(cp, "finish_reason", []byte("null"))
		}
		if usageObj {
			cp = chatEditRoot(cp, "usage", []byte("null"))
		}
		out = s.frame(nil, s.rewriteIDs(cp))
		s.roleSent = s.roleSent || d.hasRole
	}
	if d.hasFinish {
		h := chatHeld{data: bytes.Clone(ev.Data), finish: true, usage: usageObj}
		if d.hasCalls || forward {
			h.data = chatEditChoice(h.data, "delta", []byte("{}"))
		} else {
			h.raw = s.complete(ev.Raw)
		}
		s.cur.held = append(s.cur.held, h)
	}
	return out
}

// contChoice handles a chunk of a continuation stream whose choice 0 was
// read by choice (dm holds its delta members, tool calls already added):
// content goes through the seam filter, reasoning is dropped, and a chunk
// left without text is dropped, except for its held finish.
func (s *chatSplicer) contChoice(ev *rewrite.Event, hasDelta bool, dm []gjson.Result, usageObj bool, content string, hasCalls, hasFinish, hasText bool) ([]byte, error) {
	emit := content
	if s.seam != nil {
		emit = s.seam.Write(content)
		if hasCalls || hasFinish {
			emit += s.seam.Flush() // the text ends here
		}
	}
	s.noteText(emit)
	hasRole := dm[0].Type == gjson.String
	forward := emit != "" || dm[2].Type == gjson.String && dm[2].Str != ""
	var out []byte
	switch {
	case forward && !hasDelta: // text flushed by a finish chunk without delta
		out = s.contentChunk(nil, emit)
	case forward:
		cp := bytes.Clone(ev.Data)
		for i, key := range chatDeltaKeys {
			if (key == "role" || key == "reasoning_content" || key == "reasoning" || key == "tool_calls") && dm[i].Exists() {
				cp = chatEditDelta(cp, func(b []byte, d gjson.Result) []byte { return rewrite.OpenAIDeleteMember(b, d, key) })
			}
		}
		if emit != content {
			cp = chatEditDelta(cp, func(b []byte, d gjson.Result) []byte { return jsonkit.SetMember(b, d, "content", jsonkit.Quote(emit)) })
		}
		if hasFinish {
			cp = chatEditChoice(cp, "finish_reason", []byte("null"))
		}
		if usageObj {
			cp = chatEditRoot(cp, "usage", []byte("null"))
		}
		out = s.frame(nil, s.rewriteIDs(cp))
	}
	if hasFinish {
		h := chatHeld{data: bytes.Clone(ev.Data), finish: true, usage: usageObj}
		if hasCalls || hasText || hasRole || forward || content != "" {
			h.data = chatEditChoice(h.data, "delta", []byte("{}"))
		} else {
			h.raw = s.complete(ev.Raw)
		}
		s.cur.held = append(s.cur.held, h)
	}
	return out, nil
}

// noteText records content the agent received (the tail a continuation's
// seam is decided against).
func (s *chatSplicer) noteText(t string) {
	if t == "" {
		return
	}
	s.text = append(s.text, t...)
	if n := len(s.text); n > 2*rewrite.SeamWindow {
		s.text = append(s.text[:0], s.text[n-rewrite.SeamWindow:]...)
	}
}

// flushSeam decides the seam of the current continuation if it is still
// open and appends the text it held to dst as a built content chunk.
func (s *chatSplicer) flushSeam(dst []byte) []byte {
	if s.seam == nil || s.seam.Decided() {
		return dst
	}
	t := s.seam.Flush()
	s.noteText(t)
	return s.contentChunk(dst, t)
}

// contentChunk appends a built chunk whose choice 0 delta is {"content":t}
// to dst (nothing when t is empty).
func (s *chatSplicer) contentChunk(dst []byte, t string) []byte {
	if t == "" {
		return dst
	}
	b := s.chunkHead()
	b = append(b, `,"choices":[{"index":0,"delta":{"content":`...)
	b = jsonkit.AppendString(b, t)
	b = append(b, `},"finish_reason":null}]`...)
	if s.usageNull {
		b = append(b, `,"usage":null`...)
	}
	return s.frame(dst, append(b, '}'))
}

// takePending returns the content chunk flushed by Next or Continue, once.
func (s *chatSplicer) takePending() []byte {
	p := s.pending
	s.pending = nil
	return p
}

// addCalls adds the tool-call fragments of one delta.
func (s *chatSplicer) addCalls(calls gjson.Result) error {
	var err error
	jsonkit.EachElement(calls, func(pos int, tc gjson.Result) bool {
		if !tc.IsObject() {
			err = fmt.Errorf("%w: tool_calls element is not an object", rewrite.ErrMalformedReply)
			return false
		}
		var m [4]gjson.Result
		if err = chatMembers(&tc, chatCallKeys, m[:]); err != nil {
			return false
		}
		idx, id, typ, fn := m[0], m[1], m[2], m[3]
		key := float64(pos)
		switch {
		case idx.Type == gjson.Number:
			key = jsonkit.Num(idx)
		case !jsonkit.IsNull(idx):
			err = fmt.Errorf("%w: tool_calls index is not a number", rewrite.ErrMalformedReply)
			return false
		}
		var f [2]gjson.Result
		if !jsonkit.IsNull(fn) && !fn.IsObject() {
			err = fmt.Errorf("%w: tool_calls function is not an object", rewrite.ErrMalformedReply)
			return false
		}
		if err = chatMembers(&fn, chatFuncKeys, f[:]); err != nil {
			return false
		}
		for _, v := range [...]gjson.Result{id, typ, f[0], f[1]} {
			if !jsonkit.IsNull(v) && v.Type != gjson.String {
				err = fmt.Errorf("%w: tool call field is not a string", rewrite.ErrMalformedReply)
				return false
			}
		}
		call := s.call(key)
		if !call.hasID && id.Str != "" {
			call.id, call.hasID = jsonkit.OwnedString(id), true
		}
		if call.typ == "" && typ.Str != "" {
			call.typ = jsonkit.OwnedString(typ)
		}
		if !call.hasName && f[0].Str != "" {
			call.name, call.hasName = jsonkit.OwnedString(f[0]), true
		}
		call.args = append(call.args, f[1].Str...)
		if s.watch.On() {
			s.watchCall(call, f[1].Str)
		}
		return true
	})
	return err
}

// call returns the call with upstream index key, adding it when new.
func (s *chatSplicer) call(key float64) *chatSpliceCall {
	for i := range s.cur.calls {
		if s.cur.calls[i].key == key {
			return &s.cur.calls[i]
		}
	}
	s.cur.calls = append(s.cur.calls, chatSpliceCall{key: key})
	return &s.cur.calls[len(s.cur.calls)-1]
}

// noteIDs records the first values of id, created, model (per stream and
// for the turn) and the turn's system_fingerprint.
func (s *chatSplicer) noteIDs(id, created, model, fp *gjson.Result) {
	set := func(dst *[]byte, r *gjson.Result) {
		if *dst == nil && r.Exists() {
			*dst = []byte(r.Raw)
		}
	}
	set(&s.cur.id, id)
	set(&s.cur.created, created)
	set(&s.cur.model, model)
	set(&s.firstID, id)
	set(&s.firstCreated, created)
	set(&s.firstModel, model)
	if fp.Type == gjson.String {
		set(&s.fingerprint, fp)
	}
}

// rewriteIDs sets a follow-up chunk's id and created to the first stream's.
func (s *chatSplicer) rewriteIDs(data []byte) []byte {
	if s.stream == 0 {
		return data
	}
	for _, kv := range [...]struct {
		key string
		val []byte
	}{{"id", s.firstID}, {"created", s.firstCreated}} {
		root, ok := jsonkit.RootObject(jsonkit.UnsafeString(data))
		if !ok || kv.val == nil {
			continue
		}
		var m [1]gjson.Result
		if chatMembers(&root, []string{kv.key}, m[:]) != nil {
			continue
		}
		if v := m[0]; v.Exists() && v.Raw != string(kv.val) {
			data = jsonkit.SetMember(data, root, kv.key, kv.val)
		}
	}
	return data
}

// chatEditRoot sets a root member of a chunk.
func chatEditRoot(data []byte, key string, raw []byte) []byte {
	root, ok := jsonkit.RootObject(jsonkit.UnsafeString(data))
	if !ok {
		return data
	}
	return jsonkit.SetMember(data, root, key, raw)
}

// chatEditChoice sets a member of a chunk's choice 0.
func chatEditChoice(data []byte, key string, raw []byte) []byte {
	root, ok := jsonkit.RootObject(jsonkit.UnsafeString(data))
	if !ok {
		return data
	}
	var m [7]gjson.Result
	_ = chatMembers(&root, chatRootKeys, m[:])
	c, ok, _ := chatChoice0(&m[3])
	if !ok {
		return data
	}
	return jsonkit.SetMember(data, c, key, raw)
}

// chatEditDelta applies edit to a chunk's choice 0 delta object.
func chatEditDelta(data []byte, edit func([]byte, gjson.Result) []byte) []byte {
	root, ok := jsonkit.RootObject(jsonkit.UnsafeString(data))
	if !ok {
		return data
	}
	var m [7]gjson.Result
	_ = chatMembers(&root, chatRootKeys, m[:])
	c, ok, _ := chatChoice0(&m[3])
	if !ok {
		return data
	}
	var cm [3]gjson.Result
	_ = chatMembers(&c, chatChoiceKeys, cm[:])
	if !cm[1].IsObject() {
		return data
	}
	return edit(data, cm[1])
}

// noteEOL takes the upstream's line ending from the first complete event.
func (s *chatSplicer) noteEOL(raw []byte) {
	if s.eolSet || len(raw) == 0 {
		return
	}
	switch {
	case bytes.HasSuffix(raw, []byte("\r\n")):
		s.eol = []byte("\r\n")
	case raw[len(raw)-1] == '\r':
		s.eol = []byte("\r")
	case raw[len(raw)-1] == '\n':
		s.eol = []byte("\n")
	default:
		return
	}
	s.eolSet = true
}

// complete returns a copy of raw ending in a blank line (an event cut by the
// end of the stream is closed, so that what follows stays a separate event).
func (s *chatSplicer) complete(raw []byte) []byte {
	out := bytes.Clone(raw)
	if s.stream > 0 {
		out = bytes.TrimPrefix(out, rewrite.BOM)
	}
	trimEOL := func(b []byte) ([]byte, bool) {
		switch {
		case bytes.HasSuffix(b, []byte("\r\n")):
			return b[:len(b)-2], true
		case len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r'):
			return b[:len(b)-1], true
		}
		return b, false
	}
	rest, ok := trimEOL(out)
	if !ok {
		out = append(out, s.eol...)
		return append(out, s.eol...)
	}
	if len(rest) == 0 {
		return out
	}
	if _, ok := trimEOL(rest); !ok {
		out = append(out, s.eol...)
	}
	return out
}

// pass returns an event to send as received.
func (s *chatSplicer) pass(raw []byte) []byte {
	if len(raw) == 0 {
		return nil
	}
	s.events++
	if s.stream > 0 && bytes.HasPrefix(raw, rewrite.BOM) || !chatComplete(raw) {
		return s.complete(raw)
	}
	return raw
}

// chatComplete reports whether raw ends with a blank line.
func chatComplete(raw []byte) bool {
	n := len(raw)
	switch {
	case n >= 2 && raw[n-1] == '\n' && raw[n-2] == '\n', n >= 2 && raw[n-1] == '\r' && raw[n-2] == '\r':
		return true
	case n >= 3 && raw[n-1] == '\n' && raw[n-2] == '\r' && (raw[n-3] == '\n' || raw[n-3] == '\r'):
		return true
	case n == 1 && (raw[0] == '\n' || raw[0] == '\r'), n == 2 && raw[0] == '\r' && raw[1] == '\n':
		return true
	}
	return false
}

// frame appends data as one data-only event in the upstream's framing.
func (s *chatSplicer) frame(dst, data []byte) []byte {
	s.events++
	for {
		i := bytes.IndexByte(data, '\n')
		line := data
		if i >= 0 {
			line = data[:i]
		}
		dst = append(dst, "data: "...)
		dst = append(dst, line...)
		dst = append(dst, s.eol...)
		if i < 0 {
			break
		}
		data = data[i+1:]
	}
	return append(dst, s.eol...)
}

// chunkHead starts a chunk the splicer builds: id, object, created, model
// and system_fingerprint of the first stream.
func (s *chatSplicer) chunkHead() []byte {
	or := func(v []byte, def string) []byte {
		if v == nil {
			return []byte(def)
		}
		return v
	}
	b := append([]byte(`{"id":`), or(s.firstID, `""`)...)
	b = append(b, `,"object":"chat.completion.chunk","created":`...)
	b = append(b, or(s.firstCreated, "0")...)
	b = append(b, `,"model":`...)
	b = append(b, or(s.firstModel, `""`)...)
	if s.fingerprint != nil {
		b = append(b, `,"system_fingerprint":`...)
		b = append(b, s.fingerprint...)
	}
	return b
}

// Done reports whether data: [DONE] or an error chunk arrived (the events
// after which IsTerminalEvent lets a Chat stream end): a stream that stops
// after its finish chunk without [DONE] was cut.
func (s *chatSplicer) Done() bool { return s.cur.done || s.cur.errored }

// Reply returns the current stream as a chat.completion: choice 0's text,
// refusal and reasoning, its tool calls in order of first appearance,
// finish_reason (null when none arrived) and the last usage object seen.
func (s *chatSplicer) Reply() ([]byte, error) {
	c := &s.cur
	or := func(v, alt []byte, def string) []byte {
		switch {
		case v != nil:
			return v
		case alt != nil:
			return alt
		}
		return []byte(def)
	}
	b := append([]byte(`{"id":`), or(c.id, s.firstID, `""`)...)
	b = append(b, `,"object":"chat.completion","created":`...)
	b = append(b, or(c.created, s.firstCreated, "0")...)
	b = append(b, `,"model":`...)
	b = append(b, or(c.model, s.firstModel, `""`)...)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	switch {
	case len(c.content) > 0 || (c.sawContent && len(c.calls) == 0):
		b = jsonkit.AppendString(b, string(c.content))
	default:
		b = append(b, "null"...)
	}
	b = append(b, `,"refusal":`...)
	if len(c.refusal) > 0 {
		b = jsonkit.AppendString(b, string(c.refusal))
	} else {
		b = append(b, "null"...)
	}
	if len(c.reasoningContent) > 0 {
		b = append(b, `,"reasoning_content":`...)
		b = jsonkit.AppendString(b, string(c.reasoningContent))
	}
	if len(c.reasoning) > 0 {
		b = append(b, `,"reasoning":`...)
		b = jsonkit.AppendString(b, string(c.reasoning))
	}
	if len(c.calls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i := range c.calls {
			if i > 0 {
				b = append(b, ',')
			}
			b = c.calls[i].appendCall(b)
		}
		b = append(b, ']')
	}
	b = append(b, `},"finish_reason":`...)
	if c.finish != "" {
		b = jsonkit.AppendString(b, c.finish)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, "}]"...)
	if c.usage != nil {
		b = append(b, `,"usage":`...)
		b = append(b, c.usage...)
	}
	return append(b, '}'), nil
}

// appendCall appends the call's {"id","type","function":{"name","arguments"}}.
func (c *chatSpliceCall) appendCall(b []byte) []byte {
	b = c.appendMembers(append(b, '{'))
	return append(b, '}')
}

// appendMembers appends "id":…,"type":…,"function":{"name":…,"arguments":…}.
func (c *chatSpliceCall) appendMembers(b []byte) []byte {
	b = append(b, `"id":`...)
	b = jsonkit.AppendString(b, c.id)
	b = append(b, `,"type":`...)
	typ := c.typ
	if typ == "" {
		typ = "function"
	}
	b = jsonkit.AppendString(b, typ)
	b = append(b, `,"function":{"name":`...)
	b = jsonkit.AppendString(b, c.name)
	b = append(b, `,"arguments":`...)
	b = jsonkit.AppendString(b, string(c.args))
	return append(b, '}')
}

// Release sends each kept call as one chunk carrying the whole call.
func (s *chatSplicer) Release(remove, first []int) ([]byte, error) {
	if s.finished {
		return nil, fmt.Errorf("%w: Release after Finish", errChatSplice)
	}
	if s.cur.released {
		return nil, fmt.Errorf("%w: Release called twice for one stream", errChatSplice)
	}
	order, err := rewrite.OpenAICallOrder(len(s.cur.calls), remove, first)
	if err != nil {
		return nil, err
	}
	s.cur.released, s.cur.kept = true, len(order)
	out := s.flushSeam(s.takePending())
	for _, i := range order {
		out = s.frame(out, s.callChunk(i))
		s.calls++
	}
	return out, nil
}

// callChunk builds the chunk carrying call i of the current stream as the
// agent's call number s.calls.
func (s *chatSplicer) callChunk(i int) []byte {
	c := &s.cur.calls[i]
	b := s.chunkHead()
	b = append(b, `,"choices":[{"index":0,"delta":{"tool_calls":[{"index":`...)
	b = strconv.AppendInt(b, int64(s.calls), 10)
	b = append(b, ',')
	b = c.appendMembers(b)
	b = append(b, `}]},"finish_reason":null}]`...)
	if s.usageNull {
		b = append(b, `,"usage":null`...)
	}
	return append(b, '}')
}

func (s *chatSplicer) Next() {
	s.pending = s.flushSeam(s.pending)
	s.seam = nil
	s.usage = chatMergeUsage(s.usage, s.cur.usage)
	s.cur = chatSpliceStream{}
	s.stream++
}

// Continue starts a continuation stream: a follow-up whose content runs on
// in the content the agent has seen, with the seam de-duplicated (see the
// top of this file).
func (s *chatSplicer) Continue() {
	s.Next()
	s.cur.cont = true
	if len(s.text) > 0 {
		s.seam = rewrite.NewSeamFilter(string(s.text))
	}
}

// chatMergeUsage folds a stream's usage into the turn's as MergeReplies does.
func chatMergeUsage(acc, next []byte) []byte {
	switch {
	case next == nil:
		return acc
	case acc == nil:
		return next
	}
	return rewrite.OpenAIMergeUsage(gjson.ParseBytes(acc), gjson.ParseBytes(next), chatUsageKeys)
}

// Finish sends the last stream's held terminal events: the finish chunk
// (finish_reason "stop" when the engine removed every tool call and it was
// "tool_calls" or "function_call"; "length" and "content_filter" are kept so
// the agent still learns of a cut), the usage chunk with usage merged over
// the streams, and [DONE]. When an earlier stream sent usage and the last
// did not, a usage chunk is built before [DONE].
func (s *chatSplicer) Finish() ([]byte, error) {
	if s.finished {
		return nil, fmt.Errorf("%w: Finish called twice", errChatSplice)
	}
	s.finished = true
	c := &s.cur
	final := chatMergeUsage(s.usage, c.usage)
	out := s.flushSeam(s.takePending())
	fr := c.finish
	if c.released && c.kept == 0 && len(c.calls) > 0 && (fr == "tool_calls" || fr == "function_call") {
		fr = "stop"
	}
	usageSent := false
	usageChunk := func() {
		if final == nil || usageSent {
			return
		}
		b := s.chunkHead()
		b = append(b, `,"choices":[],"usage":`...)
		b = append(b, final...)
		out = s.frame(out, append(b, '}'))
		usageSent = true
	}
	for _, h := range c.held {
		if h.done {
			usageChunk()
			out = append(out, h.raw...)
			s.events++
			continue
		}
		d := h.data
		edited := false
		if s.stream > 0 {
			n := s.rewriteIDs(d)
			edited = edited || !bytes.Equal(n, d)
			d = n
		}
		if h.finish && fr != c.finish {
			d = chatEditChoice(d, "finish_reason", jsonkit.Quote(fr))
			edited = true
		}
		if h.usage && final != nil {
			if root, ok := jsonkit.RootObject(jsonkit.UnsafeString(d)); ok {
				var m [7]gjson.Result
				_ = chatMembers(&root, chatRootKeys, m[:])
				if m[4].Raw != string(final) {
					d = jsonkit.SetMember(d, root, "usage", final)
					edited = true
				}
			}
			usageSent = true
		}
		if !edited && h.raw != nil {
			out = append(out, h.raw...)
			s.events++
		} else {
			out = s.frame(out, d)
		}
	}
	if len(c.held) > 0 {
		usageChunk()
	}
	return out, nil
}

func (s *chatSplicer) Events() int { return s.events }
