package recognize

import (
	"errors"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/hooks/intents/policy"
)

// Change is one replacement a call asks for, applied in order. When Old is
// not empty it is replaced by New: exactly once unless All (every
// occurrence) or Count (exactly Count occurrences, all replaced); when
// Old occurs several times and neither is set, Line (1-based), when not 0,
// picks the occurrence starting nearest to it. When Old is empty, New is
// inserted before line Line (1-based; 0 appends at the end), as lines.
// Regex and IgnoreCase make Old a pattern (Go's regexp syntax; the agent's
// own may differ), replacing every match, only in lines From..To when
// they are not 0. Ordered changes (Cline's SEARCH/REPLACE blocks) replace
// the first occurrence of Old at or after the end of the previous change,
// found as Cline finds it (exactly, by trimmed lines, by first and last
// lines, then anywhere); an empty Old replaces the whole content.
type Change struct {
	Old, New   string
	All        bool
	Count      int
	Line       int
	Regex      bool
	IgnoreCase bool
	From, To   int
	Ordered    bool
}

// NotebookCell is a notebook edit: the cell (by id, or "cell-N" for the
// N-th, 0-based), the new source, the cell type and the mode (replace,
// insert, delete).
type NotebookCell struct {
	ID, Source, Type, Mode string
}

// Edit is what a complete call asks for one file. Exactly one of Content
// (the whole new content), Changes, Patch or Cell says it, except for a
// deletion and for an operation the call does not detail (a shell
// command's target, an editor's undo): then none does.
type Edit struct {
	// Path is the file as the call names it (not normalised: relative
	// paths are relative to the agent's working directory); Op is OpWrite,
	// OpCreate, OpModify or OpDelete.
	Path, Op string
	Content  *string
	Changes  []Change
	// Patch is this file's section of an apply_patch patch, as written
	// (its header line included).
	Patch string
	Cell  *NotebookCell
	// MoveTo is where a patch moves the file ("" when it stays).
	MoveTo string
	// Size is the bytes the call carries for this file (content, new
	// strings, patch section).
	Size int64
}

// ErrPartial is wrapped by the error Edits returns with the edits it could
// tell when it could not tell them all (a shell command whose analysis is
// incomplete).
var ErrPartial = errors.New("the call's files are known only in part")

// Edits returns what a complete call asks for each file it writes, in the
// order the call names them (nil, nil for a tool the table does not know,
// a read tool, or a call that writes nothing such as an editor's view).
// args is the call's JSON arguments, or its raw input when freeform. The
// error says why the call cannot be read (invalid JSON, a missing or
// mistyped argument, a patch without file headers); with ErrPartial the
// edits returned are the ones known.
func (t *Table) Edits(tool string, args []byte, freeform bool) ([]Edit, error) {
	r := t.rule(tool)
	if r == nil {
		return nil, nil
	}
	edits, err := editsFor(r, args, freeform)
	if err != nil {
		err = fmt.Errorf("%s: %w", tool, err)
	}
	return edits, err
}

func editsFor(r *Rule, args []byte, freeform bool) ([]Edit, error) {
	switch {
	case r.Kind == KindRead:
		return nil, nil
	case r.Kind == KindPatch && freeform:
		return patchEdits(string(args))
	case r.Kind == KindShell && freeform:
		return shellEdits([]policy.ShellCommand{{Script: string(args)}})
	case freeform:
		return nil, errors.New("free-form input for a tool with JSON arguments")
	}
	if !gjson.ValidBytes(args) {
		return nil, errors.New("arguments are not valid JSON")
	}
	root := gjson.ParseBytes(args)
	if !root.IsObject() {
		return nil, errors.New("arguments are not a JSON object")
	}
	a := argReader{root: root}
	var e Edit
	if r.Kind != KindPatch && r.Kind != KindShell {
		e.Path = a.str(r.PathArg, true)
		if a.err == nil && e.Path == "" {
			a.err = fmt.Errorf("argument %q is empty", r.PathArg)
		}
	}
	switch r.Kind {
	case KindPatch:
		p := a.str(r.InputArg, true)
		if a.err != nil {
			return nil, a.err
		}
		return patchEdits(p)
	case KindShell:
		cmdOnly := *r
		cmdOnly.DirArg = ""
		sa, err := policy.ParseShellArgs([]string{shellEntry(cmdOnly)})
		if err != nil {
			return nil, err
		}
		cmds, _, err := sa.Commands(r.Tool, args)
		if err != nil {
			return nil, err
		}
		if dir := a.get(r.DirArg); dir.Type == gjson.String {
			for i := range cmds {
				cmds[i].Dir = dir.Str
			}
		}
		return shellEdits(cmds)
	case KindWrite:
		c := a.str(r.ContentArg, true)
		e.Op, e.Content, e.Size = OpWrite, &c, int64(len(c))
	case KindEdit, KindMultiEdit:
		a.changes(r, &e)
	case KindNotebook:
		cell := &NotebookCell{
			ID: a.str(r.CellArg, false), Source: a.str(r.ContentArg, false),
			Type: a.str(r.CellTypeArg, false), Mode: a.str(r.ModeArg, false),
		}
		if cell.Mode == "" {
			cell.Mode = "replace"
		}
		if cell.Mode != "delete" && !a.has(r.ContentArg) && a.err == nil {
			a.err = fmt.Errorf("argument %q is missing", r.ContentArg)
		}
		e.Op, e.Cell, e.Size = OpModify, cell, int64(len(cell.Source))
	case KindSearchReplace:
		d := a.str(r.DiffArg, true)
		if a.err == nil {
			e.Changes, a.err = parseBlocks(d)
		}
		for i := range e.Changes {
			e.Changes[i].Ordered = r.Ordered
		}
		e.Op, e.Size = OpModify, newSize(e.Changes)
		if r.Ordered && len(e.Changes) > 0 && e.Changes[0].Old == "" {
			// An empty first SEARCH replaces the whole file: the
			// content is known.
			if c, err := (Edit{Changes: e.Changes}).Apply(""); err == nil {
				e.Op, e.Content, e.Changes = OpWrite, &c, nil
			}
		}
	case KindInsert:
		line := a.int(r.LineArg, true)
		c := a.str(r.ContentArg, true)
		e.Op, e.Changes, e.Size = OpModify, []Change{{New: c, Line: line}}, int64(len(c))
	case KindEditor:
		if !a.has(r.CommandArg) {
			a.commandless(r, &e)
			break
		}
		switch cmd := a.str(r.CommandArg, true); cmd {
		case "create":
			c := a.str(r.ContentArg, true)
			e.Op, e.Content, e.Size = OpWrite, &c, int64(len(c))
		case "str_replace":
			ch := Change{Old: a.str(r.OldArg, true), New: a.str(r.NewArg, false)}
			if a.err == nil && ch.Old == "" {
				a.err = fmt.Errorf("argument %q is empty", r.OldArg)
			}
			e.Op, e.Changes, e.Size = OpModify, []Change{ch}, int64(len(ch.New))
		case "insert":
			ch := Change{New: a.str(r.NewArg, true), Line: a.int(r.LineArg, true) + 1}
			e.Op, e.Changes, e.Size = OpModify, []Change{ch}, int64(len(ch.New))
		case "undo_edit":
			e.Op = OpModify
		default:
			if a.err != nil {
				return nil, a.err
			}
			return nil, nil // view, or a command that writes nothing
		}
	default:
		return nil, fmt.Errorf("unknown kind %q", r.Kind)
	}
	if a.err != nil {
		return nil, a.err
	}
	return []Edit{e}, nil
}

