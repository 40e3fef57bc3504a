package rewrite_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/apis"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

// seedRequests adds every request fixture and a few small bodies.
func seedRequests(f *testing.F) {
	for i, api := range apis.All() {
		b := apitest.Fixture(f, api, "request.json")
		f.Add(uint8(i), b, "reminder", int64(0))
		f.Add(uint8(i), b, "x\"\n\xff", int64(100))
	}
	for _, s := range []string{
		`{}`, `{"messages":[]}`, `{"messages":null,"system":null,"tools":null}`, `{"input":"hi"}`,
		`{"contents":[{"parts":[]}]}`, `{"messages":[{"role":"user","content":"q"}]}`,
		`{"messages":[{"role":"user"},{"role":"tool","content":null}]}`, ` { "input" : [ ] } `,
		`{"systemInstruction":{},"generationConfig":{}}`, `{"system":[],"max_tokens":1.5e3}`,
		`{"system":"a\u00e9\"b\/"}`, `{"messages":[{"role":"user","content":[]},{"role":"assistant","content":"{"}]}`,
		`{"messages":[{"role":"developer","content":[{"type":"text","text":"S"}]}]}`,
		`{"messages":[{"role":"system","content":null},{"role":"tool","tool_call_id":"a","content":"r"}]}`,
		`{"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"q"}]}]}`,
		`{"input":[{"role":"user","content":"q"},{"type":"function_call_output","call_id":"c","output":"r"}]}`,
		`{"tools":[{"type":"custom","name":"apply_patch","format":{"type":"text"}}],"input":[{"type":"custom_tool_call","call_id":"c","name":"apply_patch","input":"*** Begin Patch\n\"x\""},{"type":"custom_tool_call_output","call_id":"c","output":[{"type":"input_text","text":"r"}]}]}`,
		`{"instructions":null,"input":null,"max_output_tokens":null}`,
		`{"tools":[{"googleSearch":{}},{"functionDeclarations":[{"name":"a"}]}],"system_instruction":null}`,
		`{"contents":[{"parts":[{"text":"q"}]},{"role":"model","parts":[]}],"generation_config":{"max_output_tokens":1}}`,
		"{\n  \"model\": \"m\",\n  \"messages\": []\n}\n", `{"a":1,"a":2,"messages":[],"messages":{}}`,
	} {
		for i := range apis.All() {
			f.Add(uint8(i), []byte(s), "t", int64(7))
		}
	}
}

func FuzzParseRequestApplyEdits(f *testing.F) {
	seedRequests(f)
	f.Fuzz(func(t *testing.T, api uint8, body []byte, text string, limit int64) {
		all := apis.All()
		c := apitest.CodecFor(all[int(api)%len(all)])
		e := conv.RequestEdits{
			AddTools:       []conv.ToolSpec{{Name: "tool" + text, Description: text}},
			AppendSystem:   []string{text},
			AppendUserText: []string{text, "second"},
		}
		if limit > 0 {
			e.SetMaxOutputTokens = limit
		}
		before, err := c.ParseRequest(body)
		if err != nil {
			require.ErrorIs(t, err, rewrite.ErrMalformed)
			// Outside its contract ApplyEdits may fail or produce garbage,
			// but must not panic.
			_, _ = c.ApplyEdits(body, e)
			return
		}
		// A view served from the view cache is the view of a fresh parse.
		fresh, err := apitest.ParseUncached(all[int(api)%len(all)], body)
		require.NoError(t, err)
		apitest.RequireSameView(t, fresh, before)
		orig := append([]byte(nil), body...)
		out, err := c.ApplyEdits(body, e)
		require.NoError(t, err, "a body ParseRequest accepts must take every edit")
		require.Equal(t, orig, body)
		require.True(t, gjson.ValidBytes(out), "invalid JSON out:\n%s", out)
		again, err := c.ApplyEdits(body, e)
		require.NoError(t, err)
		require.Equal(t, out, again)
		if limit <= 0 {
			require.True(t, apitest.IsSubsequence(bytes.ReplaceAll(body, []byte("null"), nil), out))
		}
		after, err := c.ParseRequest(out)
		require.NoError(t, err, "edited body must parse:\n%s", out)
		require.Len(t, after.Tools, len(before.Tools)+1)
		if limit > 0 {
			require.Equal(t, limit, after.MaxOutputTokens)
		}
		// Text for every user turn at once gives the bytes (or the error)
		// of one turn at a time.
		var ops []rewrite.UserTexts
		for i, m := range before.Messages {
			if (m.Role == conv.RoleUser || m.Role == conv.RoleTool) && (i+1 == len(before.Messages) || before.Messages[i+1].Role != conv.RoleTool) {
				ops = append(ops, rewrite.UserTexts{Pos: i, Texts: []string{text}})
			}
		}
		tc := c
		want, wantErr := rewrite.AppendUserTextsOneByOne(tc, body, ops)
		got, err := tc.AppendUserTexts(body, ops)
		if wantErr != nil {
			require.EqualError(t, err, wantErr.Error())
		} else {
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
		}
	})
}

// seedStreams adds every stream fixture, whole and as single events.
func seedStreams(f *testing.F) {
	for i, api := range apis.All() {
		b := apitest.Fixture(f, api, "stream.sse")
		f.Add(uint8(i), b)
		rd := rewrite.NewReader(bytes.NewReader(b))
		for {
			ev, err := rd.Next()
			if err != nil {
				break
			}
			f.Add(uint8(i), append([]byte(nil), ev.Raw...))
		}
	}
	// Streams with a custom (free-form) tool call, for the APIs that have
	// them (Responses).
	for i, api := range apis.All() {
		if b, err := apitest.ReadFixture(api, "splice_custom.sse"); err == nil {
			f.Add(uint8(i), b)
		}
	}
}

func FuzzStreamDecoders(f *testing.F) {
	seedStreams(f)
	f.Fuzz(func(t *testing.T, api uint8, stream []byte) {
		all := apis.All()
		c := apitest.CodecFor(all[int(api)%len(all)])
		dec := c.NewStreamDecoder()
		var acc rewrite.StreamAccumulator
		rd := rewrite.NewReader(bytes.NewReader(stream))
		for {
			ev, err := rd.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			evs, err := dec.Decode(ev)
			if err != nil {
				require.ErrorIs(t, err, rewrite.ErrMalformedReply)
				continue
			}
			acc.Add(evs...)
		}
		_ = acc.Reply()
		// The same bytes as a complete reply body must not panic either,
		// and viewed without the text they give the same view but for it.
		want, err := c.ParseReply(stream)
		if err != nil {
			require.True(t, errors.Is(err, rewrite.ErrMalformedReply))
		}
		got, gerr := c.(rewrite.ReplyCallsParser).ParseReplyCalls(stream)
		require.Equal(t, err == nil, gerr == nil)
		if err == nil {
			want.Text = ""
			require.Equal(t, want, got)
		}
	})
}
