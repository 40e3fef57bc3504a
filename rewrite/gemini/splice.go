package gemini

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/tidwall/gjson"
)

// This file holds the Gemini streamGenerateContent (alt=sse) StreamSplicer.
//
// Every event is `data: <GenerateContentResponse chunk>`; only
// candidates[0] is looked at (as ParseReply does). Parts are never rebuilt:
// each part of the agent's stream is the upstream part byte for byte, so a
// thoughtSignature stays on the part it came with.
//
//   - A chunk without functionCall parts and without finishReason passes at
//     once: its Raw verbatim on the first stream; on a follow-up its data
//     with responseId set to the first stream's (the rest of the chunk is
//     kept byte for byte).
//   - functionCall parts are held. A chunk mixing them with text or thought
//     parts is forwarded as a copy holding only the other parts (the parts
//     array is the only edit).
//   - The terminal chunk (finishReason, or a prompt block without
//     candidates) is held whole when it has no functionCall part or only
//     functionCall parts. When it also has text, the text goes at once in a
//     copy without finishReason and usageMetadata, and only the calls are
//     held.
//   - Release sends one chunk with the kept calls, in EditReply's order,
//     the first stream's responseId and modelVersion. When it changes
//     nothing and every call came in the held terminal chunk, it sends
//     nothing: the calls stay in that chunk.
//   - Finish ends the reply. The held terminal chunk is re-sent: unchanged
//     on a single stream (so a turn the engine did not touch reaches the
//     agent byte for byte), otherwise with the first stream's responseId and
//     the usage merged over the streams. When there is no held chunk left
//     to carry them (its text or calls went out earlier), the finishReason
//     and merged usage come in a chunk of its own whose only part is
//     {"text":""}. That is the form the API itself uses to end some streams;
//     a chunk with empty parts ("parts":[]) is avoided because the genai Go
//     SDK's Chat (v1.77.0, Chat.SendStream) then marks the whole turn
//     invalid and leaves it out of the curated history, whereas a part
//     without data is accepted and skipped.
//   - Next, when the terminal chunk is still held, queues its parts (calls
//     included only when they were released) in a copy without
//     finishReason and usageMetadata, sent ahead of the follow-up's first
//     output.
//   - An {"error":…} chunk is sent at once; the stream is then done and
//     Finish sends nothing.
//   - Continue starts a continuation stream (truncation recovery): see the
//     end of this file.
//
// Usage is merged as MergeReplies merges it: candidatesTokenCount and
// thoughtsTokenCount summed, the rest (prompt counts) from the last stream
// that has usageMetadata, totalTokenCount recomputed.
//
// Events are framed with the upstream's line ending (CRLF for Google).
// Whitespace-only data events are dropped (no client can parse them).

var (
	errGeminiFinished = errors.New("rewrite: gemini splicer: event after Finish")
	errGeminiReleased = errors.New("rewrite: gemini splicer: event after Release")
	errGeminiFailed   = errors.New("rewrite: gemini stream ended with an error chunk")
	emptyTextPart     = []byte(`{"text":""}`)
)

type geminiSplicer struct {
	// c is what readParts found in the chunk Feed is taking: kept here,
	// not in the frames under Feed (see chunk).
	c        geminiChunkParts
	eol      []byte // line ending of the upstream ("\r\n" until seen)
	eolSeen  bool
	events   int
	stream   int // 0 for the first stream
	finished bool
	failed   bool // an error chunk was sent

	firstID, firstModel []byte // raw JSON strings of the first stream
	merged              []byte // usage merged over the streams before this one
	pending             []byte // events to send ahead of the next output

	// Current stream.
	done     bool
	released bool
	parts    [][]byte // every part, raw, in order
	calls    [][]byte // the functionCall parts, raw, in order
	usage    []byte   // last usageMetadata
	finish   []byte   // raw finishReason of the terminal chunk
	model    []byte
	id       []byte
	feedback []byte // promptFeedback

	// Held terminal chunk (held is false once its parts went out).
	held      bool
	termData  []byte
	termRaw   []byte
	termText  []int // element indices of its non-call parts
	termCalls int   // index in calls of its first call
	termNCall int

	// Truncation recovery (see Continue).
	open  bool                // the last part the agent got is a text part
	tail  []byte              // the end of the agent's trailing run of text parts
	cont  bool                // the current stream continues the reply
	seam  *rewrite.SeamFilter // set until the continuation's first text run is decided
	inRun bool                // the continuation's first text run has started

	watch rewrite.CallWatch // the tool calls' observer (observe.go)

	// Scratch, reused from chunk to chunk so that a forwarded chunk
	// allocates nothing: the chunk's parts and their text indices
	// (readParts), the bytes Feed returns for a chunk passed as it came,
	// and the arena the raw parts are kept in.
	elems  []gjson.Result
	text   []int
	outBuf []byte
	arena  rewrite.Arena
}

