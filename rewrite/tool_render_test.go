package rewrite_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// renderSpec is an API-shaped definition for the tests: every field
// reaches the output, so a stale rendering shows.
func renderSpec(dst []byte, t conv.ToolSpec, params []byte) []byte {
	dst = append(dst, `{"name":`...)
	dst = jsonkit.AppendString(dst, t.Name)
	dst = append(dst, `,"description":`...)
	dst = jsonkit.AppendString(dst, t.Description)
	dst = append(dst, `,"schema":`...)
	return append(append(dst, params...), '}')
}

func fresh(t *testing.T, tools ...conv.ToolSpec) string {
	t.Helper()
	var out []byte
	for i, s := range tools {
		if i > 0 {
			out = append(out, ',')
		}
		p := s.Parameters
		if len(p) == 0 {
			p = []byte(`{"type":"object","properties":{}}`)
		}
		out = renderSpec(out, s, p)
	}
	return string(out)
}

// A remembered rendering is used only for an equal spec: changing any
// field, or the caller's buffer after the call, gives what rendering anew
// gives.
func TestToolRendererMatchesRenderingAnew(t *testing.T) {
	r := rewrite.NewToolRenderer(renderSpec)
	params := []byte(`{"type":"object","properties":{"q":{"type":"string"}}}`)
	a := conv.ToolSpec{Name: "topic", Description: "Open a chapter.\n\"quoted\"", Parameters: params}
	b := conv.ToolSpec{Name: "intent", Description: "Select an intent."}
	for range 3 {
		got, err := r.Render(nil, []conv.ToolSpec{a, b})
		require.NoError(t, err)
		require.Equal(t, fresh(t, a, b), string(got))
	}
	// Same name, another description or schema.
	a2 := a
	a2.Description = "Open a chapter (v2)."
	got, err := r.Render([]byte("x"), []conv.ToolSpec{a2})
	require.NoError(t, err)
	require.Equal(t, "x"+fresh(t, a2), string(got))
	a3 := a
	a3.Parameters = []byte(`{"type":"object"}`)
	got, err = r.Render(nil, []conv.ToolSpec{a3})
	require.NoError(t, err)
	require.Equal(t, fresh(t, a3), string(got))
	// The caller reuses its buffer: the memory kept its own copy.
	copy(params, `{"type":"object","properties":{"r":{"type":"string"}}}`)
	got, err = r.Render(nil, []conv.ToolSpec{a})
	require.NoError(t, err)
	require.Equal(t, fresh(t, a), string(got))
	require.Contains(t, string(got), `"r":`)
}

// Bad specs fail every time (a failure is not remembered), and more specs
// than the memory holds still render right.
func TestToolRendererErrorsAndBound(t *testing.T) {
	r := rewrite.NewToolRenderer(renderSpec)
	for range 2 {
		_, err := r.Render(nil, []conv.ToolSpec{{Description: "no name"}})
		require.ErrorContains(t, err, "no name")
		_, err = r.Render(nil, []conv.ToolSpec{{Name: "bad", Parameters: []byte(`[1]`)}})
		require.ErrorContains(t, err, "not a JSON object")
	}
	for round := range 2 {
		for i := range 200 {
			s := conv.ToolSpec{Name: fmt.Sprintf("t%d", i), Description: fmt.Sprintf("round-independent %d", i)}
			got, err := r.Render(nil, []conv.ToolSpec{s})
			require.NoError(t, err, "round %d", round)
			require.Equal(t, fresh(t, s), string(got))
		}
	}
}

// Concurrent renders of overlapping specs (run with -race).
func TestToolRendererConcurrent(t *testing.T) {
	r := rewrite.NewToolRenderer(renderSpec)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				s := conv.ToolSpec{Name: fmt.Sprintf("t%d", (i+g)%90), Description: "d"}
				got, err := r.Render(nil, []conv.ToolSpec{s})
				if err != nil || string(got) != fresh(t, s) {
					t.Errorf("render of %s: %q, %v", s.Name, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
