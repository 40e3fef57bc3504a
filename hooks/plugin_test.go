package hooks

import (
	"testing"

	"github.com/stretchr/testify/require"
)

type flagHook struct {
	closed, cont bool
}

func (flagHook) Name() string        { return "flag" }
func (f flagHook) FailsClosed() bool { return f.closed }
func (f flagHook) MayContinue() bool { return f.cont }

// TestChainCapabilities: a chain fails closed or may continue when one of
// its hooks says so; a nil or empty chain does neither.
func TestChainCapabilities(t *testing.T) {
	var nilChain *Chain
	require.False(t, nilChain.FailsClosed())
	require.False(t, nilChain.Continues())
	require.False(t, NewChain().FailsClosed())
	c := NewChain(flagHook{}, flagHook{closed: true})
	require.True(t, c.FailsClosed())
	require.False(t, c.Continues())
	c = NewChain(flagHook{cont: true})
	require.True(t, c.Continues())
	require.False(t, c.FailsClosed())
}

func TestProblemsAndToolNames(t *testing.T) {
	var p Problems
	p.Add("x.y", "%q is bad", "v")
	require.Equal(t, Problems{{Key: "x.y", Msg: `"v" is bad`}}, p)
	require.True(t, ToolName("create_new_topic"))
	require.True(t, ToolName("a-1"))
	require.False(t, ToolName(""))
	require.False(t, ToolName("new topic!"))
	require.False(t, ToolName(string(make([]byte, 65))))
}
