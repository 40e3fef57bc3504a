package recognize

import (
	"errors"
	"fmt"
	"strings"

	"github.com/shepherd-proxy/shepherd/hooks/intents/policy"
)

// Operations a call asks for a file. OpCreate, OpRewrite, OpModify and
// OpDelete are the strings of state.EditCreate etc.; OpWrite means the
// call writes the whole file, and whether that creates or rewrites it is
// for the caller to tell (it knows whether the file existed).
const (
	OpCreate  = "create"
	OpRewrite = "rewrite"
	OpModify  = "modify"
	OpDelete  = "delete"
	OpWrite   = "write"
)

// Kind is how a tool's arguments say what it writes.
type Kind string

// Kinds of file-writing tools, and KindRead for tools whose result is a
// file's content.
const (
	// KindWrite writes a whole file: PathArg, ContentArg (Claude Code
	// Write, gemini-cli write_file, Roo/Cline write_to_file).
	KindWrite Kind = "write"
	// KindEdit replaces OldArg by NewArg in PathArg, every occurrence when
	// AllArg is true (or the rule's All), exactly CountArg occurrences when
	// given (Claude Code Edit, gemini-cli replace, Roo search_and_replace).
	// When EditsArg is set and present, its elements hold the replacements
	// instead (Roo's operations array).
	KindEdit Kind = "edit"
	// KindMultiEdit is KindEdit with the replacements in the array EditsArg
	// (Claude Code MultiEdit).
	KindMultiEdit Kind = "multiedit"
	// KindNotebook edits one cell of a Jupyter notebook (Claude Code
	// NotebookEdit): PathArg, ContentArg (the new source), CellArg,
	// ModeArg (replace, insert, delete), CellTypeArg.
	KindNotebook Kind = "notebook"
	// KindPatch carries an apply_patch patch (Codex, Cline CLI) in
	// InputArg, or as the raw input of a free-form call; it may touch
	// several files.
	KindPatch Kind = "patch"
	// KindSearchReplace carries SEARCH/REPLACE blocks in DiffArg for the
	// file PathArg (Roo apply_diff, Cline replace_in_file).
	KindSearchReplace Kind = "search_replace"
	// KindInsert inserts ContentArg before line LineArg (1-based; 0
	// appends) of PathArg (Roo insert_content).
	KindInsert Kind = "insert"
	// KindEditor is a str_replace_editor-style tool: CommandArg is create
	// (ContentArg is the file), str_replace (OldArg, NewArg), insert (NewArg
	// after line LineArg, 0 for the top), undo_edit, or a command that
	// writes nothing (view). Without a command (Cline CLI's editor), NewArg
	// is inserted before line LineArg when it is given, replaces OldArg
	// when that is not empty, and is the new file's content otherwise.
	KindEditor Kind = "editor"
	// KindShell runs a shell command (CommandArg, a script or with Argv an
	// argument vector, run in DirArg); the files it writes are known only
	// when the command is complete.
	KindShell Kind = "shell"
	// KindRead reads a file: its result is the content (Format "numbered":
	// cat -n style lines, as Claude Code's Read; "plain": the text as is,
	// with gemini-cli's truncation notice recognised), whole unless
	// OffsetArg or LimitArg is given.
	KindRead Kind = "read"
)

// Read result formats (Rule.Format).
const (
	FormatNumbered = "numbered"
	FormatPlain    = "plain"
)