// commandless reads an editor call without a command (Cline CLI's
// editor): with an insert line, NewArg is inserted before that line
// (1-based); with an old text, it is replaced by NewArg once; otherwise
// the file is created with NewArg.
func (a *argReader) commandless(r *Rule, e *Edit) {
	neu := a.str(r.NewArg, true)
	e.Op, e.Size = OpModify, int64(len(neu))
	switch old := a.str(r.OldArg, false); {
	case a.get(r.LineArg).Exists() && a.get(r.LineArg).Type != gjson.Null:
		line := a.int(r.LineArg, true)
		if line < 1 && a.err == nil {
			a.err = fmt.Errorf("argument %q is not a line number from 1", r.LineArg)
		}
		e.Changes = []Change{{New: neu, Line: line}}
	case old != "":
		e.Changes = []Change{{Old: old, New: neu}}
	default:
		e.Op, e.Content = OpWrite, &neu
	}
}

// changes reads the replacements of an edit or multiedit call into e.
func (a *argReader) changes(r *Rule, e *Edit) {
	e.Op = OpModify
	var elems []gjson.Result
	if v := a.get(r.EditsArg); r.EditsArg != "" && v.Exists() {
		if !v.IsArray() {
			a.fail(fmt.Errorf("argument %q is not an array", r.EditsArg))
			return
		}
		elems = v.Array()
		if len(elems) == 0 {
			a.fail(fmt.Errorf("argument %q is empty", r.EditsArg))
			return
		}
	} else if r.Kind == KindMultiEdit {
		a.fail(fmt.Errorf("argument %q is missing", r.EditsArg))
		return
	} else {
		elems = []gjson.Result{a.root}
	}
	for i, el := range elems {
		b := argReader{root: el}
		ch := Change{
			Old: b.str(r.OldArg, true), New: b.str(r.NewArg, true),
			All: r.All || b.bool(r.AllArg), Count: b.int(r.CountArg, false),
			Regex: b.bool(r.RegexArg), IgnoreCase: b.bool(r.CaseArg),
			From: b.int(r.FromArg, false), To: b.int(r.ToArg, false),
		}
		if b.err != nil {
			if len(elems) > 1 || r.Kind == KindMultiEdit {
				b.err = fmt.Errorf("%s element %d: %w", r.EditsArg, i, b.err)
			}
			a.fail(b.err)
			return
		}
		if ch.Count == 1 {
			ch.Count = 0 // one occurrence: the default
		}
		e.Changes = append(e.Changes, ch)
	}
	e.Size = newSize(e.Changes)
	// An empty old string in the first replacement creates the file
	// (Claude Code's Edit and MultiEdit, gemini-cli's replace): the
	// content is then known whole.
	if first := e.Changes[0]; first.Old == "" && !first.Regex {
		c := first.New
		for _, ch := range e.Changes[1:] {
			var err error
			if c, err = ch.apply(c); err != nil {
				return // the content stays unknown; Apply reports the error
			}
		}
		e.Op, e.Content, e.Changes = OpWrite, &c, nil
	}
}

func newSize(chs []Change) int64 {
	var n int64
	for _, ch := range chs {
		n += int64(len(ch.New))
	}
	return n
}
