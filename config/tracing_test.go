package config

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTracingValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mod     func(*Tracing)
		problem string // key of the one problem; "" valid
	}{
		{"defaults", func(*Tracing) {}, ""},
		{"grpc host:port", func(c *Tracing) { c.Protocol, c.Endpoint, c.Insecure = TracingGRPC, "otel:4317", true }, ""},
		{"http URL with path", func(c *Tracing) { c.Endpoint = "https://gw.example.com/otlp/v1/traces" }, ""},
		{"headers", func(c *Tracing) { c.Headers = []string{"authorization=Bearer x", "x-tenant = a=b"} }, ""},
		{"ratio 0", func(c *Tracing) { c.SampleRatio = 0 }, ""},
		{"unknown protocol", func(c *Tracing) { c.Protocol = "thrift" }, "tracing.protocol"},
		{"ratio above 1", func(c *Tracing) { c.SampleRatio = 1.5 }, "tracing.sample_ratio"},
		{"negative ratio", func(c *Tracing) { c.SampleRatio = -0.1 }, "tracing.sample_ratio"},
		{"NaN ratio", func(c *Tracing) { c.SampleRatio = math.NaN() }, "tracing.sample_ratio"},
		{"no service name", func(c *Tracing) { c.ServiceName = " " }, "tracing.service_name"},
		{"host without port", func(c *Tracing) { c.Endpoint = "otel" }, "tracing.endpoint"},
		{"port without host", func(c *Tracing) { c.Endpoint = ":4317" }, "tracing.endpoint"},
		{"bad port", func(c *Tracing) { c.Endpoint = "otel:99999" }, "tracing.endpoint"},
		{"other scheme", func(c *Tracing) { c.Endpoint = "ftp://otel:21" }, "tracing.endpoint"},
		{"URL without host", func(c *Tracing) { c.Endpoint = "http:///v1/traces" }, "tracing.endpoint"},
		{"URL with credentials", func(c *Tracing) { c.Endpoint = "https://u:p@otel" }, "tracing.endpoint"},
		{"https but insecure", func(c *Tracing) { c.Endpoint, c.Insecure = "https://otel", true }, "tracing.insecure"},
		{"header without value", func(c *Tracing) { c.Headers = []string{"authorization"} }, "tracing.headers"},
		{"header bad name", func(c *Tracing) { c.Headers = []string{"bad name=x"} }, "tracing.headers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			tc.mod(&c.Tracing)
			err := c.Validate()
			if tc.problem == "" {
				require.NoError(t, err)
				return
			}
			var ve *ValidationError
			require.True(t, errors.As(err, &ve), "%v", err)
			require.Len(t, ve.Problems, 1, "%v", err)
			require.Equal(t, tc.problem, ve.Problems[0].Key, "%v", err)
		})
	}
}

// TestTracingHeadersNeverEchoed: a malformed header entry is reported by
// position, without its value (a credential).
func TestTracingHeadersNeverEchoed(t *testing.T) {
	c := Defaults()
	c.Tracing.Headers = []string{"authorization Bearer s3cr3t"}
	err := c.Validate()
	require.Error(t, err)
	require.NotContains(t, err.Error(), "s3cr3t")
	require.Contains(t, err.Error(), "entry 1")
}

func TestTracingHeadersRedacted(t *testing.T) {
	c := Defaults()
	c.Tracing.Headers = []string{"authorization=Bearer s3cr3t", "x-tenant=team"}
	r := c.Redacted()
	require.Equal(t, []string{"authorization=" + Mask, "x-tenant=" + Mask}, r.Tracing.Headers)
	require.Equal(t, "authorization=Bearer s3cr3t", c.Tracing.Headers[0], "Redacted does not modify c")
	s := c.String()
	require.NotContains(t, s, "s3cr3t")
	require.Contains(t, s, "tracing.headers=[authorization=***,x-tenant=***]")
	require.Nil(t, Defaults().Redacted().Tracing.Headers, "unset stays unset")
}

func TestTracingHeaderPairs(t *testing.T) {
	c := Tracing{Headers: []string{"authorization = Bearer a=b", "x-k=v"}}
	require.Equal(t, map[string]string{"authorization": "Bearer a=b", "x-k": "v"}, c.HeaderPairs())
	require.Nil(t, (&Tracing{}).HeaderPairs())
}

// TestTracingFromEnv: every key has its environment variable; headers
// are comma-separated.
func TestTracingFromEnv(t *testing.T) {
	c, err := Load(LoadOptions{Env: []string{
		"SHEPHERD_TRACING_ENABLED=true", "SHEPHERD_TRACING_PROTOCOL=grpc",
		"SHEPHERD_TRACING_ENDPOINT=otel:4317", "SHEPHERD_TRACING_INSECURE=true",
		"SHEPHERD_TRACING_SAMPLE_RATIO=0.25", "SHEPHERD_TRACING_SERVICE_NAME=edge",
		"SHEPHERD_TRACING_HEADERS=authorization=Bearer t,x-tenant=a",
	}})
	require.NoError(t, err)
	require.Equal(t, Tracing{
		Enabled: true, Protocol: TracingGRPC, Endpoint: "otel:4317", Insecure: true, SampleRatio: 0.25,
		ServiceName: "edge", Headers: []string{"authorization=Bearer t", "x-tenant=a"},
	}, c.Tracing)
	require.False(t, strings.Contains(c.String(), "Bearer t"))
}
