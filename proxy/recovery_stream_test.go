package proxy_test

// The truncation-recovery scenarios of recovery_test.go, streamed and
// driven by the official SDKs: each SDK accumulates the spliced stream (the
// continuation's text runs on in the cut text block, the terminal events
// come once) and builds the next request from the accumulated reply.

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

func TestRecoveryStreamOneTruncation(t *testing.T) {
	runRecovery(t, recOneTruncation, recCases("stream"))
}

func TestRecoveryStreamTwoTruncations(t *testing.T) {
	runRecovery(t, recTwoTruncations, recCases("stream"))
}

func TestRecoveryStreamExhausted(t *testing.T) {
	runRecovery(t, recExhausted, recCases("stream"))
}

func TestRecoveryStreamSeam(t *testing.T) {
	runRecovery(t, recSeam, recCases("stream"))
}

func TestRecoveryStreamToolCallCut(t *testing.T) {
	runRecovery(t, recToolCallCut, recCases("stream"))
}

func TestRecoveryStreamThinking(t *testing.T) {
	runRecovery(t, recThinkingScenario, recCases("stream"))
}

func TestRecoveryStreamNextTurnsAppendOnly(t *testing.T) {
	runRecovery(t, recNextTurns, recCases("stream"))
}

func TestRecoveryStreamPrefill(t *testing.T) {
	var cases []recCase
	for _, c := range recCases("stream") {
		if c.api.api.d.Prefill() {
			cases = append(cases, c)
		}
	}
	runRecovery(t, recPrefill, cases)
}

func TestRecoveryStreamOutputFloor(t *testing.T) {
	runRecovery(t, recFloor, recCases("stream"))
}

// TestRecoveryStreamLongSeam: a continuation longer than the seam window
// (256 bytes) that repeats the cut text's tail arrives in many deltas; the
// repetition is still dropped and the rest passes through.
func TestRecoveryStreamLongSeam(t *testing.T) {
	runRecovery(t, func(t *testing.T, c recCase) {
		h := recHarness(t)
		a := c.agent(t, h, recSession(t, c), recAgentOpts{})
		head := "Step 1: stop the service and restart the server"
		tail := strings.Repeat(" then check the logs again", 20) + "."
		h.mock.Script(
			mock.Reply{ID: "r1", Text: head, Stop: "max_tokens"},
			mock.Reply{ID: "r2", Text: "restart the server" + tail},
		)
		a.user("How do I deploy?")
		r := a.send(t)
		requireFinished(t, c, r, head+tail)
		requireUpstream(t, h, c, 2)
		requireRecoveries(t, h, c, 1, 0, 0, 1, 1)
	}, recCases("raw", "stream"))
}

// TestRecoveryStreamCutInThinking: a reply cut in its thinking (no text
// yet) is asked again; the agent gets one reply with the text.
func TestRecoveryStreamCutInThinking(t *testing.T) {
	runRecovery(t, func(t *testing.T, c recCase) {
		h := recHarness(t)
		a := c.agent(t, h, recSession(t, c), recAgentOpts{})
		h.mock.Script(
			mock.Reply{ID: "r1", Thinking: &mock.Thinking{Text: "Long thought", Signature: "s1"}, Stop: "max_tokens"},
			mock.Reply{ID: "r2", Text: recPangram},
		)
		a.user("Write the pangram.")
		r := a.send(t)
		require.Contains(t, r.text, "lazy dog.", "events: %v", r.events)
		requireUpstream(t, h, c, 2)
	}, recCases("raw", "stream"))
}

