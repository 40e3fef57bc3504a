package rewrite

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// TestParsedFinalOwnership: a long body an edit returns is p's pooled
// final body until ReleaseFinal of that very body; a body p did not make
// (the agent's, returned as it is) is never taken for it, and a scratch
// body returned as it is becomes the final one.
func TestParsedFinalOwnership(t *testing.T) {
	body := []byte(`{"tools":[1],"messages":["` + strings.Repeat("x", scratchMinBytes) + `"]}`)
	idx, ok := jsonkit.ValidIndexed(body)
	require.True(t, ok)
	var p Parsed
	p.Remember(idx)
	add := MemberOp{Key: "tools", Insert: func(v []byte) (int, []byte, bool) { return InsertElements(v, []byte("2")) },
		Op: func(b []byte) ([]byte, error) { return AppendToArrayMember(b, "tools", []byte("2")) }}
	out, err := p.EditMembers(body, []MemberOp{add})
	require.NoError(t, err)
	require.True(t, sameBuffer(p.final, out), "the edit's result is p's final body")
	require.Nil(t, p.scratch, "a final body is never p's scratch")

	p.ReleaseFinal(body) // not p's
	require.NotNil(t, p.final)
	p.ReleaseFinal(out)
	require.Nil(t, p.final)
	require.Nil(t, p.IndexOf(out), "p forgets a released body")
	p.ReleaseFinal(out) // twice: nothing

	// Nothing to edit: the agent's body goes on as it is, and is not p's.
	var q Parsed
	q.Remember(idx)
	same, err := q.EditMembers(body, nil)
	require.NoError(t, err)
	require.True(t, sameBuffer(same, body))
	require.Nil(t, q.final)

	// A scratch body passed on unchanged becomes the final one.
	scratch := append(getScratch(len(body)), body...)
	sidx, ok := jsonkit.ValidIndexed(scratch)
	require.True(t, ok)
	var r Parsed
	r.remembered(sidx, nil, scratch, true)
	require.True(t, sameBuffer(r.scratch, scratch))
	r.Escape()
	require.Nil(t, r.scratch)
	require.True(t, sameBuffer(r.final, scratch))
}
