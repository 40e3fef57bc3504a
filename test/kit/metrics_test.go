package kit

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const exposition = `# HELP shepherd_requests_total Requests.
# TYPE shepherd_requests_total counter
shepherd_requests_total{route="messages",status="200"} 3
shepherd_requests_total{route="messages",status="502"} 1
shepherd_requests_total{route="responses",status="200"} 2
# HELP shepherd_streams_open Open streams.
# TYPE shepherd_streams_open gauge
shepherd_streams_open 0
# HELP shepherd_overhead_seconds Overhead.
# TYPE shepherd_overhead_seconds histogram
shepherd_overhead_seconds_bucket{le="0.1"} 1
shepherd_overhead_seconds_bucket{le="+Inf"} 1
shepherd_overhead_seconds_sum 0.01
shepherd_overhead_seconds_count 1
`

func TestMetricSet(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader(exposition))
	require.NoError(t, err)
	require.Equal(t, 3.0, m.Value("shepherd_requests_total", `route="messages",status="200"`))
	require.Equal(t, 3.0, m.Value("shepherd_requests_total", `route="messages"`, `status="200"`))
	require.Zero(t, m.Value("shepherd_requests_total", `route="messages"`), "Value matches the whole label set")
	require.Equal(t, 4.0, m.Sum("shepherd_requests_total", `route="messages"`))
	require.Equal(t, 6.0, m.Sum("shepherd_requests_total"))
	require.Zero(t, m.Value("shepherd_absent_total"))
	require.True(t, m.Has("shepherd_streams_open"))
	require.Zero(t, m.Value("shepherd_streams_open"))
	require.True(t, m.IsHistogram("shepherd_overhead_seconds"))
	require.False(t, m.IsHistogram("shepherd_streams_open"))
	_, err = ParseMetrics(strings.NewReader("bad line {\n"))
	require.Error(t, err)
}
