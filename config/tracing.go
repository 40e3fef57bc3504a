package config

import (
	"net"
	"net/url"
	"strings"
)

// Values of tracing.protocol.
const (
	TracingGRPC = "grpc"
	TracingHTTP = "http"
)

// Tracing configures OpenTelemetry trace export (docs/tracing.md): a span
// per model request with the GenAI semantic conventions, a child span per
// upstream round and per hook phase, sent over OTLP. Off by default; off,
// the proxy makes no tracer call at all.
type Tracing struct {
	// Enabled: key tracing.enabled; default false.
	Enabled bool `mapstructure:"enabled"`
	// Protocol: key tracing.protocol; OTLP over "grpc" or "http"
	// (protobuf over HTTP/1.1). Default http.
	Protocol string `mapstructure:"protocol"`
	// Endpoint: key tracing.endpoint; the collector, host:port or a URL
	// (http://host:port, https://host:port; over HTTP a URL's path replaces
	// /v1/traces). Default "": the protocol's standard port on localhost
	// (localhost:4317 gRPC, localhost:4318 HTTP).
	Endpoint string `mapstructure:"endpoint"`
	// Insecure: key tracing.insecure; send without TLS (host:port
	// endpoints; a URL's scheme says it itself). Default false.
	Insecure bool `mapstructure:"insecure"`
	// SampleRatio: key tracing.sample_ratio; the fraction of traces
	// recorded that start at shepherd, 0 to 1; a request whose agent sent a
	// traceparent follows the agent's sampling decision. Default 1.
	SampleRatio float64 `mapstructure:"sample_ratio"`
	// ServiceName: key tracing.service_name; the service.name resource
	// attribute. Default shepherd.
	ServiceName string `mapstructure:"service_name"`
	// Headers: key tracing.headers; "name=value" pairs sent with every
	// export (a collector's credentials: "authorization=Bearer …"); their
	// values are masked in Redacted and String. Default [] (none).
	Headers []string `mapstructure:"headers"`
}

// defaultTracing is the tracing section's defaults.
func defaultTracing() Tracing {
	return Tracing{
		Enabled:     false,
		Protocol:    TracingHTTP,
		Endpoint:    "",
		Insecure:    false,
		SampleRatio: 1,
		ServiceName: "shepherd",
		Headers:     nil,
	}
}

// HeaderPairs splits tracing.headers into names and values (validated:
// every entry is name=value).
func (t *Tracing) HeaderPairs() map[string]string {
	if len(t.Headers) == 0 {
		return nil
	}
	m := make(map[string]string, len(t.Headers))
	for _, h := range t.Headers {
		name, value, _ := strings.Cut(h, "=")
		m[strings.TrimSpace(name)] = strings.TrimSpace(value)
	}
	return m
}

// redactedHeaders masks the value of every tracing.headers entry.
func redactedHeaders(hs []string) []string {
	if hs == nil {
		return nil
	}
	out := make([]string, len(hs))
	for i, h := range hs {
		name, _, _ := strings.Cut(h, "=")
		out[i] = name + "=" + Mask
	}
	return out
}

func (t *Tracing) validate(p *problems) {
	switch t.Protocol {
	case TracingGRPC, TracingHTTP:
	default:
		p.add("tracing.protocol", "%q is not one of grpc, http", t.Protocol)
	}
	if t.SampleRatio < 0 || t.SampleRatio > 1 || t.SampleRatio != t.SampleRatio {
		p.add("tracing.sample_ratio", "%v is out of range: must be between 0 and 1", t.SampleRatio)
	}
	if strings.TrimSpace(t.ServiceName) == "" {
		p.add("tracing.service_name", "is required")
	}
	t.validateEndpoint(p)
	for i, h := range t.Headers {
		name, _, ok := strings.Cut(h, "=")
		if name = strings.TrimSpace(name); !ok || !isToken(name) {
			// Never echo the entry: its value is a credential.
			p.add("tracing.headers", "entry %d is not name=value with a valid HTTP header name", i+1)
		}
	}
}

// validateEndpoint checks tracing.endpoint: empty, host:port, or an http or
// https URL with a host (and no credentials: they belong in
// tracing.headers, which are masked).
func (t *Tracing) validateEndpoint(p *problems) {
	e := t.Endpoint
	if e == "" {
		return
	}
	if !strings.Contains(e, "://") {
		host, port, err := net.SplitHostPort(e)
		if err != nil || host == "" || !validPort(port, false) {
			p.add("tracing.endpoint", "%q is not host:port or an http(s) URL", e)
		}
		return
	}
	u, err := url.Parse(e)
	if err != nil {
		p.add("tracing.endpoint", "is not a URL: %v", urlErr(err))
		return
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		p.add("tracing.endpoint", "scheme %q is not http or https", u.Scheme)
	}
	if u.Hostname() == "" {
		p.add("tracing.endpoint", "has no host")
	}
	if u.User != nil {
		p.add("tracing.endpoint", "must not carry credentials (user info); send them in tracing.headers")
	}
	if u.Scheme == "https" && t.Insecure {
		p.add("tracing.insecure", "contradicts the https endpoint; use an http:// URL or host:port to send without TLS")
	}
}
