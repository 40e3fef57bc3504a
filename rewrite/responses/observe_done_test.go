package responses

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

// Calls whose arguments arrive only in a .done event or only in
// output_item.done are observed whole, once, matching the reply view.
func TestObserveCallsDoneForms(t *testing.T) {
	head := "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"r\",\"status\":\"in_progress\",\"output\":[]}}\n\n"
	added := func(oi, typ, id string) string {
		member := `"arguments":""`
		if typ == "custom_tool_call" {
			member = `"input":""`
		}
		return "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":1,\"output_index\":" + oi +
			",\"item\":{\"id\":\"i" + oi + "\",\"type\":\"" + typ + "\",\"call_id\":\"" + id + "\",\"name\":\"n" + oi + "\"," + member + "}}\n\n"
	}
	stream := head +
		added("0", "function_call", "c0") +
		"event: response.function_call_arguments.done\ndata: {\"type\":\"response.function_call_arguments.done\",\"sequence_number\":2,\"item_id\":\"i0\",\"output_index\":0,\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}\n\n" +
		"event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"sequence_number\":3,\"output_index\":0,\"item\":{\"id\":\"i0\",\"type\":\"function_call\",\"call_id\":\"c0\",\"name\":\"n0\",\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}}\n\n" +
		added("1", "custom_tool_call", "c1") +
		"event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"sequence_number\":4,\"output_index\":1,\"item\":{\"id\":\"i1\",\"type\":\"custom_tool_call\",\"call_id\":\"c1\",\"name\":\"n1\",\"input\":\"raw\\ninput\"}}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":5,\"response\":{\"id\":\"r\",\"status\":\"completed\",\"output\":[" +
		"{\"id\":\"i0\",\"type\":\"function_call\",\"call_id\":\"c0\",\"name\":\"n0\",\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}," +
		"{\"id\":\"i1\",\"type\":\"custom_tool_call\",\"call_id\":\"c1\",\"name\":\"n1\",\"input\":\"raw\\ninput\"}]}}\n\n"
	deltas, views, _, _ := apitest.ObserveTurn(t, Descriptor, [][]byte{[]byte(stream)}, func(b []byte) io.Reader { return bytes.NewReader(b) }, true)
	require.Len(t, views[0].ToolCalls, 2)
	require.Len(t, deltas, 4) // start and Done of each
	require.Equal(t, "c0", deltas[0].ID)
	require.Equal(t, `{"path":"a"}`, deltas[1].Fragment)
	require.True(t, deltas[1].Done)
	require.Equal(t, "c1", deltas[2].ID)
	require.True(t, deltas[2].Freeform)
	require.Equal(t, "raw\ninput", deltas[3].Fragment)
	require.True(t, deltas[3].Done)
	require.Equal(t, 1, deltas[3].Index)
}
