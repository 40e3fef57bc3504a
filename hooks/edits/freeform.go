package edits

import (
	"errors"

	"github.com/shepherd-proxy/shepherd/hooks/edits/recognize"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// callEdits is Table.Edits on a call's view: the edits it could tell (all
// of them, or the known part of a call only partly understood).
func callEdits(t *recognize.Table, tool string, args []byte, freeform bool) ([]recognize.Edit, error) {
	es, err := t.Edits(tool, conv.CallInput(args, freeform), freeform)
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
