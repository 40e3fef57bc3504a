package recognize

import "strings"

// Started is a file a streaming call writes, announced as soon as its path
// is complete in the arguments (a replacement's also waits for the first
// byte of its old text; an editor's for its command). Op is the operation
// as far as it is known then: OpWrite for whole-file writes (and a
// replacement of an empty old text, which creates the file), OpCreate,
// OpModify or OpDelete from a patch's headers, OpModify for replacements
// and inserts, OpDelete or OpWrite for a shell command's targets. Edits,
// from the complete call, has the last word.
type Started struct{ Path, Op string }

// Watch follows one tool call's arguments while they stream. Get one from
// Table.Watch; it is not safe for concurrent use.
type Watch struct {
	rule     *Rule
	freeform bool
	mode     watchMode

	js    jsonScanner
	roles []role // per wanted key
	path  capture
	cmd   capture // editor: the command
	patch patchScanner
	buf   []byte // modeBuffer: the arguments so far

	// What tells the operation of a replacement (an empty old text
	// creates the file) and of an editor without a command (Cline CLI):
	// waitOp is set when the watch waits for them.
	waitOp                               bool
	oldText, oldEmpty, lineSeen, newSeen bool

	announced []string
	out       []Started
	finished  bool
}

type watchMode uint8

const (
	modePath   watchMode = iota // a top-level path argument, scanned
	modePatch                   // a patch, scanned line by line
	modeBuffer                  // kept whole, analysed by Finish
)

type role uint8

const (
	rolePath role = iota
	roleCommand
	rolePatch
	roleOld  // edit, editor: the text replaced
	roleNew  // edit, editor: the new text or content (edit: or its replacements)
	roleLine // editor: the insert line
)

// maxPathLen bounds a captured path (a longer one is not announced; Edits
// still reads it); maxBuffer bounds the arguments a buffering Watch keeps
// (longer ones announce nothing).
const (
	maxPathLen = 4096
	maxBuffer  = 1 << 20
)

// capture collects one wanted string value.
type capture struct {
	b          []byte
	seen, done bool
	tooLong    bool
}

func (c *capture) reset() { c.b, c.seen, c.done, c.tooLong = c.b[:0], true, false, false }

func (c *capture) add(s string, limit int) {
	if c.tooLong {
		return
	}
	if len(c.b)+len(s) > limit {
		c.tooLong = true
		return
	}
	c.b = append(c.b, s...)
}

// newWatch returns the Watch of a call of rule's tool, nil when the call
// writes no file the rule can tell.
func newWatch(r *Rule, freeform bool) *Watch {
	w := &Watch{rule: r, freeform: freeform}
	switch r.Kind {
	case KindRead:
		return nil
	case KindShell:
		w.mode = modeBuffer
		return w
	case KindPatch:
		w.mode = modePatch
		w.patch.line = make([]byte, 0, 256)
		if freeform {
			return w
		}
		var keys []string
		for _, alt := range strings.Split(r.InputArg, ",") {
			if !simpleKey(alt) {
				w.mode = modeBuffer
				return w
			}
			keys = append(keys, alt)
			w.roles = append(w.roles, rolePatch)
		}
		w.js = newJSONScanner(keys)
		return w
	}
	if freeform {
		return nil // a JSON tool's arguments are JSON
	}
	var keys []string
	for _, alt := range strings.Split(r.PathArg, ",") {
		if !simpleKey(alt) {
			w.mode = modeBuffer
			return w
		}
		keys = append(keys, alt)
		w.roles = append(w.roles, rolePath)
	}
	switch r.Kind {
	case KindEditor:
		for _, a := range []struct {
			spec string
			role role
		}{{r.CommandArg, roleCommand}, {r.OldArg, roleOld}, {r.NewArg, roleNew}, {r.ContentArg, roleNew}, {r.LineArg, roleLine}} {
			for _, alt := range strings.Split(a.spec, ",") {
				if !simpleKey(alt) {
					w.mode = modeBuffer
					return w
				}
				keys = append(keys, alt)
				w.roles = append(w.roles, a.role)
			}
		}
		w.waitOp = true
	case KindEdit:
		// Wait for the old text's first byte: empty, the call creates
		// the file. Arguments that cannot be scanned are not waited for.
		var extra []string
		var roles []role
		scannable := true
		for _, a := range []struct {
			spec string
			role role
		}{{r.OldArg, roleOld}, {r.NewArg, roleNew}, {r.EditsArg, roleNew}} {
			for _, alt := range strings.Split(a.spec, ",") {
				switch {
				case alt == "":
				case !simpleKey(alt):
					scannable = false
				default:
					extra = append(extra, alt)
					roles = append(roles, a.role)
				}
			}
		}
		if scannable && len(roles) > 0 && roles[0] == roleOld {
			keys = append(keys, extra...)
			w.roles = append(w.roles, roles...)
			w.waitOp = true
		}
	}
	w.mode = modePath
	w.js = newJSONScanner(keys)
	w.path.b = make([]byte, 0, 128)
	w.cmd.b = make([]byte, 0, 16)
	return w
}

// simpleKey reports whether a gjson path names a top-level member
// literally (no nesting, wildcards, queries or escapes).
func simpleKey(p string) bool {
	return p != "" && !strings.ContainsAny(p, `.*?#|@!\{}[],`)
}