// Rule says how one tool writes (or reads) files. Argument names are gjson
// paths into the call's JSON arguments; PathArg may list alternatives
// separated by "," (the first present one is used). Arguments a kind does
// not use are ignored; WithDefaults fills in the unset ones.
type Rule struct {
	Tool string
	Kind Kind

	PathArg    string // the file path (all kinds but patch and shell)
	ContentArg string // write, insert, notebook (new source), editor create
	OldArg     string // edit, multiedit and editor: the text replaced
	NewArg     string // edit, multiedit and editor: its replacement (editor insert: the text)
	AllArg     string // edit, multiedit: a boolean, replace every occurrence
	CountArg   string // edit: the number of occurrences expected (all replaced)
	All        bool   // edit: every occurrence is replaced, whatever AllArg says
	// Ordered (search_replace): each block is searched from where the
	// previous one ended, and an empty SEARCH replaces the whole file
	// (Cline's replace_in_file).
	Ordered     bool
	EditsArg    string // multiedit (and edit, when present): the array of replacements
	RegexArg    string // edit: a boolean, OldArg is a regular expression
	CaseArg     string // edit: a boolean, matching ignores case
	FromArg     string // edit: first line the replacement is limited to
	ToArg       string // edit: last line the replacement is limited to
	DiffArg     string // search_replace: the SEARCH/REPLACE blocks
	LineArg     string // insert, editor insert: the line number
	CommandArg  string // editor: the command; shell: the command
	Argv        bool   // shell: CommandArg is an argument vector
	DirArg      string // shell: the working directory
	InputArg    string // patch: the patch (a JSON call's member)
	CellArg     string // notebook: the cell id
	ModeArg     string // notebook: replace, insert or delete
	CellTypeArg string // notebook: code or markdown
	OffsetArg   string // read: the first line read (absent: from the top)
	LimitArg    string // read: the number of lines read (absent: all)
	Format      string // read: FormatNumbered or FormatPlain
}

// kindDefaults are the argument names a kind uses when a rule leaves them
// unset: Claude Code's.
var kindDefaults = map[Kind]Rule{
	KindWrite:         {PathArg: "file_path", ContentArg: "content"},
	KindEdit:          {PathArg: "file_path", OldArg: "old_string", NewArg: "new_string", AllArg: "replace_all"},
	KindMultiEdit:     {PathArg: "file_path", EditsArg: "edits", OldArg: "old_string", NewArg: "new_string", AllArg: "replace_all"},
	KindNotebook:      {PathArg: "notebook_path", ContentArg: "new_source", CellArg: "cell_id", ModeArg: "edit_mode", CellTypeArg: "cell_type"},
	KindPatch:         {InputArg: "input"},
	KindSearchReplace: {PathArg: "path", DiffArg: "diff"},
	KindInsert:        {PathArg: "path", LineArg: "line", ContentArg: "content"},
	KindEditor:        {PathArg: "path", CommandArg: "command", ContentArg: "file_text", OldArg: "old_str", NewArg: "new_str", LineArg: "insert_line"},
	KindShell:         {CommandArg: "command"},
	KindRead:          {PathArg: "file_path", OffsetArg: "offset", LimitArg: "limit", Format: FormatNumbered},
}

// WithDefaults returns r with the arguments its kind uses and r leaves
// unset filled in with the kind's defaults (Claude Code's names:
// file_path, content, old_string, …; see Builtin).
func (r Rule) WithDefaults() Rule {
	d := kindDefaults[r.Kind]
	for _, f := range r.fields() {
		if *f.v == "" {
			*f.v = *d.field(f.key)
		}
	}
	return r
}

type ruleField struct {
	key string
	v   *string
}

// fields lists the string fields of r by their config key.
func (r *Rule) fields() []ruleField {
	return []ruleField{
		{"path", &r.PathArg}, {"content", &r.ContentArg}, {"old", &r.OldArg}, {"new", &r.NewArg},
		{"all", &r.AllArg}, {"count", &r.CountArg}, {"edits", &r.EditsArg}, {"regex", &r.RegexArg},
		{"case", &r.CaseArg}, {"from", &r.FromArg}, {"to", &r.ToArg}, {"diff", &r.DiffArg},
		{"line", &r.LineArg}, {"command", &r.CommandArg}, {"dir", &r.DirArg}, {"input", &r.InputArg},
		{"cell", &r.CellArg}, {"mode", &r.ModeArg}, {"cell_type", &r.CellTypeArg},
		{"offset", &r.OffsetArg}, {"limit", &r.LimitArg}, {"format", &r.Format},
	}
}

func (r *Rule) field(key string) *string {
	for _, f := range r.fields() {
		if f.key == key {
			return f.v
		}
	}
	return nil
}