func newGeminiSplicer() *geminiSplicer {
	return &geminiSplicer{eol: []byte("\r\n")}
}

func (s *geminiSplicer) Done() bool  { return s.done }
func (s *geminiSplicer) Events() int { return s.events }

// frame appends data as one event, one data line per line.
func (s *geminiSplicer) frame(dst, data []byte) []byte {
	for {
		i := 0
		for i < len(data) && data[i] != '\n' && data[i] != '\r' {
			i++
		}
		dst = append(dst, "data: "...)
		dst = append(dst, data[:i]...)
		dst = append(dst, s.eol...)
		if i == len(data) {
			break
		}
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	s.events++
	return append(dst, s.eol...)
}

// trimEOL removes one line ending from the end of b.
func trimEOL(b []byte) ([]byte, bool) {
	switch {
	case bytes.HasSuffix(b, []byte("\r\n")):
		return b[:len(b)-2], true
	case bytes.HasSuffix(b, []byte("\n")), bytes.HasSuffix(b, []byte("\r")):
		return b[:len(b)-1], true
	}
	return b, false
}

// passRaw appends an upstream event's raw bytes, completed with the blank
// line a stream cut inside the event lacks (so what follows stays apart).
func (s *geminiSplicer) passRaw(dst, raw []byte) []byte {
	s.events++
	dst = append(dst, raw...)
	r, ok := trimEOL(raw)
	if !ok {
		return append(append(dst, s.eol...), s.eol...)
	}
	if _, ok := trimEOL(r); !ok {
		return append(dst, s.eol...)
	}
	return dst
}

// learnEOL takes the line ending from the first event that has one.
func (s *geminiSplicer) learnEOL(raw []byte) {
	if s.eolSeen {
		return
	}
	switch {
	case bytes.HasSuffix(raw, []byte("\r\n")):
		s.eol = []byte("\r\n")
	case bytes.HasSuffix(raw, []byte("\n")):
		s.eol = []byte("\n")
	case bytes.HasSuffix(raw, []byte("\r")):
		s.eol = []byte("\r")
	default:
		return
	}
	s.eolSeen = true
}

// out prepends the pending events to b.
func (s *geminiSplicer) out(b []byte) []byte {
	if len(s.pending) == 0 {
		return b
	}
	o := append(s.pending, b...)
	s.pending = nil
	return o
}

func (s *geminiSplicer) Feed(ev *rewrite.Event) ([]byte, error) {
	if s.finished {
		return nil, errGeminiFinished
	}
	s.learnEOL(ev.Raw)
	if !ev.HasData() || len(bytes.TrimSpace(ev.Data)) == 0 {
		if ev.IsComment() && len(ev.Raw) > 0 {
			return s.out(s.passRaw(nil, ev.Raw)), nil // ping or comment
		}
		return s.out(nil), nil
	}
	if s.failed {
		return nil, nil // nothing follows an error
	}
	root, err := rewrite.ParseReplyRoot(ev.Data)
	if err != nil {
		return nil, err
	}
	if errorChunk(&root) {
		s.failed, s.done = true, true
		if s.stream == 0 {
			return s.out(s.passRaw(nil, ev.Raw)), nil
		}
		return s.out(s.frame(nil, ev.Data)), nil
	}
	if s.released {
		return nil, errGeminiReleased
	}
	var out []byte
	if s.held {
		// A chunk after the terminal one: the held chunk cannot be re-sent
		// as it was; its text goes now.
		if out, err = s.sendHeld(nil, s.termText); err != nil {
			return nil, err
		}
	}
	b, err := s.chunk(ev, &root)
	if err != nil {
		return nil, err
	}
	if out != nil {
		b = append(out, b...)
	}
	return s.out(b), nil
}

// geminiChunkParts is what readParts finds in a chunk's candidate 0.
type geminiChunkParts struct {
	cand, partsArr gjson.Result
	elems          []gjson.Result // the parts
	text           []int          // indices of the parts that are not calls
	firstCall      int            // index in s.calls of the chunk's first call
	ncall          int            // the chunk's calls
}

// errorChunk reports whether a chunk is an error (an error member and no
// candidates).
func errorChunk(root *gjson.Result) bool {
	return jsonkit.MemberRaw(root.Raw, "error") != "" && jsonkit.MemberRaw(root.Raw, "candidates") == ""
}

// chunk handles one GenerateContentResponse chunk: readParts and
// readMetadata record it, then a continuation's chunk goes to contChunk and
// any other to passChunk.
//
// A streamed turn's goroutine runs it on top of its whole reading chain:
// what the chunk holds (s.c, root, each part) is kept in the splicer and
// passed by pointer, and its members are looked up with jsonkit (Member,
// MemberRaw), not gjson's Get, so that the frames under Feed fit in the
// stream's first 4 KB of stack.
func (s *geminiSplicer) chunk(ev *rewrite.Event, root *gjson.Result) ([]byte, error) {
	c := &s.c
	if err := s.readParts(root, c); err != nil {
		return nil, err
	}
	for i := range c.elems {
		if err := s.readPart(c, i); err != nil {
			return nil, err
		}
	}
	c.ncall = len(s.calls) - c.firstCall
	s.text = c.text // the scratch, grown
	terminal := s.readMetadata(root, &c.cand)
	if s.cont {
		return s.contChunk(ev, c.partsArr, c.elems, c.ncall, terminal)
	}
	return s.passChunk(ev, c, terminal)
}

// readParts checks the shape of candidate 0 and lists its parts in c;
// chunk then reads each (readPart).
func (s *geminiSplicer) readParts(root *gjson.Result, c *geminiChunkParts) error {
	*c = geminiChunkParts{}
	// jsonkit's lookups, not gjson's Get: they need far less stack.
	cands := jsonkit.Member(*root, "candidates")
	if !jsonkit.IsNull(cands) && !cands.IsArray() {
		return errChunkShape("candidates must be an array", -1)
	}
	c.cand = jsonkit.FirstElement(cands)
	if !jsonkit.IsNull(c.cand) && !c.cand.IsObject() {
		return errChunkShape("candidates[0] must be an object", -1)
	}
	content := jsonkit.Member(c.cand, "content")
	if !jsonkit.IsNull(content) && !content.IsObject() {
		return errChunkShape("candidates[0].content must be an object", -1)
	}
	c.partsArr = jsonkit.Member(content, "parts")
	if !jsonkit.IsNull(c.partsArr) && !c.partsArr.IsArray() {
		return errChunkShape("candidates[0].content.parts must be an array", -1)
	}
	// elems and text are the splicer's scratch, valid until the next
	// chunk; raw parts are copied into the part arena.
	s.elems = jsonkit.ElementsOf(s.elems[:0], c.partsArr)
	c.elems, c.text = s.elems, s.text[:0]
	c.firstCall = len(s.calls)
	return nil
}

// readPart records part i of the chunk: a call, or a part that is not one
// (c.text).
//
//go:noinline
func (s *geminiSplicer) readPart(c *geminiChunkParts, i int) error {
	p := &c.elems[i]
	if !p.IsObject() {
		return errChunkShape("candidates[0].content.parts[%d] must be an object", i)
	}
	raw := s.arena.KeepString(p.Raw)
	s.parts = append(s.parts, raw)
	fc := memberEither(p, "functionCall", "function_call")
	if !fc.IsObject() {
		c.text = append(c.text, i)
		return nil
	}
	s.calls = append(s.calls, raw)
	if s.watch.On() {
		s.watchCall(fc)
	}
	return nil
}

// errChunkShape is the error of a chunk whose candidate 0 is not shaped as
// what (a part's index in it when i >= 0).
//
//go:noinline
func errChunkShape(what string, i int) error {
	if i >= 0 {
		what = fmt.Sprintf(what, i)
	}
	return fmt.Errorf("%w: %s", rewrite.ErrMalformedReply, what)
}

// memberEither is either with jsonkit.Member's lookups (for the chunks of
// a stream): obj's member camel, or else snake.
func memberEither(obj *gjson.Result, camel, snake string) gjson.Result {
	v := jsonkit.Member(*obj, camel)
	if !v.Exists() {
		v = jsonkit.Member(*obj, snake)
	}
	return v
}

// readMetadata records the chunk's ids, model, usage, prompt feedback and
// finish reason, and reports whether the chunk ends its stream (a finish
// reason, or a blocked prompt without a candidate).
func (s *geminiSplicer) readMetadata(root, cand *gjson.Result) (terminal bool) {
	if s.stream == 0 {
		if s.firstID == nil {
			s.firstID = rawString(jsonkit.Member(*root, "responseId"))
		}
		if s.firstModel == nil {
			s.firstModel = rawString(jsonkit.Member(*root, "modelVersion"))
		}
	}
	if s.id == nil {
		s.id = rawString(jsonkit.Member(*root, "responseId"))
	}
	if s.model == nil {
		s.model = rawString(jsonkit.Member(*root, "modelVersion"))
	}
	if u := jsonkit.Member(*root, "usageMetadata"); u.IsObject() {
		s.usage = append(s.usage[:0], u.Raw...) // owned by the splicer alone (Next)
	}
	if pf := jsonkit.Member(*root, "promptFeedback"); pf.IsObject() {
		s.feedback = []byte(pf.Raw)
	}
	fr := memberEither(cand, "finishReason", "finish_reason")
	terminal = fr.Type == gjson.String && fr.Str != ""
	if terminal {
		s.finish = []byte(fr.Raw)
	} else if !cand.Exists() && jsonkit.Member(jsonkit.Member(*root, "promptFeedback"), "blockReason").Type == gjson.String {
		terminal = true // the prompt was blocked: no candidate comes
	}
	return terminal
}

// passChunk renders a chunk of the first stream or a follow-up for the
// agent: its text parts pass, its calls are held back, and its terminal
// chunk is held (or, with text beside calls, sent without the calls) until
// the engine decides the turn.
func (s *geminiSplicer) passChunk(ev *rewrite.Event, c *geminiChunkParts, terminal bool) ([]byte, error) {
	elems, text, ncall := c.elems, c.text, c.ncall
	if !terminal {
		switch {
		case ncall == 0:
			s.seeElems(elems, nil)
			if s.stream == 0 {
				s.outBuf = s.passRaw(s.outBuf[:0], ev.Raw) // scratch: valid until the next Feed
				return s.outBuf, nil
			}
			return s.frame(nil, s.withFirstID(ev.Data)), nil
		case len(text) == 0:
			return nil, nil
		}
		data, err := s.edit(ev.Data, elems, text, false)
		if err != nil {
			return nil, err
		}
		s.seeElems(elems, text)
		return s.frame(nil, data), nil
	}

	s.done = true
	if ncall > 0 && len(text) > 0 {
		data, err := s.edit(ev.Data, elems, text, true)
		if err != nil {
			return nil, err
		}
		s.seeElems(elems, text)
		return s.frame(nil, data), nil
	}
	s.held = true
	s.termData = bytes.Clone(ev.Data)
	s.termRaw = bytes.Clone(ev.Raw)
	s.termText = slices.Clone(text) // text is scratch
	s.termCalls, s.termNCall = c.firstCall, ncall
	return nil, nil
}

// rawString returns a copy of r's raw JSON when r is a non-empty string.
func rawString(r gjson.Result) []byte {
	if r.Type != gjson.String || r.Str == "" {
		return nil
	}
	return []byte(r.Raw)
}

// withFirstID returns data with responseId set to the first stream's when
// both have one.
func (s *geminiSplicer) withFirstID(data []byte) []byte {
	if s.stream == 0 || s.firstID == nil {
		return data
	}
	root, ok := jsonkit.RootObject(jsonkit.UnsafeString(data))
	if !ok || root.Get("responseId").Type != gjson.String {
		return data
	}
	return jsonkit.SetMember(data, root, "responseId", s.firstID)
}

// edit returns a copy of chunk data keeping only the parts at keep (element
// indices of elems, the chunk's parts), without finishReason and
// usageMetadata when strip is set, and with the first stream's responseId.
func (s *geminiSplicer) edit(data []byte, elems []gjson.Result, keep []int, strip bool) ([]byte, error) {
	out := data
	if len(keep) != len(elems) {
		out = rewrite.BlocksReorder(data, elems, keep)
	}
	return s.finishEdit(out, strip)
}

// finishEdit removes finishReason and usageMetadata from the edited chunk
// data out when strip is set, checks it and sets the first stream's
// responseId.
func (s *geminiSplicer) finishEdit(out []byte, strip bool) ([]byte, error) {
	if strip {
		root, ok := jsonkit.RootObject(jsonkit.UnsafeString(out))
		if !ok {
			return nil, rewrite.ErrNotObject
		}
		cand := root.Get("candidates.0")
		if _, key := either(cand, "finishReason", "finish_reason"); cand.Get(key).Exists() {
			out = removeMember(out, cand, key)
		}
		if root, ok = jsonkit.RootObject(jsonkit.UnsafeString(out)); !ok {
			return nil, rewrite.ErrNotObject
		}
		if root.Get("usageMetadata").Exists() {
			out = removeMember(out, root, "usageMetadata")
		}
	}
	if !gjson.ValidBytes(out) {
		return nil, fmt.Errorf("%w: cannot edit chunk", rewrite.ErrMalformedReply)
	}
	return s.withFirstID(out), nil
}

// removeMember returns body without obj's member key and one separator
// next to it.
func removeMember(body []byte, obj gjson.Result, key string) []byte {
	type member struct{ k, v gjson.Result }
	var ms []member
	at := -1
	obj.ForEach(func(k, v gjson.Result) bool {
		if at < 0 && k.Str == key {
			at = len(ms)
		}
		ms = append(ms, member{k, v})
		return true
	})
	switch {
	case at < 0:
		return body
	case at+1 < len(ms):
		return jsonkit.Splice(body, ms[at].k.Index, ms[at+1].k.Index)
	case at > 0:
		return jsonkit.Splice(body, jsonkit.ValueEnd(ms[at-1].v), jsonkit.ValueEnd(ms[at].v))
	}
	return jsonkit.Splice(body, ms[at].k.Index, jsonkit.ValueEnd(ms[at].v))
}

// sendHeld stops holding the terminal chunk and sends its parts at keep
// (element indices) in a copy without finishReason and usageMetadata.
func (s *geminiSplicer) sendHeld(dst []byte, keep []int) ([]byte, error) {
	if !s.held {
		return dst, nil
	}
	s.held = false
	if len(keep) == 0 {
		return dst, nil
	}
	root, err := rewrite.ParseReplyRoot(s.termData)
	if err != nil {
		return nil, err
	}
	elems := rewrite.BlocksElems(root.Get("candidates.0.content.parts"))
	data, err := s.edit(s.termData, elems, keep, true)
	if err != nil {
		return nil, err
	}
	s.seeElems(elems, keep)
	return s.frame(dst, data), nil
}

// build renders a chunk with the given parts.
func (s *geminiSplicer) build(parts [][]byte, finish, usage []byte) []byte {
	b := make([]byte, 0, 256)
	b = append(b, `{"candidates":[{"content":{"role":"model","parts":[`...)
	for i, p := range parts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, p...)
	}
	b = append(b, "]}"...)
	if finish != nil {
		b = append(b, `,"finishReason":`...)
		b = append(b, finish...)
	}
	b = append(b, `,"index":0}]`...)
	if usage != nil {
		b = append(b, `,"usageMetadata":`...)
		b = append(b, usage...)
	}
	if m := firstOf(s.firstModel, s.model); m != nil {
		b = append(b, `,"modelVersion":`...)
		b = append(b, m...)
	}
	if id := firstOf(s.firstID, s.id); id != nil {
		b = append(b, `,"responseId":`...)
		b = append(b, id...)
	}
	return append(b, '}')
}

