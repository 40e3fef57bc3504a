package edits

import (
	"errors"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/hooks/edits/recognize"
)

// callArgs is what Table.Edits reads of a call as conv.ToolCall (and a
// tool_call block) carries it: a free-form call's raw input text (the view
// wraps it as {"input": text}), else the JSON arguments.
func callArgs(args []byte, freeform bool) []byte {
	if !freeform {
		return args
	}
	if in := gjson.GetBytes(args, "input"); in.Type == gjson.String {
		return []byte(in.Str)
	}
	return args
}

// callEdits is Table.Edits on a call's view: the edits it could tell (all
// of them, or the known part of a call only partly understood).
func callEdits(t *recognize.Table, tool string, args []byte, freeform bool) ([]recognize.Edit, error) {
	es, err := t.Edits(tool, callArgs(args, freeform), freeform)
	if err != nil && !errors.Is(err, recognize.ErrPartial) {
		return nil, err
	}
	return es, nil
}

// writes reports whether tool writes files (the table knows it and it is
// not a read tool).
func writes(t *recognize.Table, tool string) bool {
	r, ok := t.Rule(tool)
	return ok && r.Kind != recognize.KindRead
}
