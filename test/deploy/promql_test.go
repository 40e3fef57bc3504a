package deploy

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`up`, []string{"up"}},
		{`rate(shepherd_requests_total[5m])`, []string{"shepherd_requests_total"}},
		{`sum by (route, status) (rate(shepherd_requests_total{status=~"4..|5.."}[$__rate_interval]))`, []string{"shepherd_requests_total"}},
		{`sum without(le) (x_bucket) / on(route) group_left(model) y`, []string{"x_bucket", "y"}},
		{`histogram_quantile(0.99, sum by (le) (rate(shepherd_overhead_seconds_bucket[5m])))`, []string{"shepherd_overhead_seconds_bucket"}},
		{`sum(a{kind="cache_read"}) / sum(a{kind=~"input|cache_read"}) * 3600 > bool 1e-3`, []string{"a"}},
		{`{__name__="hidden"} or b offset 1h`, []string{"b"}},
		{`label_replace(c, "dst", "$1", "src", "(by|sum)")`, []string{"c"}},
		{`increase(d[$__range]) and ignoring (x) e unless f`, []string{"d", "e", "f"}},
		{`topk(5, g) # a comment with h`, []string{"g"}},
		{`sum(rate(ns:recorded:rule[1m]))`, []string{"ns:recorded:rule"}},
		{`vector(1)`, []string{}},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			require.Equal(t, tc.want, MetricNames(tc.expr))
		})
	}
}

func FuzzMetricNames(f *testing.F) {
	f.Add(`sum by (route) (rate(shepherd_requests_total{a="}"}[5m]))`)
	f.Add(`"unterminated`)
	f.Add(`{`)
	f.Fuzz(func(t *testing.T, expr string) {
		for _, n := range MetricNames(expr) {
			if n == "" || !isIdentStart(n[0]) {
				t.Fatalf("%q: bad name %q", expr, n)
			}
		}
	})
}
