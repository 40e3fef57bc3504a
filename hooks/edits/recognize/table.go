package recognize

// Table knows which tools write (or read) files and how. Build it with
// NewTable; it is immutable and safe for concurrent use. A nil *Table
// knows no tool.
type Table struct {
	byTool map[string]*Rule
}

// NewTable builds a table from rules, each completed with its kind's
// defaults (Rule.WithDefaults). A later rule for a tool replaces an
// earlier one, so configured rules listed after Builtin() override the
// built-in ones.
func NewTable(rules []Rule) *Table {
	t := &Table{byTool: make(map[string]*Rule, len(rules))}
	for _, r := range rules {
		r = r.WithDefaults()
		t.byTool[r.Tool] = &r
	}
	return t
}

func (t *Table) rule(tool string) *Rule {
	if t == nil {
		return nil
	}
	return t.byTool[tool]
}

// Knows reports whether the table has a rule for tool (a writing or a
// read tool).
func (t *Table) Knows(tool string) bool { return t.rule(tool) != nil }

// Rule returns the rule for tool, completed with its kind's defaults.
func (t *Table) Rule(tool string) (Rule, bool) {
	r := t.rule(tool)
	if r == nil {
		return Rule{}, false
	}
	return *r, true
}

// Watch returns a Watch for one call of tool (freeform: its arguments are
// raw input text rather than JSON), or nil when the tool writes no file:
// unknown to the table, a read tool, or a JSON tool called free-form.
func (t *Table) Watch(tool string, freeform bool) *Watch {
	r := t.rule(tool)
	if r == nil {
		return nil
	}
	return newWatch(r, freeform)
}
