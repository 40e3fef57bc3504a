package openaichat

import (
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

var _ rewrite.ResultReplacer = chatCodec{}

// ReplaceToolResults sets the content of each named tool message (its one
// block, 0) to the edit's text as a JSON string; tool_call_id, name and
// every other member keep their bytes.
func (chatCodec) ReplaceToolResults(body []byte, edits []conv.ResultEdit) ([]byte, error) {
	return rewrite.ReplaceResultsWith(body, edits, rewrite.ResultLocator{
		Elems: rewrite.ElementsOf("messages"),
		Span:  chatResultSpan,
	})
}

func chatResultSpan(msg gjson.Result, block int, text string) (rewrite.ResultSpan, error) {
	if err := rewrite.ResultBlockOf(msg, chatMessageBlock(block)); err != nil {
		return rewrite.ResultSpan{}, err
	}
	return rewrite.MemberSpan(msg, "content", jsonkit.Quote(text)), nil
}

// chatMessageBlock reads block i of a message's view.
func chatMessageBlock(i int) func(gjson.Result, *rewrite.ToolNames) (conv.Block, error) {
	return func(m gjson.Result, names *rewrite.ToolNames) (conv.Block, error) {
		msg, err := chatMessage(m, names)
		if err != nil {
			return conv.Block{}, err
		}
		if i >= len(msg.Blocks) {
			return conv.Block{}, fmt.Errorf("no block %d", i)
		}
		return msg.Blocks[i], nil
	}
}

var _ rewrite.MessageLocator = chatCodec{}

// MessageElems implements rewrite.MessageLocator: one element per message.
func (chatCodec) MessageElems(body []byte) ([]gjson.Result, [][2]int, error) {
	return rewrite.OneElementPerMessage(body, "messages")
}
