package proxy

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

// TestReadInto: the bytes io.ReadAll reads, whatever the room given
// (exact, short, none) and however the reader splits them; an error other
// than io.EOF is returned with what came before it; a body of exactly the
// room given stays in that buffer.
func TestReadInto(t *testing.T) {
	body := strings.Repeat("0123456789", 300)
	for _, room := range []int{0, 1, 100, len(body) - 1, len(body), len(body) + 7} {
		for name, r := range map[string]func() io.Reader{
			"whole":    func() io.Reader { return strings.NewReader(body) },
			"one byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(body)) },
			"half":     func() io.Reader { return iotest.HalfReader(strings.NewReader(body)) },
			"data+EOF": func() io.Reader { return iotest.DataErrReader(strings.NewReader(body)) },
		} {
			buf := make([]byte, 0, room)
			got, err := readInto(r(), buf)
			require.NoError(t, err, "%s, room %d", name, room)
			require.Equal(t, body, string(got), "%s, room %d", name, room)
			if room == len(body) {
				require.Equal(t, &buf[:1][0], &got[0], "%s: an exact fit was copied", name)
			}
		}
	}
	boom := errors.New("boom")
	got, err := readInto(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom)), make([]byte, 0, 10))
	require.ErrorIs(t, err, boom)
	require.True(t, bytes.Equal(got, []byte("abc")))
}
