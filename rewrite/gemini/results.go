package gemini

import (
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

var _ rewrite.ResultReplacer = geminiCodec{}

// ReplaceToolResults sets the response of each named functionResponse part
// to {"content": text}; its id, name and every other member of the part
// keep their bytes.
func (geminiCodec) ReplaceToolResults(body []byte, edits []conv.ResultEdit) ([]byte, error) {
	return rewrite.ReplaceResultsWith(body, edits, rewrite.ResultLocator{
		Elems: rewrite.ElementsOf("contents"),
		Span:  geminiResultSpan,
	})
}

func geminiResultSpan(content gjson.Result, block int, text string) (rewrite.ResultSpan, error) {
	parts := jsonkit.Member(content, "parts")
	if !parts.IsArray() {
		return rewrite.ResultSpan{}, fmt.Errorf("content has no parts")
	}
	p, err := rewrite.ElementAt(parts, block)
	if err != nil {
		return rewrite.ResultSpan{}, err
	}
	if err := rewrite.ResultBlockOf(p, geminiPart); err != nil {
		return rewrite.ResultSpan{}, err
	}
	fr := jsonkit.Member(p, "functionResponse")
	if !fr.Exists() {
		fr = jsonkit.Member(p, "function_response")
	}
	raw := append([]byte(`{"content":`), jsonkit.Quote(text)...)
	return rewrite.MemberSpan(fr, "response", append(raw, '}')), nil
}

var _ rewrite.MessageLocator = geminiCodec{}

// MessageElems implements rewrite.MessageLocator: one element per message.
func (geminiCodec) MessageElems(body []byte) ([]gjson.Result, [][2]int, error) {
	return rewrite.OneElementPerMessage(body, "contents")
}