func firstOf(a, b []byte) []byte {
	if a != nil {
		return a
	}
	return b
}

// Reply returns the current stream as a non-streaming
// GenerateContentResponse: every part in order, byte for byte (adjacent
// text deltas stay separate parts).
func (s *geminiSplicer) Reply() ([]byte, error) {
	if s.failed {
		return nil, errGeminiFailed
	}
	b := make([]byte, 0, 256)
	b = append(b, '{')
	if len(s.parts) > 0 || s.finish != nil || s.feedback == nil {
		b = append(b, `"candidates":[{"content":{"role":"model","parts":[`...)
		for i, p := range s.parts {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, p...)
		}
		b = append(b, "]}"...)
		if s.finish != nil {
			b = append(b, `,"finishReason":`...)
			b = append(b, s.finish...)
		}
		b = append(b, `,"index":0}]`...)
	}
	sep := func() {
		if len(b) > 1 {
			b = append(b, ',')
		}
	}
	if s.feedback != nil {
		sep()
		b = append(b, `"promptFeedback":`...)
		b = append(b, s.feedback...)
	}
	if s.usage != nil {
		sep()
		b = append(b, `"usageMetadata":`...)
		b = append(b, s.usage...)
	}
	if s.model != nil {
		sep()
		b = append(b, `"modelVersion":`...)
		b = append(b, s.model...)
	}
	if s.id != nil {
		sep()
		b = append(b, `"responseId":`...)
		b = append(b, s.id...)
	}
	return append(b, '}'), nil
}

