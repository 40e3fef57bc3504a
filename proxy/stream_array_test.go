package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// geminiArrayStream is a Gemini stream in its JSON-array framing, with the
// characters that could fool a scanner inside strings.
const geminiArrayStream = "[{\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Hel\"}],\"role\": \"model\"}}]}\n" +
	",\r\n{\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"lo, [\\\"x\\\"]} {\"}]}}],\"n\":[1,2,{}]}\n" +
	",\r\n{\"candidates\": [{\"finishReason\": \"STOP\"}],\"usageMetadata\": {\"totalTokenCount\": 7}}\n]"

var errElem = []byte(`{"error":{"code":502,"message":"upstream connection failed","status":"UNAVAILABLE"}}`)

// cutArray feeds data to copyChunks in reads of step bytes, as a stream
// that ends after them (cut), and returns what was sent followed by the
// error tail.
func cutArray(t testing.TB, data []byte, step int) (sent, body []byte) {
	var out bytes.Buffer
	arr := &jsonArrayStream{}
	_, err := copyChunks(&sizedReader{data: data, steps: repeat(step, len(data)+1)}, &out, arr)
	sent = append([]byte(nil), out.Bytes()...)
	if err != nil {
		out.Write(arr.errorTail(errElem))
	}
	return sent, out.Bytes()
}

func repeat(n, times int) []int {
	s := make([]int, times)
	for i := range s {
		s[i] = n
	}
	return s
}

// TestJSONArrayStreamCutAnywhere: a Gemini array stream cut after any byte,
// read in any chunking, reaches the client as a prefix of the stream that
// ends between elements, and with the error tail it parses as a JSON array
// whose last element is the error.
func TestJSONArrayStreamCutAnywhere(t *testing.T) {
	full := []byte(geminiArrayStream)
	for _, step := range []int{1, 3, 7, 64} {
		for k := 0; k < len(full); k++ {
			sent, body := cutArray(t, full[:k], step)
			require.True(t, bytes.HasPrefix(full, sent), "k=%d step=%d: %q", k, step, sent)
			var elems []json.RawMessage
			require.NoError(t, json.Unmarshal(body, &elems), "k=%d step=%d: %q", k, step, body)
			require.JSONEq(t, string(errElem), string(elems[len(elems)-1]))
		}
	}
	sent, body := cutArray(t, full, 5)
	require.Equal(t, full, sent, "a whole stream is sent byte for byte")
	require.Equal(t, full, body, "and gets no tail")
}

func TestJSONArrayStreamNotAnArray(t *testing.T) {
	obj := []byte(`{"error":{"code":429,"message":"slow down","status":"RESOURCE_EXHAUSTED"}}`)
	var out bytes.Buffer
	arr := &jsonArrayStream{}
	_, err := copyChunks(&sizedReader{data: obj[:20], steps: []int{3, 3}}, &out, arr)
	require.NoError(t, err, "a body that is not an array has no end to check")
	require.Equal(t, string(obj[:20]), out.String(), "and passes through as it comes")
	require.Nil(t, arr.errorTail(errElem))
}

func TestJSONArrayStreamSendsWholeElements(t *testing.T) {
	big := append([]byte(`[{"t":"`), bytes.Repeat([]byte("x"), 64<<10)...)
	// The element never completes: the stream is cut inside it.
	var out bytes.Buffer
	_, err := copyChunks(&sizedReader{data: big}, &out, &jsonArrayStream{})
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.Equal(t, 1, out.Len(), "the element is sent once whole, got %d bytes", out.Len())
}

// FuzzJSONArrayStream: for any JSON array and any cut point and chunking,
// what is sent is a prefix of the stream and, closed with the error tail,
// parses as a JSON array.
func FuzzJSONArrayStream(f *testing.F) {
	f.Add([]byte(geminiArrayStream), uint16(40), uint8(3))
	f.Add([]byte(`[1, "a,]", [2, {"b": "}"}], true, null, -1.5e3]`), uint16(12), uint8(1))
	f.Add([]byte(` [ ] `), uint16(2), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16, step uint8) {
		if !json.Valid(data) || !bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("[")) {
			t.Skip()
		}
		k := int(cut) % (len(data) + 1)
		sent, body := cutArray(t, data[:k], int(step)%16+1)
		if !bytes.HasPrefix(data, sent) {
			t.Fatalf("sent %q is not a prefix of %q", sent, data)
		}
		if !json.Valid(body) {
			t.Fatalf("cut at %d: %q does not parse", k, body)
		}
	})
}
