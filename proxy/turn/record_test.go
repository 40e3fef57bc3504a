package turn

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// decodeUserText reads back exactly what encodeRecord wrote, escapes and all.
func TestDecodeUserTextRoundTrip(t *testing.T) {
	for _, texts := range [][]string{
		{"<system-reminder>Active topic: x</system-reminder>"},
		{"a \"quoted\" \\ back\nslash", "é ☃ \u2028 <&>", ""},
		{"bad utf-8: \xff\xfe"},
	} {
		data := encodeRecord(newUserTextRecord(texts))
		got, err := decodeUserText(data)
		require.NoError(t, err)
		var want userTextRecord
		require.NoError(t, json.Unmarshal(data, &want))
		require.Equal(t, want.Texts, got)
	}
	for _, bad := range []string{``, `{}`, `{"texts":"x"}`, `{"texts":[1]}`, `{"texts":[`} {
		_, err := decodeUserText([]byte(bad))
		require.Error(t, err, bad)
	}
}