// ParseRules builds rules from their config form, one string per rule:
// the tool name, then space-separated key=value settings, kind first
// required:
//
//	write_note kind=write path=note_path content=body
//	patch_files kind=patch input=patch
//	run kind=shell command=argv argv=true dir=cwd
//
// Keys are kind and the argument keys path, content, old, new, all,
// count, edits, regex, case, from, to, diff, line, command, dir, input,
// cell, mode, cell_type, offset, limit (gjson paths), format (numbered or
// plain), argv, replace_all and ordered (true or false: Rule.Argv,
// Rule.All, Rule.Ordered).
// Unset arguments take the kind's defaults (WithDefaults). The error,
// when not nil, names every bad entry.
func ParseRules(entries []string) ([]Rule, error) {
	var (
		rules []Rule
		bad   []string
	)
	for _, e := range entries {
		r, err := parseRule(e)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%q: %v", e, err))
			continue
		}
		rules = append(rules, r)
	}
	if len(bad) > 0 {
		return nil, errors.New("invalid edit tool rules: " + strings.Join(bad, "; "))
	}
	return rules, nil
}

func parseRule(e string) (Rule, error) {
	fields := strings.Fields(e)
	if len(fields) < 2 || strings.Contains(fields[0], "=") {
		return Rule{}, errors.New(`want "tool kind=KIND [key=value ...]"`)
	}
	r := Rule{Tool: fields[0]}
	seen := map[string]bool{}
	for _, kv := range fields[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || v == "" {
			return Rule{}, fmt.Errorf("%q: want key=value", kv)
		}
		if seen[k] {
			return Rule{}, fmt.Errorf("%s is set twice", k)
		}
		seen[k] = true
		switch k {
		case "kind":
			r.Kind = Kind(v)
			if _, known := kindDefaults[r.Kind]; !known {
				return Rule{}, fmt.Errorf("unknown kind %q (want write, edit, multiedit, notebook, patch, search_replace, insert, editor, shell or read)", v)
			}
		case "argv", "replace_all", "ordered":
			b, err := parseBool(v)
			if err != nil {
				return Rule{}, fmt.Errorf("%s: %w", k, err)
			}
			switch k {
			case "argv":
				r.Argv = b
			case "replace_all":
				r.All = b
			default:
				r.Ordered = b
			}
		case "format":
			if v != FormatNumbered && v != FormatPlain {
				return Rule{}, fmt.Errorf("format %q: want numbered or plain", v)
			}
			r.Format = v
		default:
			f := r.field(k)
			if f == nil {
				return Rule{}, fmt.Errorf("unknown key %q", k)
			}
			for _, alt := range strings.Split(v, ",") {
				if msg := checkArgPath(alt); msg != "" {
					return Rule{}, fmt.Errorf("%s=%s: %s", k, v, msg)
				}
			}
			*f = v
		}
	}
	if r.Kind == "" {
		return Rule{}, errors.New("kind is missing")
	}
	if r.Kind == KindShell {
		cmdOnly := r.WithDefaults()
		cmdOnly.DirArg = ""
		if _, err := policy.ParseShellArgs([]string{shellEntry(cmdOnly)}); err != nil {
			return Rule{}, err
		}
	}
	return r, nil
}

func parseBool(v string) (bool, error) {
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%q: want true or false", v)
}

// checkArgPath rejects argument paths that cannot name a value.
func checkArgPath(p string) string {
	if p == "" {
		return "empty argument path"
	}
	if strings.HasPrefix(p, ".") || strings.HasSuffix(p, ".") || strings.Contains(p, "..") {
		return "empty segment in argument path"
	}
	return ""
}

// shellEntry is r in policy.ParseShellArgs's form.
func shellEntry(r Rule) string {
	spec := r.CommandArg
	if r.Argv {
		spec = "argv(" + spec + ")"
	}
	if r.DirArg != "" {
		spec += "@" + r.DirArg
	}
	return r.Tool + ":" + spec
}