// Release sends the kept calls. remove and first index the stream's
// functionCall parts (ParseReply's ToolCall.Index).
func (s *geminiSplicer) Release(remove, first []int) ([]byte, error) {
	if s.finished || s.failed {
		return nil, nil
	}
	if s.released {
		return nil, errors.New("rewrite: gemini splicer: Release called twice")
	}
	idx := make([]int, len(s.calls))
	for i := range idx {
		idx[i] = i
	}
	order, _, err := rewrite.BlocksCallOrder(len(s.calls), idx, remove, first)
	if err != nil {
		return nil, err
	}
	s.released = true
	noop := len(order) == len(s.calls)
	for k, c := range order {
		noop = noop && k == c
	}
	flush := s.endRun() // a continuation cut before its terminal chunk
	if flush == nil && noop && s.held && s.termCalls == 0 {
		return s.out(nil), nil // the calls stay in the held terminal chunk
	}
	var parts [][]byte
	if flush != nil {
		parts = append(parts, flush)
	}
	if s.held {
		s.held = false
		root, err := rewrite.ParseReplyRoot(s.termData)
		if err != nil {
			return nil, err
		}
		elems := rewrite.BlocksElems(root.Get("candidates.0.content.parts"))
		for _, i := range s.termText {
			parts = append(parts, []byte(elems[i].Raw))
		}
	}
	for _, c := range order {
		parts = append(parts, s.calls[c])
	}
	if len(parts) == 0 {
		return s.out(nil), nil
	}
	s.seeRaw(parts)
	return s.out(s.frame(nil, s.build(parts, nil, nil))), nil
}

