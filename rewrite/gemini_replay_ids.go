package rewrite

import (
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// AgentCallIDs is implemented by a TurnCodec whose clients give their own
// ids to tool calls the API sent without one, and send the history back with
// them: gemini-cli names id-less functionCall parts "<name>_<epoch ms>_<n>"
// and answers them with functionResponse parts carrying the same ids. The
// ledger replays the model's turn as the API sent it (no ids), so without
// the agent's ids the replayed calls and the agent's responses would not
// pair up. Anthropic tool_use ids and Chat/Responses call ids are given by
// the provider and echoed unchanged, so those codecs do not implement it.
type AgentCallIDs interface {
	// AdoptAgentCallIDs returns items (the model's turn replayed in place of
	// the agent's copy at index pos of body) with the agent's call ids
	// copied onto the replayed calls the agent's copy also holds.
	// Everything else stays byte for byte (signatures stay where they are);
	// items is not modified.
	AdoptAgentCallIDs(body []byte, pos int, items [][]byte) ([][]byte, error)
}

var _ AgentCallIDs = geminiCodec{}

// callPart is one functionCall part: its call object, name, args and id.
type callPart struct {
	fc   gjson.Result
	name string
	args []byte
	id   string
}

// geminiCalls returns the functionCall parts of content c, in order.
func callParts(c gjson.Result) []callPart {
	var out []callPart
	for _, p := range agElems(c.Get("parts")) {
		fc, _ := either(p, "functionCall", "function_call")
		if !fc.IsObject() {
			continue
		}
		gc := callPart{fc: fc, name: fc.Get("name").String(), args: []byte(fc.Get("args").Raw)}
		if id := fc.Get("id"); id.Type == gjson.String {
			gc.id = id.Str
		}
		out = append(out, gc)
	}
	return out
}

// AdoptAgentCallIDs copies gemini-cli's ids onto the replayed calls. Only
// the last model content of items can hold calls the agent saw: the turn
// engine follows up only after answering every call of a reply itself, so
// earlier model contents hold shepherd's calls alone. Each id-less call of
// that content takes the id of the first call of the agent's copy not taken
// yet with the same name and canonically equal args (so calls the agent got
// reordered, or duplicates, pair up in order). A call the agent never saw
// (refused or answered by shepherd) matches none and keeps no id, like the
// functionResponse shepherd writes for it (conv.ToolResult.CallID is "" for an
// id-less call). The id goes in the functionCall object; a thoughtSignature
// beside it is not touched.
func (geminiCodec) AdoptAgentCallIDs(body []byte, pos int, items [][]byte) ([][]byte, error) {
	_, _, agent, err := geminiContentAt(body, pos)
	if err != nil {
		return nil, err
	}
	if !geminiIsModel(agent) {
		return items, nil
	}
	theirs := callParts(agent)
	if len(theirs) == 0 {
		return items, nil
	}
	last := -1
	var model gjson.Result
	for i := len(items) - 1; i >= 0; i-- {
		if !gjson.ValidBytes(items[i]) {
			continue
		}
		if c, ok := jsonkit.RootObject(jsonkit.UnsafeString(items[i])); ok && geminiIsModel(c) {
			last, model = i, c
			break
		}
	}
	if last < 0 {
		return items, nil
	}
	used := make([]bool, len(theirs))
	type edit struct {
		fc gjson.Result
		id string
	}
	var edits []edit
	for _, mine := range callParts(model) {
		for j := range theirs {
			if used[j] || theirs[j].name != mine.name || !conv.SameArgs(theirs[j].args, mine.args) {
				continue
			}
			used[j] = true
			if mine.id == "" && theirs[j].id != "" {
				edits = append(edits, edit{mine.fc, theirs[j].id})
			}
			break
		}
	}
	if len(edits) == 0 {
		return items, nil
	}
	out := append([][]byte(nil), items...)
	it := items[last]
	for k := len(edits) - 1; k >= 0; k-- { // from the end, so earlier offsets stay valid
		it = jsonkit.SetMember(it, edits[k].fc, "id", jsonkit.AppendString(nil, edits[k].id))
	}
	out[last] = it
	return out, nil
}