// Feed takes the next fragment of the call's arguments (JSON text; the raw
// input text for a free-form call) and returns the files whose paths
// became complete in it, each path once over the call, in order (nil when
// none). It costs O(len(fragment)) and allocates nothing unless it
// returns something (or, for a shell command, keeps the fragment). It
// never panics, whatever the input; after Finish it returns nil.
func (w *Watch) Feed(fragment string) []Started {
	if w == nil || w.finished {
		return nil
	}
	switch w.mode {
	case modeBuffer:
		if len(w.buf)+len(fragment) <= maxBuffer {
			w.buf = append(w.buf, fragment...)
		} else {
			w.buf = append(w.buf[:0], "\x00"...) // too large: never valid
		}
	case modePatch:
		if w.freeform {
			w.patch.write(fragment, w)
		} else {
			w.js.feed(fragment, w)
		}
	case modePath:
		w.js.feed(fragment, w)
	}
	out := w.out
	w.out = nil
	return out
}

// Finish is called once the call is complete (its arguments whole) and
// returns the files not announced by Feed yet: a patch's last line without
// its newline, a shell command's targets (known only when the command is
// complete), paths in nested arguments. It never panics; later calls
// return nil.
func (w *Watch) Finish() []Started {
	if w == nil || w.finished {
		return nil
	}
	w.finished = true
	switch w.mode {
	case modePatch:
		w.patch.flush(w)
	case modeBuffer:
		edits, _ := editsFor(w.rule, w.buf, w.freeform)
		for _, e := range edits {
			w.announce(e.Path, e.Op)
		}
	case modePath:
		w.ready(true)
	}
	out := w.out
	w.out = nil
	return out
}

// announce records path as started, once per call.
func (w *Watch) announce(path, op string) {
	if path == "" || op == "" {
		return
	}
	for _, a := range w.announced {
		if a == path {
			return
		}
	}
	w.announced = append(w.announced, path)
	w.out = append(w.out, Started{Path: path, Op: op})
}

// start, text and end are the jsonScanner's sink.
func (w *Watch) start(k int, c byte) bool {
	switch w.roles[k] {
	case rolePath:
		if w.path.seen || c != '"' {
			return false // an earlier alternative won, or not a string
		}
		w.path.reset()
	case roleCommand:
		if w.cmd.seen || c != '"' {
			return false
		}
		w.cmd.reset()
	case rolePatch:
		if w.path.seen || c != '"' {
			return false // one patch per call: the first present
		}
		w.path.seen = true
		w.patch.reset()
	case roleOld:
		return c == '"' // non-empty text makes it a replacement
	case roleLine:
		w.lineSeen = w.lineSeen || c != 'n'
		w.pathReady()
		return false
	case roleNew:
		w.newSeen = true
		w.pathReady()
		return false
	}
	return c == '"'
}

func (w *Watch) text(k int, s string) {
	switch w.roles[k] {
	case rolePath:
		if !w.path.done {
			w.path.add(s, maxPathLen)
		}
	case roleCommand:
		w.cmd.add(s, 64)
	case rolePatch:
		w.patch.write(s, w)
	case roleOld:
		if s != "" && !w.oldText && !w.oldEmpty {
			w.oldText = true
			w.pathReady()
		}
	}
}

func (w *Watch) end(k int) {
	switch w.roles[k] {
	case rolePath:
		w.path.done = true
	case roleCommand:
		w.cmd.done = true
	case rolePatch:
		w.patch.flush(w)
		return
	case roleOld:
		if w.oldText {
			return
		}
		w.oldEmpty = true
	default:
		return
	}
	w.pathReady()
}

// pathReady announces the path once it and what its operation depends on
// are known. A replacement (KindEdit) waits for its old text: empty, it
// creates the file (OpWrite), otherwise it modifies it; a new text or
// replacements array seen first means a modification. An editor waits
// for its command, or without one (Cline CLI's editor) for an old text
// or insert line (a modification), an empty old text or the start of the
// new text with neither before it (taken for a creation). final is set
// by Finish: what is known then decides.
func (w *Watch) pathReady() { w.ready(false) }

func (w *Watch) ready(final bool) {
	if !w.path.done || w.path.tooLong || len(w.announced) > 0 {
		return
	}
	path := string(w.path.b)
	if !w.waitOp {
		w.announce(path, pathOp(w.rule.Kind, ""))
		return
	}
	if w.rule.Kind == KindEdit {
		switch {
		case w.oldEmpty:
			w.announce(path, OpWrite)
		case w.oldText || w.newSeen || final:
			w.announce(path, OpModify)
		}
		return
	}
	switch {
	case w.cmd.done:
		w.announce(path, pathOp(KindEditor, string(w.cmd.b)))
	case w.cmd.seen:
	case w.oldText || w.lineSeen:
		w.announce(path, OpModify)
	case w.newSeen || w.oldEmpty:
		w.announce(path, OpWrite)
	}
}

// pathOp is the operation a call of kind asks for its file, as far as it
// is known before the call is complete ("" when it writes nothing).
func pathOp(k Kind, editorCommand string) string {
	switch k {
	case KindWrite:
		return OpWrite
	case KindEditor:
		switch editorCommand {
		case "create":
			return OpWrite
		case "str_replace", "insert", "undo_edit":
			return OpModify
		}
		return ""
	}
	return OpModify
}

// patchHeader is the patch scanner's sink.
func (w *Watch) patchHeader(op, path string) { w.announce(path, op) }