// implicitRelease releases every call when the engine did not call Release.
func (s *geminiSplicer) implicitRelease() error {
	if s.released || s.failed || !s.done {
		return nil
	}
	b, err := s.Release(nil, nil)
	s.pending = append(s.pending, b...)
	return err
}

// Next starts a follow-up stream. A terminal chunk still held goes out
// first (see the file comment).
func (s *geminiSplicer) Next() {
	if s.finished || s.failed {
		return
	}
	s.flushRun()
	_ = s.implicitRelease() // cannot fail: nothing is removed
	if s.held {
		keep := s.termText
		if s.released && s.termNCall > 0 {
			keep = keep[:0:0] // every part: the calls were kept as they are
			for i := 0; i < len(s.termText)+s.termNCall; i++ {
				keep = append(keep, i)
			}
		}
		if b, err := s.sendHeld(s.pending, keep); err == nil {
			s.pending = b
		}
	}
	s.merged = slices.Clone(mergeGeminiUsage(s.merged, s.usage)) // s.usage is reused
	s.stream++
	s.done, s.released, s.held = false, false, false
	s.parts, s.calls, s.usage, s.finish, s.model, s.id, s.feedback = nil, nil, nil, nil, nil, nil, nil
	s.termData, s.termRaw, s.termText = nil, nil, nil
	s.cont, s.seam, s.inRun = false, nil, false
}

