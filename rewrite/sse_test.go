package rewrite_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
	"github.com/stretchr/testify/require"
)

// sseEvent is an rewrite.Event copied out of the reader for comparison.
type sseEvent struct {
	Name, Data, ID string
	HasData        bool
	Raw            string
}

// readAll reads every event, checking that the Raws reproduce the input.
func readAll(t testing.TB, r io.Reader, opts ...rewrite.ReaderOption) ([]sseEvent, error) {
	rd := rewrite.NewReader(r, opts...)
	var out []sseEvent
	var raw []byte
	for {
		ev, err := rd.Next()
		if err != nil {
			if err == io.EOF {
				return out, nil
			}
			return out, err
		}
		raw = append(raw, ev.Raw...)
		out = append(out, sseEvent{Name: string(ev.Name), Data: string(ev.Data), ID: string(ev.ID), HasData: ev.HasData(), Raw: string(ev.Raw)})
		if len(out) > 100000 {
			t.Fatal("reader does not terminate")
		}
	}
}

func TestReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []sseEvent
	}{
		{"empty", "", nil},
		{"lf", "event: a\ndata: x\n\nevent: b\ndata: y\n\n", []sseEvent{
			{Name: "a", Data: "x", HasData: true, Raw: "event: a\ndata: x\n\n"},
			{Name: "b", Data: "y", HasData: true, Raw: "event: b\ndata: y\n\n"},
		}},
		{"crlf", "event: a\r\ndata: x\r\n\r\nevent: b\r\ndata: y\r\n\r\n", []sseEvent{
			{Name: "a", Data: "x", HasData: true, Raw: "event: a\r\ndata: x\r\n\r\n"},
			{Name: "b", Data: "y", HasData: true, Raw: "event: b\r\ndata: y\r\n\r\n"},
		}},
		{"cr", "data: x\r\rdata: y\r\r", []sseEvent{
			{Data: "x", HasData: true, Raw: "data: x\r\r"},
			{Data: "y", HasData: true, Raw: "data: y\r\r"},
		}},
		{"mixed endings", "data: a\r\n\ndata: b\r\r\ndata: c\n\r", []sseEvent{
			{Data: "a", HasData: true, Raw: "data: a\r\n\n"},
			{Data: "b", HasData: true, Raw: "data: b\r\r\n"},
			{Data: "c", HasData: true, Raw: "data: c\n\r"},
		}},
		{"comments", ": ping\n\ndata: x\n: inside\n\n", []sseEvent{
			{Raw: ": ping\n\n"},
			{Data: "x", HasData: true, Raw: "data: x\n: inside\n\n"},
		}},
		{"multi-line data", "data: a\ndata: b\ndata:\ndata: c\n\n", []sseEvent{
			{Data: "a\nb\n\nc", HasData: true, Raw: "data: a\ndata: b\ndata:\ndata: c\n\n"},
		}},
		{"id and retry", "id: 7\nretry: 1000\ndata: x\n\n", []sseEvent{
			{ID: "7", Data: "x", HasData: true, Raw: "id: 7\nretry: 1000\ndata: x\n\n"},
		}},
		{"last field wins", "event: a\nevent: b\nid: 1\nid: 2\ndata: x\n\n", []sseEvent{
			{Name: "b", ID: "2", Data: "x", HasData: true, Raw: "event: a\nevent: b\nid: 1\nid: 2\ndata: x\n\n"},
		}},
		{"no trailing blank line", "data: x\n\ndata: y", []sseEvent{
			{Data: "x", HasData: true, Raw: "data: x\n\n"},
			{Data: "y", HasData: true, Raw: "data: y"},
		}},
		{"no trailing blank line after newline", "data: [DONE]\n", []sseEvent{
			{Data: "[DONE]", HasData: true, Raw: "data: [DONE]\n"},
		}},
		{"trailing lone cr at eof", "data: x\r", []sseEvent{
			{Data: "x", HasData: true, Raw: "data: x\r"},
		}},
		{"empty data", "data:\n\ndata\n\n", []sseEvent{
			{HasData: true, Raw: "data:\n\n"},
			{HasData: true, Raw: "data\n\n"},
		}},
		{"event without data", "event: ping\n\n", []sseEvent{
			{Name: "ping", Raw: "event: ping\n\n"},
		}},
		{"unknown field", "foo: bar\ndata: x\n\n", []sseEvent{
			{Data: "x", HasData: true, Raw: "foo: bar\ndata: x\n\n"},
		}},
		{"spaces", "data:x\n\ndata:  x \n\n", []sseEvent{
			{Data: "x", HasData: true, Raw: "data:x\n\n"},
			{Data: " x ", HasData: true, Raw: "data:  x \n\n"},
		}},
		{"extra blank lines", "data: a\n\n\n\ndata: b\n\n", []sseEvent{
			{Data: "a", HasData: true, Raw: "data: a\n\n"},
			{Raw: "\n"},
			{Raw: "\n"},
			{Data: "b", HasData: true, Raw: "data: b\n\n"},
		}},
		{"bom", "\xef\xbb\xbfdata: x\n\n", []sseEvent{
			{Data: "x", HasData: true, Raw: "\xef\xbb\xbfdata: x\n\n"},
		}},
		{"colon in value", "data: {\"a\":\"b:c\"}\n\n", []sseEvent{
			{Data: `{"a":"b:c"}`, HasData: true, Raw: "data: {\"a\":\"b:c\"}\n\n"},
		}},
	}
	for _, tt := range tests {
		for how, mk := range apitest.Readers(tt.in) {
			t.Run(tt.name+"/"+how, func(t *testing.T) {
				got, err := readAll(t, mk())
				require.NoError(t, err)
				require.Equal(t, tt.want, got)
			})
		}
	}
}

