package rewrite

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

func TestStreamAccumulatorCopies(t *testing.T) {
	var a StreamAccumulator
	a.Add(StreamEvent{Kind: BlockStart, BlockKind: conv.BlockToolCall, Index: 3, ToolCallID: "x", ToolName: "n", ArgsDelta: "{"})
	r1 := a.Reply()
	a.Add(StreamEvent{Kind: BlockDelta, BlockKind: conv.BlockToolCall, Index: 3, ArgsDelta: "}"})
	r2 := a.Reply()
	require.Equal(t, "{", string(r1.ToolCalls[0].Args))
	require.Equal(t, "{}", string(r2.ToolCalls[0].Args))
	require.Equal(t, conv.ToolCall{Index: 0, ID: "x", Name: "n", Args: []byte("{}")}, r2.ToolCalls[0])
}

func TestEventKindString(t *testing.T) {
	require.Equal(t, "block_delta", BlockDelta.String())
	require.Equal(t, "other", Other.String())
	require.Equal(t, "unknown", EventKind(99).String())
}