// Finish sends the terminal chunk: finishReason of the last stream and the
// merged usage.
func (s *geminiSplicer) Finish() ([]byte, error) {
	if s.finished {
		return nil, nil
	}
	s.finished = true
	if s.failed {
		return nil, nil
	}
	s.flushRun()
	if err := s.implicitRelease(); err != nil {
		return nil, err
	}
	usage := mergeGeminiUsage(s.merged, s.usage)
	out := s.out(nil)
	if s.held {
		s.held = false
		if s.stream == 0 {
			s.events++
			return append(out, s.termRaw...), nil
		}
		data := s.withFirstID(s.termData)
		if usage != nil {
			if root, ok := jsonkit.RootObject(jsonkit.UnsafeString(data)); ok {
				data = jsonkit.SetMember(data, root, "usageMetadata", usage)
			}
		}
		return s.frame(out, data), nil
	}
	if s.finish == nil && usage == nil {
		return out, nil
	}
	return s.frame(out, s.build([][]byte{emptyTextPart}, s.finish, usage)), nil
}

// mergeGeminiUsage folds the usageMetadata u of a later stream into acc as
// MergeReplies does.
func mergeGeminiUsage(acc, u []byte) []byte {
	if u == nil {
		return acc
	}
	if acc == nil {
		return u
	}
	u1, u2 := gjson.ParseBytes(acc), gjson.ParseBytes(u)
	cands := rewrite.BlocksCount(u1, "candidatesTokenCount") + rewrite.BlocksCount(u2, "candidatesTokenCount")
	thoughts := rewrite.BlocksCount(u1, "thoughtsTokenCount") + rewrite.BlocksCount(u2, "thoughtsTokenCount")
	total := rewrite.BlocksCount(u2, "promptTokenCount") + rewrite.BlocksCount(u2, "toolUsePromptTokenCount") + cands + thoughts
	keys := []string{"candidatesTokenCount"}
	vals := []int64{cands}
	if u1.Get("thoughtsTokenCount").Exists() || u2.Get("thoughtsTokenCount").Exists() {
		keys, vals = append(keys, "thoughtsTokenCount"), append(vals, thoughts)
	}
	keys, vals = append(keys, "totalTokenCount"), append(vals, total)
	return rewrite.BlocksSetCounts(bytes.Clone(u), keys, vals)
}

