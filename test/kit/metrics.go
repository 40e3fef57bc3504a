package kit

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// MetricSet is one scrape of a Prometheus text exposition, parsed.
type MetricSet struct {
	// Families are the metric families by name.
	Families map[string]*dto.MetricFamily
}

// Metrics scrapes url (a /metrics endpoint) and parses it with the
// Prometheus text parser; any failure fails the test.
func Metrics(t testing.TB, url string) *MetricSet {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("kit: scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("kit: scrape %s: status %d: %s", url, resp.StatusCode, b)
	}
	m, err := ParseMetrics(resp.Body)
	if err != nil {
		t.Fatalf("kit: scrape %s: %v", url, err)
	}
	return m
}

// ParseMetrics parses a Prometheus text exposition.
func ParseMetrics(r io.Reader) (*MetricSet, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	return &MetricSet{Families: fams}, nil
}

// Value is the value of the sample of counter, gauge or untyped metric
// name whose label set is exactly labels, 0 when there is none. Each of
// labels is a selector like `route="messages"` or several joined by
// commas (`decision="allow",rule="INT-001"`); none selects the sample
// without labels.
func (m *MetricSet) Value(name string, labels ...string) float64 {
	want := parseSelectors(labels)
	for _, s := range m.samples(name) {
		if len(s.labels) == len(want) && contains(s.labels, want) {
			return s.value
		}
	}
	return 0
}

// Sum is the sum of the samples of metric name whose labels include every
// one of labels (selectors as for Value).
func (m *MetricSet) Sum(name string, labels ...string) float64 {
	want := parseSelectors(labels)
	var sum float64
	for _, s := range m.samples(name) {
		if contains(s.labels, want) {
			sum += s.value
		}
	}
	return sum
}

// Has reports whether a family named name is exposed.
func (m *MetricSet) Has(name string) bool {
	_, ok := m.Families[name]
	return ok
}

// IsHistogram reports whether name is exposed as a histogram.
func (m *MetricSet) IsHistogram(name string) bool {
	f, ok := m.Families[name]
	return ok && f.GetType() == dto.MetricType_HISTOGRAM
}

type sample struct {
	labels map[string]string
	value  float64
}

func (m *MetricSet) samples(name string) []sample {
	f, ok := m.Families[name]
	if !ok {
		return nil
	}
	var out []sample
	for _, mt := range f.GetMetric() {
		ls := map[string]string{}
		for _, lp := range mt.GetLabel() {
			ls[lp.GetName()] = lp.GetValue()
		}
		var v float64
		switch {
		case mt.Counter != nil:
			v = mt.GetCounter().GetValue()
		case mt.Gauge != nil:
			v = mt.GetGauge().GetValue()
		case mt.Untyped != nil:
			v = mt.GetUntyped().GetValue()
		default:
			continue
		}
		out = append(out, sample{ls, v})
	}
	return out
}

func contains(have, want map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}

// parseSelectors reads `k="v"` selectors, several per string when joined
// by commas. Values are plain (no escaped quotes); a malformed selector
// panics, as it is a bug in the test.
func parseSelectors(sels []string) map[string]string {
	out := map[string]string{}
	for _, s := range sels {
		for s = strings.TrimSpace(s); s != ""; {
			k, rest, ok := strings.Cut(s, `="`)
			if !ok {
				panic(fmt.Sprintf("kit: label selector %q is not k=\"v\"", s))
			}
			v, rest, ok := strings.Cut(rest, `"`)
			if !ok {
				panic(fmt.Sprintf("kit: label selector %q is not k=\"v\"", s))
			}
			out[strings.TrimSpace(k)] = v
			s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), ","))
		}
	}
	return out
}