func TestReaderIsComment(t *testing.T) {
	rd := rewrite.NewReader(strings.NewReader(": c\n\ndata:\n\nid: 1\n\nretry: 5\n\n"))
	var got []bool
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		got = append(got, ev.IsComment())
	}
	require.Equal(t, []bool{true, false, false, true}, got)
}

func TestReaderMaxEventSize(t *testing.T) {
	in := "data: ok\n\ndata: " + strings.Repeat("x", 100) + "\n\n"
	for how, mk := range apitest.Readers(in) {
		t.Run(how, func(t *testing.T) {
			got, err := readAll(t, mk(), rewrite.WithMaxEventSize(64))
			require.ErrorIs(t, err, rewrite.ErrEventTooLarge)
			require.Equal(t, []sseEvent{{Data: "ok", HasData: true, Raw: "data: ok\n\n"}}, got)
		})
	}
	// An event of exactly the limit fits.
	ev := "data: " + strings.Repeat("y", 10) + "\n\n"
	got, err := readAll(t, iotest.OneByteReader(strings.NewReader(ev+ev)), rewrite.WithMaxEventSize(len(ev)))
	require.NoError(t, err)
	require.Len(t, got, 2)
}

func TestReaderReadError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("data: a\n\ndata: partial"), iotest.ErrReader(boom))
	rd := rewrite.NewReader(r)
	ev, err := rd.Next()
	require.NoError(t, err)
	require.Equal(t, "a", string(ev.Data))
	ev, err = rd.Next()
	require.ErrorIs(t, err, boom)
	require.Empty(t, ev.Raw)
	_, err = rd.Next()
	require.ErrorIs(t, err, boom, "errors are sticky")
}

func TestReaderEOFIsSticky(t *testing.T) {
	rd := rewrite.NewReader(strings.NewReader("data: x"))
	ev, err := rd.Next()
	require.NoError(t, err)
	require.Equal(t, "data: x", string(ev.Raw))
	for range 3 {
		_, err = rd.Next()
		require.Equal(t, io.EOF, err)
	}
}

func TestReaderNoProgress(t *testing.T) {
	rd := rewrite.NewReader(zeroReader{})
	_, err := rd.Next()
	require.ErrorIs(t, err, io.ErrNoProgress)
}

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

// TestReaderLargeEvents crosses buffer growth and compaction.
func TestReaderLargeEvents(t *testing.T) {
	var in strings.Builder
	var want []string
	for i := range 50 {
		d := strings.Repeat(string(rune('a'+i%26)), i*397)
		want = append(want, d)
		in.WriteString("event: e\ndata: " + d + "\n\n")
	}
	for how, mk := range apitest.Readers(in.String()) {
		t.Run(how, func(t *testing.T) {
			got, err := readAll(t, mk())
			require.NoError(t, err)
			require.Len(t, got, len(want))
			for i := range got {
				require.Equal(t, want[i], got[i].Data)
			}
		})
	}
}

func TestAppendEvent(t *testing.T) {
	tests := []struct {
		name, ev, data, want string
	}{
		{"named", "message_start", `{"a":1}`, "event: message_start\ndata: {\"a\":1}\n\n"},
		{"data only", "", `{"a":1}`, "data: {\"a\":1}\n\n"},
		{"multi-line", "x", "a\nb\r\nc\rd", "event: x\ndata: a\ndata: b\ndata: c\ndata: d\n\n"},
		{"empty", "", "", "data:\n\n"},
		{"trailing newline", "", "a\n", "data: a\ndata:\n\n"},
		{"leading space kept", "", " a", "data:  a\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := rewrite.AppendEvent([]byte("prefix"), []byte(tt.ev), []byte(tt.data))
			require.Equal(t, "prefix"+tt.want, string(out))
			// Round trip through the reader.
			got, err := readAll(t, strings.NewReader(tt.want))
			require.NoError(t, err)
			require.Len(t, got, 1)
			require.Equal(t, tt.ev, got[0].Name)
			wantData := strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(tt.data)
			require.Equal(t, wantData, got[0].Data)
		})
	}
	require.Equal(t, "data: z\n\n", string(rewrite.AppendData(nil, []byte("z"))))
}

func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"event: a\ndata: x\n\n", "data: a\r\ndata: b\r\n\r\n", "data: x\r\r: c\n\n", "id: 1\nretry: 2\n\n",
		"data: x", "\xef\xbb\xbfdata:\n\n\n", "event:\r\n\r\n\r",
	} {
		f.Add([]byte(s), int64(1), uint16(0))
	}
	f.Fuzz(func(t *testing.T, in []byte, seed int64, max uint16) {
		var opts []rewrite.ReaderOption
		if max > 0 {
			opts = append(opts, rewrite.WithMaxEventSize(int(max)))
		}
		whole, errWhole := readAll(t, bytes.NewReader(in), opts...)
		chunked, errChunked := readAll(t, apitest.NewChunkReader(in, seed), opts...)
		if errWhole != nil || errChunked != nil {
			// Only the size limit may fail, and then for both readings.
			require.ErrorIs(t, errWhole, rewrite.ErrEventTooLarge)
			require.ErrorIs(t, errChunked, rewrite.ErrEventTooLarge)
			return
		}
		require.Equal(t, whole, chunked, "events must not depend on chunking")
		var raw []byte
		for _, ev := range whole {
			raw = append(raw, ev.Raw...)
			require.NotEmpty(t, ev.Raw)
		}
		require.Equal(t, string(in), string(raw))
	})
}