// Truncation recovery.
//
// Gemini has no block events: a text "block" is a run of text parts, and
// nothing but the terminal chunk (always held) or a later non-text part
// closes it. So a reply's last text stays open at the end of every stream
// as it is, and the output of a stream that is not continued is unchanged.
// The splicer follows the parts the agent got: open is set while the last
// of them is a text part (thought:true parts are not text), tail holds the
// end of that trailing run of text.
//
// Continue starts a continuation stream like Next (a held terminal chunk's
// text goes out first, then the continuation's chunks carry the first
// stream's responseId), and
//   - drops the continuation's thought parts, and every chunk left without
//     parts by that;
//   - when open, passes its first run of text parts (see continue.go:
//     the run starts at the first text part and ends at the next part that
//     is neither text nor thought, or at the terminal chunk) through a
//     SeamFilter built from tail: a part whose text the filter holds is
//     dropped, the one that decides the seam carries what the filter gives
//     (only its "text" value is edited), and the filter is flushed into a
//     {"text":…} part where the run ends (before the part that ends it);
//   - holds functionCall parts and the terminal chunk as on every stream
//     (the held terminal chunk holds the edited parts).
//
// Reply still returns the continuation's own parts, byte for byte.

var _ rewrite.ContinueSplicer = (*geminiSplicer)(nil)

// Continue starts a continuation stream (see above).
func (s *geminiSplicer) Continue() {
	if s.finished || s.failed {
		return
	}
	s.Next()
	s.cont = true
	if s.open && len(s.tail) > 0 {
		s.seam = rewrite.NewSeamFilter(string(s.tail))
	}
}

// see follows one part the agent gets.
func (s *geminiSplicer) see(p *gjson.Result) {
	if geminiKindOf(p) != gpText {
		s.open, s.tail = false, s.tail[:0]
		return
	}
	s.open = true
	s.tail = append(s.tail, jsonkit.Member(*p, "text").Str...)
	if len(s.tail) > 2*rewrite.SeamWindow {
		s.tail = s.tail[:copy(s.tail, s.tail[len(s.tail)-rewrite.SeamWindow:])]
	}
}

// seeElems follows the parts elems at keep (every part when keep is nil).
func (s *geminiSplicer) seeElems(elems []gjson.Result, keep []int) {
	if keep == nil {
		for i := range elems {
			s.see(&elems[i])
		}
		return
	}
	for _, i := range keep {
		s.see(&elems[i])
	}
}

// seeRaw follows raw parts.
func (s *geminiSplicer) seeRaw(parts [][]byte) {
	for _, p := range parts {
		part := gjson.ParseBytes(p)
		s.see(&part)
	}
}

// endRun ends the continuation's first text run and returns the part that
// carries what the seam filter still held, or nil.
func (s *geminiSplicer) endRun() []byte {
	if s.seam == nil || !s.inRun {
		return nil
	}
	t := s.seam.Flush()
	s.seam, s.inRun = nil, false
	if t == "" {
		return nil
	}
	return geminiTextPart(t)
}

