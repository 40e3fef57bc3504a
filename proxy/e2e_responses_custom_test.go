package proxy_test

// End-to-end test of Responses custom (free-form) tool calls, the way Codex
// CLI sends apply_patch, with openai-go through shepherd and the topics
// feature on: shepherd sees the custom call, removes only its own
// create_new_topic call, and the agent gets the custom call intact.

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
)

// ecPatch is an apply_patch input with characters JSON must escape and a
// multi-byte one, longer than a few stream deltas.
const ecPatch = "*** Begin Patch\n*** Add File: hello.txt\n+Hello \"world\" <é> \\o/\n*** End Patch\n"

func ecParams() responses.ResponseNewParams {
	patch := responses.ToolParamOfCustom("apply_patch")
	patch.OfCustom.Description = openai.String("Edit files with a patch.")
	return responses.ResponseNewParams{
		Model:        "gpt-e2e",
		Instructions: openai.String("You are Codex."),
		Store:        openai.Bool(false),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("Add hello.txt", responses.EasyInputMessageRoleUser),
		}},
		Tools: []responses.ToolUnionParam{patch, responses.ToolParamOfFunction("shell", e2eToolSchema, false)},
	}
}

// ecTopic and ecCustom are the scripted calls.
func ecTopic(id string) mock.ToolCall {
	return mock.ToolCall{ID: id, Name: "create_new_topic", Args: `{"title":"Add greeting"}`}
}

func ecCustom(id string) mock.ToolCall {
	return mock.ToolCall{ID: id, Name: "apply_patch", Args: ecPatch, Custom: true}
}

// ecRequireCustom asserts that item is the scripted custom call.
func ecRequireCustom(t *testing.T, item responses.ResponseOutputItemUnion, callID string) {
	t.Helper()
	require.Equal(t, "custom_tool_call", item.Type, "%s", item.RawJSON())
	c := item.AsCustomToolCall()
	require.Equal(t, callID, c.CallID)
	require.Equal(t, "apply_patch", c.Name)
	require.Equal(t, ecPatch, c.Input)
}

// ecStream is what the SDK saw of one streamed reply.
type ecStream struct {
	final *responses.Response
	raws  []string
	input map[string]string // custom call item id -> input from its deltas
	done  map[string]string // custom call item id -> input of its .done event
}

// ecRunStream streams p and checks the stream is well formed: one
// response.created, sequence numbers rising by one, output items numbered
// densely, response.completed last.
func ecRunStream(t *testing.T, ctx context.Context, c openai.Client, p responses.ResponseNewParams) ecStream {
	t.Helper()
	st := c.Responses.NewStreaming(ctx, p)
	defer st.Close()
	r := ecStream{input: map[string]string{}, done: map[string]string{}}
	var types []string
	index := map[string]int64{}
	for st.Next() {
		ev := st.Current()
		if len(types) > 0 {
			require.Equal(t, int64(len(types)), ev.SequenceNumber-firstSeq(t, r.raws), "events: %v", types)
		}
		types = append(types, ev.Type)
		r.raws = append(r.raws, ev.RawJSON())
		switch ev.Type {
		case "response.output_item.added":
			require.Equal(t, int64(len(index)), ev.OutputIndex, "events: %v", types)
			index[ev.Item.ID] = ev.OutputIndex
		case "response.output_item.done":
			require.Equal(t, index[ev.Item.ID], ev.OutputIndex)
		case "response.custom_tool_call_input.delta":
			require.Equal(t, index[ev.ItemID], ev.OutputIndex)
			r.input[ev.ItemID] += ev.Delta
		case "response.custom_tool_call_input.done":
			require.Equal(t, index[ev.ItemID], ev.OutputIndex)
			r.done[ev.ItemID] = ev.Input
		case "response.completed":
			resp := ev.Response
			r.final = &resp
		}
	}
	require.NoError(t, st.Err())
	require.NotNil(t, r.final, "events: %v", types)
	require.Equal(t, "response.created", types[0])
	require.Equal(t, "response.completed", types[len(types)-1])
	require.Equal(t, 1, strings.Count(strings.Join(types, " "), "response.created"))
	require.Len(t, r.final.Output, len(index))
	for _, it := range r.final.Output {
		_, ok := index[it.ID]
		require.True(t, ok, "final output item %s was streamed", it.ID)
	}
	return r
}

func firstSeq(t *testing.T, raws []string) int64 {
	t.Helper()
	require.NotEmpty(t, raws)
	return gjson.Get(raws[0], "sequence_number").Int()
}