// TestRecoveryStreamWire reads the spliced stream of a recovered turn on
// the wire, per API: the continuation's text runs on in the cut text block
// (same index, item or part stream) with the seam de-duplicated, its
// thinking is not forwarded, the terminal events come once with the summed
// usage, and events that repeat the text carry the merged text.
func TestRecoveryStreamWire(t *testing.T) {
	think1 := mock.Thinking{Text: "The user wants the pangram.", Signature: "sig-one"}
	think2 := mock.Thinking{Text: "Finish the sentence.", Signature: "sig-two"}
	const partial = "The quick brown fox jumps over the lazy"
	const rest = "jumps over the lazy dog."
	// wire holds each API's own reading of the spliced stream, by driver
	// name.
	const merged = recPangram
	wire := map[string]func(t *testing.T, evs []kit.Event, b []byte){
		"anthropic": func(t *testing.T, evs []kit.Event, b []byte) {
			var text, thinking strings.Builder
			starts := map[string]int{}
			var textIdx []int64
			count := map[string]int{}
			for _, e := range evs {
				count[e.Name]++
				switch e.Name {
				case "content_block_start":
					starts[gjson.Get(e.Data, "content_block.type").String()]++
				case "content_block_delta":
					switch gjson.Get(e.Data, "delta.type").String() {
					case "text_delta":
						text.WriteString(gjson.Get(e.Data, "delta.text").String())
						textIdx = append(textIdx, gjson.Get(e.Data, "index").Int())
					case "thinking_delta":
						thinking.WriteString(gjson.Get(e.Data, "delta.thinking").String())
					}
				case "message_delta":
					require.Equal(t, "end_turn", gjson.Get(e.Data, "delta.stop_reason").String())
					require.EqualValues(t, 15, gjson.Get(e.Data, "usage.output_tokens").Int())
				}
			}
			require.Equal(t, merged, text.String())
			require.Equal(t, think1.Text, thinking.String(), "the continuation's thinking is not forwarded")
			require.Equal(t, map[string]int{"thinking": 1, "text": 1}, starts)
			for _, i := range textIdx {
				require.Equal(t, textIdx[0], i, "every text delta in the one text block")
			}
			require.Equal(t, 1, count["message_start"])
			require.Equal(t, 1, count["message_delta"])
			require.Equal(t, 1, count["message_stop"])
			require.Equal(t, count["content_block_start"], count["content_block_stop"])
			require.Equal(t, "message_stop", evs[len(evs)-1].Name)
			require.Equal(t, "r1", gjson.Get(evs[0].Data, "message.id").String())
		},
		"openai_chat": func(t *testing.T, evs []kit.Event, b []byte) {
			var text, reasoning strings.Builder
			finishes := 0
			var usage []string
			ids := map[string]bool{}
			for _, e := range evs {
				if e.Data == "[DONE]" {
					continue
				}
				ids[gjson.Get(e.Data, "id").String()] = true
				for _, c := range gjson.Get(e.Data, "choices").Array() {
					text.WriteString(c.Get("delta.content").String())
					reasoning.WriteString(c.Get("delta.reasoning_content").String())
					if f := c.Get("finish_reason").String(); f != "" {
						finishes++
						require.Equal(t, "stop", f)
					}
				}
				if u := gjson.Get(e.Data, "usage"); u.Exists() && u.Type != gjson.Null {
					usage = append(usage, u.Raw)
				}
			}
			require.Equal(t, merged, text.String())
			require.Equal(t, think1.Text, reasoning.String(), "the continuation's reasoning is not forwarded")
			require.Equal(t, 1, finishes)
			require.Len(t, usage, 1, "one usage chunk")
			require.EqualValues(t, 15, gjson.Get(usage[0], "completion_tokens").Int())
			require.Len(t, ids, 1, "one completion id: %v", ids)
			require.Equal(t, "[DONE]", evs[len(evs)-1].Data)
			require.Equal(t, 1, strings.Count(string(b), "[DONE]"))
		},
		"openai_responses": func(t *testing.T, evs []kit.Event, b []byte) {
			var text strings.Builder
			count := map[string]int{}
			seq := int64(-1)
			var msgItem string
			var textLoc []string
			for _, e := range evs {
				typ := gjson.Get(e.Data, "type").String()
				count[typ]++
				s := gjson.Get(e.Data, "sequence_number").Int()
				require.Greater(t, s, seq, "sequence_number increases")
				seq = s
				switch typ {
				case "response.output_text.delta":
					text.WriteString(gjson.Get(e.Data, "delta").String())
					textLoc = append(textLoc, gjson.Get(e.Data, "item_id").String()+"/"+gjson.Get(e.Data, "output_index").String()+"/"+gjson.Get(e.Data, "content_index").String())
				case "response.output_text.done":
					require.Equal(t, merged, gjson.Get(e.Data, "text").String(), "output_text.done carries the merged text")
				case "response.content_part.done":
					require.Equal(t, merged, gjson.Get(e.Data, "part.text").String(), "content_part.done carries the merged text")
				case "response.output_item.done":
					if gjson.Get(e.Data, "item.type").String() == "message" {
						msgItem = gjson.Get(e.Data, "item").Raw
					}
				case "response.reasoning_summary_text.delta", "response.reasoning_summary_text.done":
					require.NotContains(t, e.Data, think2.Text, "the continuation's reasoning is not forwarded")
				case "response.completed":
					out := gjson.Get(e.Data, "response.output").Array()
					require.Len(t, out, 2, "reasoning and one message")
					require.Equal(t, "reasoning", out[0].Get("type").String())
					require.Equal(t, merged, out[1].Get("content.0.text").String())
					require.EqualValues(t, 15, gjson.Get(e.Data, "response.usage.output_tokens").Int())
					require.Equal(t, "completed", gjson.Get(e.Data, "response.status").String())
				}
			}
			require.Equal(t, merged, text.String())
			for _, l := range textLoc {
				require.Equal(t, textLoc[0], l, "every text delta in the one message item and part")
			}
			require.Equal(t, merged, gjson.Get(msgItem, "content.0.text").String())
			require.Equal(t, 1, count["response.created"])
			require.Equal(t, 1, count["response.completed"])
			require.Zero(t, count["response.incomplete"])
			require.Equal(t, 1, count["response.output_text.done"])
			require.Equal(t, 2, count["response.output_item.added"])
			require.Equal(t, 2, count["response.output_item.done"])
			require.Equal(t, "response.completed", gjson.Get(evs[len(evs)-1].Data, "type").String())
		},
		"gemini": func(t *testing.T, evs []kit.Event, b []byte) {
			var text, thought strings.Builder
			finishes := 0
			ids := map[string]bool{}
			for i, e := range evs {
				ids[gjson.Get(e.Data, "responseId").String()] = true
				for _, p := range gjson.Get(e.Data, "candidates.0.content.parts").Array() {
					if p.Get("thought").Bool() {
						thought.WriteString(p.Get("text").String())
					} else {
						text.WriteString(p.Get("text").String())
					}
				}
				if f := gjson.Get(e.Data, "candidates.0.finishReason").String(); f != "" {
					finishes++
					require.Equal(t, "STOP", f)
					require.Equal(t, len(evs)-1, i, "the finish reason is on the last chunk")
					require.EqualValues(t, 15, gjson.Get(e.Data, "usageMetadata.candidatesTokenCount").Int())
				}
			}
			require.Equal(t, merged, text.String())
			require.Equal(t, think1.Text, thought.String(), "the continuation's thought is not forwarded")
			require.Equal(t, 1, finishes)
			require.Len(t, ids, 1, "one responseId: %v", ids)
		},
	}
	for _, api := range recAPIs() {
		t.Run(api.api.name, func(t *testing.T) {
			t.Parallel()
			h := recHarness(t)
			h.mock.Script(
				mock.Reply{ID: "r1", Thinking: &think1, Text: partial, Stop: "max_tokens", Usage: mock.Usage{Input: 100, Output: 10}},
				mock.Reply{ID: "r2", Thinking: &think2, Text: rest, Usage: mock.Usage{Input: 130, Output: 5}},
			)
			hist := []string{api.api.user("Write the pangram.")}
			d := api.api.d
			body := d.Request(kit.Request{Limit: 2000, System: "You are terse.", Tools: []kit.Tool{kit.ReadTool}, History: hist, Stream: true})
			path := d.Path("", true)
			resp, b := do(t, "POST", h.URL+path, body, api.api.headers)
			require.Equal(t, 200, resp.StatusCode, string(b))
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("stream:\n%s", b)
				}
			})
			evs := kit.SSE(b)
			require.NotEmpty(t, evs)
			reqs := h.mock.Requests()
			require.Len(t, reqs, 2)
			require.True(t, reqs[1].Stream)
			// As the driver's stream reader accumulates it: one reply.
			got, err := d.ParseStream(b)
			require.NoError(t, err)
			require.Equal(t, merged, got.Text)
			require.Equal(t, d.Stops().End, got.Stop)
			require.EqualValues(t, 15, got.Output)
			check, ok := wire[d.Name()]
			require.True(t, ok, "no stream reading for %s", d.Name())
			check(t, evs, b)
		})
	}
}
