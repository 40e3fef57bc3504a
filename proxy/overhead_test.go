package proxy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

func TestAcceptsTrailers(t *testing.T) {
	for te, want := range map[string]bool{
		"":                      false,
		"trailers":              true,
		"Trailers":              true,
		"gzip, trailers":        true,
		"trailers;q=1, deflate": true,
		" deflate ,  trailers ": true,
		"gzip":                  false,
		"trailersx":             false,
		"x-trailers, chunked":   false,
	} {
		var h fasthttp.RequestHeader
		if te != "" {
			h.Set("TE", te)
		}
		require.Equal(t, want, acceptsTrailers(&h), "TE: %q", te)
	}
}

func TestAppendOverhead(t *testing.T) {
	require.Equal(t, "0.412ms", string(appendOverhead(nil, 412*time.Microsecond+999)))
	require.Equal(t, "12.000ms", string(appendOverhead(nil, 12*time.Millisecond)))
	require.Equal(t, 0.412, overheadMillis(412*time.Microsecond+999))
}