func TestE2EResponsesCustomToolCall(t *testing.T) {
	h := newHarness(t, harnessOptions{
		Mock:   mock.Options{ChunkSize: 8},
		Config: func(c *config.Config) { c.Topics.Enabled = true },
	})
	ctx := e2eCtx(t)
	client := func(session string) openai.Client {
		return e2eOpenAIClient(h.URL, ooption.WithHeader("X-Session-Id", session))
	}
	upstream := func(from int) []mock.Recorded {
		t.Helper()
		return h.mock.Requests()[from:]
	}

	// (a) One reply with a custom apply_patch call and a create_new_topic
	// call: shepherd answers the topic call, so the agent gets the custom
	// call intact and no topic call; no follow-up (the agent has a call to
	// run).
	t.Run("custom call next to a topic call", func(t *testing.T) {
		n := len(h.mock.Requests())
		h.mock.Script(mock.Reply{ID: "resp_a", Text: "Patching.", ToolCalls: []mock.ToolCall{ecTopic("call_topic"), ecCustom("call_patch")}})
		c := client("custom-a")
		r, err := c.Responses.New(ctx, ecParams())
		require.NoError(t, err)
		require.Equal(t, "resp_a", r.ID)
		require.Equal(t, responses.ResponseStatusCompleted, r.Status)
		require.Equal(t, "Patching.", r.OutputText())
		require.Len(t, r.Output, 2, "%s", r.RawJSON())
		require.Equal(t, "message", r.Output[0].Type)
		ecRequireCustom(t, r.Output[1], "call_patch")
		require.NotContains(t, r.RawJSON(), "create_new_topic")
		reqs := upstream(n)
		require.Len(t, reqs, 1)
		require.Contains(t, gjson.GetBytes(reqs[0].Body, "tools").Raw, "create_new_topic")
		require.Contains(t, gjson.GetBytes(reqs[0].Body, "tools").Raw, `"type":"custom"`)

		// The agent answers the custom call; the model's view is restored:
		// its topic call and shepherd's result come back before the
		// agent's custom_tool_call_output.
		p := ecParams()
		p.Input.OfInputItemList = append(p.Input.OfInputItemList,
			responses.ResponseInputItemUnionParam{OfOutputMessage: ptr(r.Output[0].AsMessage().ToParam())},
			responses.ResponseInputItemParamOfCustomToolCall("call_patch", r.Output[1].AsCustomToolCall().Input, "apply_patch"),
			responses.ResponseInputItemParamOfCustomToolCallOutput("call_patch", "Done!"),
		)
		h.mock.Script(mock.Reply{ID: "resp_a2", Text: "Added."})
		r2, err := c.Responses.New(ctx, p)
		require.NoError(t, err)
		require.Equal(t, "Added.", r2.OutputText())
		reqs = upstream(n)
		require.Len(t, reqs, 2)
		var types, calls []string
		for _, it := range gjson.GetBytes(reqs[1].Body, "input").Array() {
			types = append(types, it.Get("type").Str)
			calls = append(calls, it.Get("call_id").Str)
		}
		// The agent's user message (no type), the model's reply items, the
		// results, and the topic reminder in a new user message.
		require.Equal(t, []string{"", "message", "function_call", "custom_tool_call", "function_call_output", "custom_tool_call_output", ""}, types)
		require.Equal(t, []string{"", "", "call_topic", "call_patch", "call_topic", "call_patch", ""}, calls)
		input := gjson.GetBytes(reqs[1].Body, "input").Array()
		require.Equal(t, ecPatch, input[3].Get("input").Str)
		require.Equal(t, `Topic changed to: "Add greeting"`, input[4].Get("output").Str)
		require.Equal(t, "Done!", input[5].Get("output").Str)
		require.Equal(t, "user", input[6].Get("role").Str)
		require.Contains(t, input[6].Raw, "[Active Topic: Add greeting]")
	})

	t.Run("custom call next to a topic call, streamed", func(t *testing.T) {
		n := len(h.mock.Requests())
		// The topic call comes after the custom call here.
		h.mock.Script(mock.Reply{ID: "resp_as", Text: "Patching.", ToolCalls: []mock.ToolCall{ecCustom("call_patch"), ecTopic("call_topic")}})
		s := ecRunStream(t, ctx, client("custom-as"), ecParams())
		require.Equal(t, "resp_as", s.final.ID)
		require.Equal(t, responses.ResponseStatusCompleted, s.final.Status)
		require.Len(t, s.final.Output, 2)
		ecRequireCustom(t, s.final.Output[1], "call_patch")
		id := s.final.Output[1].ID
		require.Equal(t, ecPatch, s.input[id], "the deltas carry the input")
		require.Equal(t, ecPatch, s.done[id])
		require.Greater(t, strings.Count(strings.Join(s.raws, "\n"), "response.custom_tool_call_input.delta"), 3)
		require.NotContains(t, strings.Join(s.raws, "\n"), "create_new_topic")
		require.Len(t, upstream(n), 1)
	})

	// (b) The model's only call is create_new_topic: shepherd answers it and
	// follows up; the follow-up's custom call reaches the agent.
	for _, stream := range []bool{false, true} {
		name := "follow-up"
		if stream {
			name += ", streamed"
		}
		t.Run(name, func(t *testing.T) {
			n := len(h.mock.Requests())
			h.mock.Script(
				mock.Reply{ID: "resp_b1", ToolCalls: []mock.ToolCall{ecTopic("call_topic")}},
				mock.Reply{ID: "resp_b2", Text: "Now patching.", ToolCalls: []mock.ToolCall{ecCustom("call_patch")}},
			)
			var final *responses.Response
			c := client("custom-b-" + name)
			if stream {
				s := ecRunStream(t, ctx, c, ecParams())
				final = s.final
				id := final.Output[len(final.Output)-1].ID
				require.Equal(t, ecPatch, s.input[id])
				require.NotContains(t, strings.Join(s.raws, "\n"), "create_new_topic")
			} else {
				r, err := c.Responses.New(ctx, ecParams())
				require.NoError(t, err)
				final = r
				require.NotContains(t, r.RawJSON(), "create_new_topic")
			}
			require.Equal(t, "resp_b2", final.ID, "the agent continues from the follow-up")
			require.Equal(t, responses.ResponseStatusCompleted, final.Status)
			require.Equal(t, "Now patching.", final.OutputText())
			require.Len(t, final.Output, 2)
			ecRequireCustom(t, final.Output[1], "call_patch")
			reqs := upstream(n)
			require.Len(t, reqs, 2, "one follow-up")
			require.Equal(t, stream, reqs[1].Stream)
			follow := gjson.GetBytes(reqs[1].Body, "input").Array()
			last := follow[len(follow)-1]
			require.Equal(t, "function_call_output", last.Get("type").Str)
			require.Equal(t, "call_topic", last.Get("call_id").Str)
		})
	}
}

func ptr[T any](v T) *T { return &v }
