package anthropic

import (
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

var _ rewrite.ResultReplacer = anthropicCodec{}

// ReplaceToolResults sets the content of each named tool_result block to
// the edit's text as a JSON string; tool_use_id, is_error, cache_control
// and every other member keep their bytes.
func (anthropicCodec) ReplaceToolResults(body []byte, edits []conv.ResultEdit) ([]byte, error) {
	return rewrite.ReplaceResultsWith(body, edits, rewrite.ResultLocator{
		Elems: rewrite.ElementsOf("messages"),
		Span:  anthropicResultSpan,
	})
}

func anthropicResultSpan(msg gjson.Result, block int, text string) (rewrite.ResultSpan, error) {
	content := jsonkit.Member(msg, "content")
	if !content.IsArray() {
		return rewrite.ResultSpan{}, fmt.Errorf("content has no blocks")
	}
	b, err := rewrite.ElementAt(content, block)
	if err != nil {
		return rewrite.ResultSpan{}, err
	}
	if err := rewrite.ResultBlockOf(b, anthropicBlock); err != nil {
		return rewrite.ResultSpan{}, err
	}
	return rewrite.MemberSpan(b, "content", jsonkit.Quote(text)), nil
}

var _ rewrite.MessageLocator = anthropicCodec{}

// MessageElems implements rewrite.MessageLocator: one element per message.
func (anthropicCodec) MessageElems(body []byte) ([]gjson.Result, [][2]int, error) {
	return rewrite.OneElementPerMessage(body, "messages")
}
