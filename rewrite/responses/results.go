package responses

import (
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

var _ rewrite.ResultReplacer = responsesCodec{}

// ReplaceToolResults sets the output of each named function_call_output or
// custom_tool_call_output item (a view message of its own, block 0) to the
// edit's text as a JSON string; call_id, type and every other member keep
// their bytes. View positions map to input items as ReplaceMessages maps
// them (consecutive assistant-side items are one message).
func (responsesCodec) ReplaceToolResults(body []byte, edits []conv.ResultEdit) ([]byte, error) {
	return rewrite.ReplaceResultsWith(body, edits, rewrite.ResultLocator{
		Elems: responsesResultElems,
		Span:  responsesResultSpan,
	})
}

// responsesResultElems resolves a view position to the first input item of
// its message: a tool result's message is that one item.
func responsesResultElems(body []byte) (func(int) (gjson.Result, error), error) {
	in, err := readResponsesInput(body)
	if err != nil {
		return nil, err
	}
	return func(pos int) (gjson.Result, error) {
		if pos < 0 || pos >= in.views() {
			return gjson.Result{}, rewrite.OpenAIPosErr(pos, in.views())
		}
		if in.str {
			return gjson.Result{}, fmt.Errorf("a string input has no tool results")
		}
		return in.elems[in.ranges[pos][0]], nil
	}, nil
}

func responsesResultSpan(item gjson.Result, block int, text string) (rewrite.ResultSpan, error) {
	if block != 0 {
		return rewrite.ResultSpan{}, fmt.Errorf("a tool result message has one block, not %d", block+1)
	}
	if err := rewrite.ResultBlockOf(item, responsesItemBlock); err != nil {
		return rewrite.ResultSpan{}, err
	}
	return rewrite.MemberSpan(item, "output", jsonkit.Quote(text)), nil
}

// responsesItemBlock reads the first block of an item's view.
func responsesItemBlock(it gjson.Result, names *rewrite.ToolNames) (conv.Block, error) {
	msg, err := responsesItem(it, names)
	if err != nil || len(msg.Blocks) == 0 {
		return conv.Block{}, err
	}
	return msg.Blocks[0], nil
}

var _ rewrite.MessageLocator = responsesCodec{}

// MessageElems implements rewrite.MessageLocator with ParseRequest's rule
// (consecutive assistant-side items are one message); a string input is
// rewrite.ErrNoBatch.
func (responsesCodec) MessageElems(body []byte) ([]gjson.Result, [][2]int, error) {
	in, err := readResponsesInput(body)
	if err != nil {
		return nil, nil, err
	}
	if in.str {
		return nil, nil, rewrite.ErrNoBatch
	}
	return in.elems, in.ranges, nil
}