// flushRun queues what the seam filter still holds (a continuation that
// ended without its terminal chunk).
func (s *geminiSplicer) flushRun() {
	if p := s.endRun(); p != nil {
		s.pending = s.frame(s.pending, s.build([][]byte{p}, nil, nil))
		s.seeRaw([][]byte{p})
	}
}

// contParts returns the parts of a continuation chunk the agent gets (out:
// its text through the seam filter, a run's flushed text, other parts;
// never the calls), the calls, and whether out is elems without the calls.
func (s *geminiSplicer) contParts(elems []gjson.Result, terminal bool) (out, calls [][]byte, same bool) {
	out = make([][]byte, 0, len(elems)+1)
	same = true
	for _, p := range elems {
		switch geminiKindOf(&p) {
		case gpCall:
			calls = append(calls, []byte(p.Raw))
			if f := s.endRun(); f != nil {
				out, same = append(out, f), false
			}
			continue
		case gpThought:
			same = false
			continue
		case gpText:
			if s.seam != nil {
				s.inRun = true
				t := p.Get("text").Str
				got := s.seam.Write(t)
				if s.seam.Decided() {
					s.seam, s.inRun = nil, false // the rest passes through
				}
				switch {
				case got == "":
					same = false
					continue
				case got != t:
					out, same = append(out, geminiWithText(p, got)), false
					continue
				}
			}
		default:
			if f := s.endRun(); f != nil {
				out, same = append(out, f), false
			}
		}
		out = append(out, []byte(p.Raw))
	}
	if terminal {
		if f := s.endRun(); f != nil {
			out, same = append(out, f), false
		}
	}

	return out, calls, same
}

// contChunk handles a chunk of a continuation stream (see above); its parts
// are already recorded.
func (s *geminiSplicer) contChunk(ev *rewrite.Event, arr gjson.Result, elems []gjson.Result, ncall int, terminal bool) ([]byte, error) {
	out, calls, same := s.contParts(elems, terminal)
	if !terminal {
		switch {
		case len(elems) == 0 || same && ncall == 0:
			s.seeElems(elems, nil)
			return s.frame(nil, s.withFirstID(ev.Data)), nil
		case len(out) == 0:
			return nil, nil
		}
		data, err := s.finishEdit(jsonkit.Splice(ev.Data, arr.Index, jsonkit.ValueEnd(arr), geminiPartsArray(out)), false)
		if err != nil {
			return nil, err
		}
		s.seeRaw(out)
		return s.frame(nil, data), nil
	}

	s.done = true
	var emitted []byte
	switch {
	case len(elems) == 0:
		if len(out) > 0 { // the filter's text, without a parts array to carry it
			emitted = s.frame(nil, s.build(out, nil, nil))
			s.seeRaw(out)
		}
		out, same = nil, true // the chunk is held as it came
	case ncall > 0 && len(out) > 0:
		data, err := s.finishEdit(jsonkit.Splice(ev.Data, arr.Index, jsonkit.ValueEnd(arr), geminiPartsArray(out)), true)
		if err != nil {
			return nil, err
		}
		s.seeRaw(out)
		return s.frame(nil, data), nil
	case ncall == 0 && len(out) == 0:
		return nil, nil // Finish ends the reply with a part of its own
	}
	data := ev.Data
	if !same {
		if len(out) == 0 {
			out = calls
		}
		data = jsonkit.Splice(ev.Data, arr.Index, jsonkit.ValueEnd(arr), geminiPartsArray(out))
	}
	s.held = true
	s.termData = bytes.Clone(data)
	s.termRaw = bytes.Clone(ev.Raw)
	s.termText = nil
	if ncall == 0 {
		for i := range out {
			s.termText = append(s.termText, i)
		}
	}
	s.termCalls, s.termNCall = len(s.calls)-ncall, ncall
	return emitted, nil
}

// geminiWithText returns a copy of part p with its text value set to t.
func geminiWithText(p gjson.Result, t string) []byte {
	raw := []byte(p.Raw)
	obj, ok := jsonkit.RootObject(jsonkit.UnsafeString(raw))
	if !ok {
		return geminiTextPart(t)
	}
	return jsonkit.SetMember(raw, obj, "text", jsonkit.AppendString(nil, t))
}
