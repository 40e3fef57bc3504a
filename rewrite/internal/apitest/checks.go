package apitest

import (
	"bytes"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// ParseUncached parses body with api's codec and no view cache.
func ParseUncached(api *rewrite.Descriptor, body []byte) (*conv.Request, error) {
	return api.NewCodec(nil).ParseRequest(body)
}

// RequireSameView checks that a view served from the cache is the view a
// fresh parse gives, digests included (they must be the digests of the
// messages as returned), and that both give the same anchors.
func RequireSameView(t testing.TB, want, got *conv.Request) {
	t.Helper()
	require.Equal(t, conv.Anchors(stripAll(want.Messages)), conv.Anchors(got.Messages), "anchors from cached digests")
	for i := range got.Messages {
		if d := got.Messages[i].Digest; d != nil {
			m := got.Messages[i]
			m.Digest = nil
			require.Equal(t, conv.MessageDigest(&m), d, "digest of message %d", i)
		}
	}
	if got.MessageAnchors != nil {
		require.Equal(t, conv.Anchors(stripAll(want.Messages)), got.MessageAnchors, "anchors the codec computed")
	}
	require.Equal(t, conv.Anchors(stripAll(want.Messages)), got.Anchors(), "Request.Anchors")
	w, g := *want, *got
	w.Messages, g.Messages = stripAll(want.Messages), stripAll(got.Messages)
	w.MessageAnchors, g.MessageAnchors = nil, nil
	w.Lineage, g.Lineage = conv.BodyLineage{}, conv.BodyLineage{} // the memo's, not the body's
	require.Equal(t, w, g)
}

func stripAll(msgs []conv.Message) []conv.Message {
	out := make([]conv.Message, len(msgs))
	for i, m := range msgs {
		m.Digest = nil
		out[i] = m
	}
	return out
}

// wantFingerprint is what RequestFingerprint must return: ParseRequest's
// Fingerprint, "" when ParseRequest fails.
func wantFingerprint(c rewrite.Codec, body []byte) string {
	v, err := c.ParseRequest(body)
	if err != nil {
		return ""
	}
	return v.Fingerprint
}

// CheckFingerprint compares RequestFingerprint with ParseRequest for api's
// codec, with the view cache cold, warm and off, and returns the
// fingerprint.
func CheckFingerprint(t testing.TB, api *rewrite.Descriptor, body []byte) string {
	t.Helper()
	var fp string
	for _, budget := range []int64{rewrite.DefaultViewCacheBytes, 0} {
		c := api.NewCodec(rewrite.NewViewCache(budget))
		got := rewrite.RequestFingerprint(c, body) // cold
		want := wantFingerprint(c, body)           // warms the cache
		require.Equal(t, want, got, "cold cache, budget %d: %q", budget, body)
		require.Equal(t, want, rewrite.RequestFingerprint(c, body), "warm cache, budget %d: %q", budget, body)
		fp = want
	}
	return fp
}

// LongConversation builds a body of api with n rounds (user text,
// assistant call(s), tool result(s)); spacing varies so separators are
// exercised. A round is the API's fixture longconv_round.txt: one element
// a line, a format with %[1]d for the round and %[2]s (or %[2]q) for its
// call id.
func LongConversation(t testing.TB, api *rewrite.Descriptor, n int) []byte {
	t.Helper()
	round := strings.Split(strings.TrimSpace(string(Fixture(t, api, "longconv_round.txt"))), "\n")
	var els []string
	sep := []string{",", ", ", ",\n  "}
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		for _, line := range round {
			els = append(els, fmt.Sprintf(line, i, id))
		}
	}
	var b strings.Builder
	for i, e := range els {
		if i > 0 {
			b.WriteString(sep[i%len(sep)])
		}
		b.WriteString(e)
	}
	key := CodecFor(api).(rewrite.UserTurnLocator).ConversationKey()
	return []byte(`{"model":"m","` + key + `":[` + b.String() + `]}`)
}

// UserTurns lists the view positions AppendUserTextAt accepts in body;
// with last, only the last of each run of tool messages (where the turn
// engine puts a turn's reminder).
func UserTurns(t testing.TB, api *rewrite.Descriptor, body []byte, last bool) []int {
	t.Helper()
	req, err := ParseUncached(api, body)
	require.NoError(t, err)
	var out []int
	for i, m := range req.Messages {
		if m.Role != conv.RoleUser && m.Role != conv.RoleTool {
			continue
		}
		if last && i+1 < len(req.Messages) && req.Messages[i+1].Role == conv.RoleTool {
			continue
		}
		out = append(out, i)
	}
	return out
}

