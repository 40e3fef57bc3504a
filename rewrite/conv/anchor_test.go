package conv

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func conv() []Message {
	return []Message{
		{Role: RoleUser, Blocks: []Block{{Kind: BlockText, Text: "fix the bug"}}},
		{Role: RoleAssistant, Blocks: []Block{
			{Kind: BlockThinking, Text: "look first"},
			{Kind: BlockToolCall, ToolCallID: "t1", ToolName: "Read", Args: []byte(`{"file_path": "a.go"}`)},
		}},
		{Role: RoleUser, Blocks: []Block{{Kind: BlockToolResult, ToolCallID: "t1", Text: "package a"}}},
	}
}

func TestAnchorsStableAcrossReserialisation(t *testing.T) {
	a := Anchors(conv())
	c := conv()
	c[1].Blocks[1].Args = []byte("{\n  \"file_path\":\"a.go\"\n}")
	require.Equal(t, a, Anchors(c), "whitespace in arguments does not matter")

	longer := append(conv(), Message{Role: RoleAssistant, Blocks: []Block{{Kind: BlockText, Text: "done"}}})
	require.Equal(t, a, Anchors(longer)[:3], "appending keeps earlier anchors")
	require.Len(t, Anchors(longer), 4)
}

func TestAnchorsChangeWithHistory(t *testing.T) {
	a := Anchors(conv())
	c := conv()
	c[0].Blocks[0].Text = "fix the other bug"
	b := Anchors(c)
	for i := range a {
		require.NotEqual(t, a[i], b[i], "an edit changes the anchor of that message and every later one (%d)", i)
	}
	c = conv()
	c[2].Blocks[0].IsError = true
	b = Anchors(c)
	require.Equal(t, a[:2], b[:2])
	require.NotEqual(t, a[2], b[2])
}

func TestAnchorsDistinguishPositions(t *testing.T) {
	same := Message{Role: RoleUser, Blocks: []Block{{Kind: BlockText, Text: "continue"}}}
	reply := Message{Role: RoleAssistant, Blocks: []Block{{Kind: BlockText, Text: "ok"}}}
	a := Anchors([]Message{same, reply, same})
	require.NotEqual(t, a[0], a[2], "the same text at another point is another anchor")
	// Field boundaries are unambiguous: "ab"+"c" is not "a"+"bc".
	x := Anchors([]Message{{Role: RoleUser, Blocks: []Block{{Kind: BlockText, Text: "ab", ToolName: "c"}}}})
	y := Anchors([]Message{{Role: RoleUser, Blocks: []Block{{Kind: BlockText, Text: "a", ToolName: "bc"}}}})
	require.NotEqual(t, x, y)
}

func TestAnchorsIgnoreInvisibleBlocks(t *testing.T) {
	a := Anchors(conv())
	c := conv()
	c[1].Blocks = append(c[1].Blocks, Block{Kind: BlockText}, Block{Kind: BlockOther})
	require.Equal(t, a, Anchors(c), "an empty text part or an opaque block does not change the anchor")
}

func TestAnchorsJoinAdjacentText(t *testing.T) {
	split := []Message{{Role: RoleAssistant, Blocks: []Block{{Kind: BlockText, Text: "Starting Phase 0"}, {Kind: BlockText, Text: "."}}}}
	joined := []Message{{Role: RoleAssistant, Blocks: []Block{{Kind: BlockText, Text: "Starting Phase 0."}}}}
	require.Equal(t, Anchors(joined), Anchors(split), "a streamed reply's text parts echo back joined")
	other := []Message{{Role: RoleAssistant, Blocks: []Block{{Kind: BlockText, Text: "Starting Phase 0!"}}}}
	require.NotEqual(t, Anchors(joined), Anchors(other))
	// Text separated by a call stays two texts.
	a := []Message{{Role: RoleAssistant, Blocks: []Block{{Kind: BlockText, Text: "a"}, {Kind: BlockToolCall, ToolCallID: "x"}, {Kind: BlockText, Text: "b"}}}}
	b := []Message{{Role: RoleAssistant, Blocks: []Block{{Kind: BlockText, Text: "ab"}, {Kind: BlockToolCall, ToolCallID: "x"}}}}
	require.NotEqual(t, Anchors(a), Anchors(b))
}

func TestAnchorsIgnoreArgumentEncoding(t *testing.T) {
	msgs := func(args string) []Message {
		return []Message{
			{Role: RoleUser, Blocks: []Block{{Kind: BlockText, Text: "go"}}},
			{Role: RoleAssistant, Blocks: []Block{{Kind: BlockToolCall, ToolCallID: "c1", ToolName: "Write", Args: []byte(args)}}},
		}
	}
	a := Anchors(msgs(`{"file_path":"a<b>.go", "n": 1.0, "content":"x&y"}`))
	b := Anchors(msgs(`{"content":"x\u0026y","file_path":"a\u003cb\u003e.go","n":1}`))
	require.Equal(t, a, b, "key order, escaping and number format do not change anchors")
	c := Anchors(msgs(`{"content":"x&y","file_path":"a<b>.go","n":2}`))
	require.NotEqual(t, a[1], c[1], "a different value changes the anchor")
}

// TestAnchorsIgnoreClientFields: what a client adds to, drops from or
// moves in the history it sends back does not change an anchor: call ids
// (gemini-cli names the calls the API sent without one), thinking blocks
// (gemini-cli strips thought parts). What the model said still does.
func TestAnchorsIgnoreClientFields(t *testing.T) {
	a := Anchors(conv())

	c := conv()
	c[1].Blocks[1].ToolCallID = "Read_1764090000000_0"
	c[2].Blocks[0].ToolCallID = "Read_1764090000000_0"
	require.Equal(t, a, Anchors(c), "client-given call ids")

	c = conv()
	c[1].Blocks = c[1].Blocks[1:]
	require.Equal(t, a, Anchors(c), "thinking dropped")
	c = conv()
	c[1].Blocks[0].Text = "redacted"
	require.Equal(t, a, Anchors(c), "thinking re-serialised")

	c = conv()
	c[1].Blocks[1].ToolName = "Write"
	require.NotEqual(t, a[1], Anchors(c)[1], "another tool is another turn")
	c = conv()
	c[1].Blocks[1].Args = []byte(`{"file_path":"b.go"}`)
	require.NotEqual(t, a[1], Anchors(c)[1], "other arguments are another turn")
	c = conv()
	c[2].Blocks[0].Text = "package b"
	require.NotEqual(t, a[2], Anchors(c)[2], "another result is another turn")
}
