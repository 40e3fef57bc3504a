package edits

import (
	"github.com/shepherd-proxy/shepherd/hooks/edits/recognize"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// file is what the session knows of one path.
type file struct {
	// exists: the file is known to exist (a read or a write of it
	// succeeded since it was last deleted).
	exists bool
	// content is its whole content, nil when unknown.
	content *string
}

// files is what a session knows of the paths it read and wrote: a path
// absent from the map was never seen.
type files map[string]file

// applied is one recognised edit replayed on files: the file before and
// after it, and the operation (OpWrite resolved to create or rewrite).
type applied struct {
	edit          recognize.Edit
	op            string
	before, after file
	beforeSeen    bool // the path was in files before the edit
}

// apply replays e on fs and returns what it did. A change whose before
// content is unknown, or that does not apply to it, leaves the after
// content unknown.
func (fs files) apply(e recognize.Edit) applied {
	before, seen := fs[e.Path]
	a := applied{edit: e, op: e.Op, before: before, beforeSeen: seen}
	switch e.Op {
	case recognize.OpWrite:
		a.op = state.EditCreate
		if before.exists {
			a.op = state.EditRewrite
		}
	case recognize.OpCreate:
		a.op = state.EditCreate
	case recognize.OpRewrite:
		a.op = state.EditRewrite
	case recognize.OpDelete:
		a.op = state.EditDelete
	default:
		a.op = state.EditModify
	}
	if a.op == state.EditCreate {
		empty := ""
		a.before = file{content: &empty}
	}
	switch {
	case a.op == state.EditDelete:
		a.after = file{content: ptr("")}
	case e.Content != nil:
		a.after = file{exists: true, content: ptr(*e.Content)}
	case a.before.content != nil:
		a.after = file{exists: true}
		if s, err := e.Apply(*a.before.content); err == nil {
			a.after.content = &s
		}
	default:
		a.after = file{exists: true}
	}
	if e.MoveTo != "" && a.op != state.EditDelete {
		fs[e.MoveTo] = a.after
		fs[e.Path] = file{content: ptr("")}
	} else {
		fs[e.Path] = a.after
	}
	return a
}

func ptr(s string) *string { return &s }

// callRef is a tool call of the history, found by its id.
type callRef struct {
	name     string
	args     []byte
	freeform bool
}

// history replays msgs, in order, on a new files: whole-file read results
// (recognize.Table.Read) make a file's content known; successful edits
// (their tool results not errors) change it. A result is read as
// resultText unwraps it (Gemini's JSON objects). Calls whose result is not in
// msgs, or came back as an error, change nothing. A result finds its call
// by id, or, where the API gives none (Gemini), as the oldest unanswered
// id-less call of its tool.
func history(t *recognize.Table, msgs []conv.Message) files {
	fs := files{}
	replayResults(msgs, func(c callRef, text string) {
		if path, content, ok := t.Read(c.name, c.args, text); ok {
			fs[path] = file{exists: true, content: ptr(content)}
			return
		}
		if !writes(t, c.name) {
			return
		}
		es, err := callEdits(t, c.name, c.args, c.freeform)
		if err != nil {
			return
		}
		for _, e := range es {
			fs.apply(e)
		}
	})
	return fs
}

// replayResults calls fn, in the order of msgs, for every tool result that
// is not an error, with the call it answers and its text (as resultText
// unwraps it). A result finds its call by id, or, where the API gives
// none (Gemini), as the oldest unanswered id-less call of its tool; a
// result whose call is not in msgs is skipped.
func replayResults(msgs []conv.Message, fn func(c callRef, text string)) {
	calls := map[string]callRef{}
	var anon map[string][]callRef // id-less calls by tool, oldest first
	for i := range msgs {
		for j := range msgs[i].Blocks {
			b := &msgs[i].Blocks[j]
			switch b.Kind {
			case conv.BlockToolCall:
				c := callRef{name: b.ToolName, args: b.Args, freeform: b.Freeform}
				if b.ToolCallID != "" {
					calls[b.ToolCallID] = c
				} else {
					if anon == nil {
						anon = map[string][]callRef{}
					}
					anon[b.ToolName] = append(anon[b.ToolName], c)
				}
			case conv.BlockToolResult:
				c, ok := calls[b.ToolCallID]
				if b.ToolCallID == "" {
					if q := anon[b.ToolName]; len(q) > 0 {
						c, ok = q[0], true
						anon[b.ToolName] = q[1:]
					}
				}
				text, isErr := resultText(b)
				if ok && !isErr {
					fn(c, text)
				}
			}
		}
	}
}

// try is apply without changing fs: what e would have done (a refused
// call).
func (fs files) try(e recognize.Edit) applied {
	tmp := files{}
	if f, ok := fs[e.Path]; ok {
		tmp[e.Path] = f
	}
	return tmp.apply(e)
}