// ReportCPU adds the process CPU time per operation to a benchmark: on a
// shared machine it moves less than the wall time ns/op does.
func ReportCPU(b *testing.B, run func()) {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start, n := cpu(), 0
	for b.Loop() {
		run()
		n++
	}
	b.ReportMetric(float64(cpu()-start)/float64(n), "cpu-ns/op")
}

// ErrorShape is the error body api's clients expect for Status, and the
// stream error event (Event; "" to not pin it).
// (An alias of an unnamed struct, so that other packages' tables may
// leave the field names out.)
type ErrorShape = struct {
	Status int
	Body   string
	Event  string
}

// CheckErrorShapes checks api's ErrorBody and StreamErrorEvent for msg
// against shapes, and that the stream error decodes as an Error event with
// the message.
func CheckErrorShapes(t *testing.T, api *rewrite.Descriptor, msg string, shapes []ErrorShape) {
	t.Helper()
	c := CodecFor(api)
	for _, tt := range shapes {
		require.JSONEq(t, tt.Body, string(c.ErrorBody(tt.Status, msg)))
		require.Equal(t, tt.Body, string(c.ErrorBody(tt.Status, msg)))
		if tt.Event != "" {
			require.Equal(t, tt.Event, string(c.StreamErrorEvent(tt.Status, msg)))
		}
		rd := rewrite.NewReader(bytes.NewReader(c.StreamErrorEvent(tt.Status, msg)))
		ev, err := rd.Next()
		require.NoError(t, err)
		evs, err := c.NewStreamDecoder().Decode(ev)
		require.NoError(t, err)
		require.Len(t, evs, 1)
		require.Equal(t, rewrite.Error, evs[0].Kind)
		require.Equal(t, msg, evs[0].ErrorMessage)
	}
}

// Terminal is one SSE event (Name "" for none) and whether it ends api's
// stream.
type Terminal = struct {
	Name, Data string
	Want       bool
}

// CheckTerminal checks rewrite.IsTerminalEvent on api's events.
func CheckTerminal(t *testing.T, api *rewrite.Descriptor, tests []Terminal) {
	t.Helper()
	for _, tt := range tests {
		ev := rewrite.Event{Data: []byte(tt.Data)}
		if tt.Name != "" {
			ev.Name = []byte(tt.Name)
		}
		if got := rewrite.IsTerminalEvent(api, &ev); got != tt.Want {
			t.Errorf("%s %q %s: got %v, want %v", api, tt.Name, tt.Data, got, tt.Want)
		}
	}
}

// Side is one request body and the side-request reason SideRequest must
// give it ("" for an agent turn).
type Side = struct {
	Name, Body, Want string
}

// CheckSide runs each case as a subtest of SideRequest on api's codec.
func CheckSide(t *testing.T, api *rewrite.Descriptor, cases []Side) {
	t.Helper()
	for _, c := range cases {
		t.Run(api.Name+"/"+c.Name, func(t *testing.T) {
			require.Equal(t, c.Want, rewrite.SideRequest(CodecFor(api), []byte(c.Body)))
			// A request the codec parses carries the same answer, found
			// from the parse's own index.
			if v, err := CodecFor(api).ParseRequest([]byte(c.Body)); err == nil {
				require.True(t, v.SideKnown, "ParseRequest classified the request")
				require.Equal(t, c.Want, v.Side, "ParseRequest's Side")
			}
		})
	}
}

// ClientRewrite is one conversation as the API produced it (Model), as a
// real client sends it back (Client), and with a real edit of the model's
// turn (Edited).
type ClientRewrite = struct {
	Name, Model, Client, Edited string
}

// CheckAnchorsSurvive checks, as a subtest per case, that the anchors of
// every message match between Model and Client (or the ledger would not be
// replayed), and that Edited keeps the first turn's anchor but changes the
// last one.
func CheckAnchorsSurvive(t *testing.T, api *rewrite.Descriptor, cases []ClientRewrite) {
	anchors := func(t *testing.T, body string) []string {
		t.Helper()
		v, err := CodecFor(api).ParseRequest([]byte(body))
		require.NoError(t, err)
		return conv.Anchors(v.Messages)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			want := anchors(t, c.Model)
			require.Equal(t, want, anchors(t, c.Client))
			edited := anchors(t, c.Edited)
			require.Equal(t, want[0], edited[0], "the first turn is the same")
			require.NotEqual(t, want[len(want)-1], edited[len(edited)-1], "an edited turn is another anchor")
		})
	}
}
