package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestLogScale(t *testing.T) {
	for _, c := range []struct{ v, floor, ceil float64 }{
		{1000, 1000, 1000}, {999, 500, 1000}, {1001, 1000, 2000}, {3, 2, 5}, {0.7, 0.5, 1}, {42, 20, 50}, {5000, 5000, 5000}, {100, 100, 100},
	} {
		if f, g := niceFloor(c.v), niceCeil(c.v); math.Abs(f-c.floor) > 1e-9*c.floor || math.Abs(g-c.ceil) > 1e-9*c.ceil {
			t.Errorf("%g: floor %g ceil %g, want %g %g", c.v, f, g, c.floor, c.ceil)
		}
	}
	for _, c := range []struct {
		vals   []float64
		lo, hi float64
	}{
		{[]float64{702, 1375, 4370}, 500, 5000},
		{[]float64{1000, math.NaN(), 0, -3}, 500, 1000}, // one value: a step below it; NaN and non-positive ignored
		{[]float64{560, 561}, 200, 1000},
		{nil, 1, 10},
		{[]float64{12.5, 40000}, 10, 50000},
	} {
		if lo, hi := logRange(c.vals); lo != c.lo || hi != c.hi {
			t.Errorf("logRange(%v) = %g, %g; want %g, %g", c.vals, lo, hi, c.lo, c.hi)
		}
	}
	eq := func(a, b []float64) bool {
		return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*y })
	}
	if got := logTicks(500, 5000); !eq(got, []float64{500, 1000, 2000, 5000}) {
		t.Errorf("ticks 500..5000: %v", got)
	}
	if got := logTicks(10, 50000); !eq(got, []float64{10, 100, 1000, 10000, 50000}) {
		t.Errorf("ticks 10..50000: %v", got)
	}
	if got := logTicks(20, 50000); !eq(got, []float64{20, 100, 1000, 10000, 50000}) {
		t.Errorf("ticks 20..50000: %v", got)
	}
	if got := logTicks(500, 2e6); !eq(got, []float64{1000, 10000, 100000, 1e6}) { // 500 and 2e6 too close to a decade
		t.Errorf("ticks 500..2e6: %v", got)
	}
	// Linear in the logarithm: lo at the bottom, hi at the top, the
	// geometric mean halfway, outside values clamped.
	for _, c := range []struct{ v, y float64 }{{100, 300}, {10000, 100}, {1000, 200}, {50, 300}, {0, 300}, {1e6, 100}} {
		if y := logY(c.v, 100, 10000, 100, 200); math.Abs(y-c.y) > 1e-9 {
			t.Errorf("logY(%g) = %g, want %g", c.v, y, c.y)
		}
	}
	for v, want := range map[float64]string{12: "12 µs", 500: "500 µs", 1000: "1 ms", 2500: "2.5 ms", 50000: "50 ms", 2e6: "2 s"} {
		if got := fmtUS(v); got != want {
			t.Errorf("fmtUS(%g) = %q, want %q", v, got, want)
		}
	}
}

// svgNode is a generic XML element, to walk the chart.
type svgNode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []svgNode  `xml:",any"`
	Text    string     `xml:",chardata"`
}

func (n svgNode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n svgNode) num(t *testing.T, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(n.attr(name), 64)
	if err != nil {
		t.Fatalf("<%s %s=%q>: %v", n.XMLName.Local, name, n.attr(name), err)
	}
	return v
}

func TestChart(t *testing.T) {
	dir := t.TempDir()
	ol := strings.Join(openloopColumns, "\t") + "\n" +
		"small\tdirect\t500\t2500\t0\t700\t1000\t1400\t2000\t3000\t-\t-\t-\t-\n" +
		"small\tshepherd\t500\t2500\t0\t1000\t1500\t1900\t4000\t5000\t-\t-\t-\t-\n" +
		"small\tnginx\t500\t2500\t0\t900\t1200\t2500\t3000\t3500\t-\t-\t-\t-\n" +
		"stream\tdirect\t100\t500\t0\t1100\t1500\t1900\t2000\t2100\t1000\t1800\t0\t0\n" +
		"stream\tshepherd & co\t100\t500\t0\t1500\t2000\t3000\t-\t3100\t1400\t2600\t0\t9\n"
	ed := strings.Join(eventdelayColumns, "\t") + "\n" +
		"direct\t20\t100\t0\t4500\t20\t25\t30\t40\t90\n" +
		"shepherd\t20\t100\t0\t4500\t45\t60\t80\t120\t300\n"
	olPath, edPath, out := filepath.Join(dir, "openloop.tsv"), filepath.Join(dir, "eventdelay.tsv"), filepath.Join(dir, "latency.svg")
	_ = os.WriteFile(olPath, []byte(ol), 0o644)
	_ = os.WriteFile(edPath, []byte(ed), 0o644)
	if err := cmdChart([]string{"-o", out, "-title", "Latency <run 1>", "-eventdelay", edPath, olPath}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// Well-formed XML all through.
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("invalid XML: %v\n%s", err, data)
		}
	}
	var root svgNode
	if err := xml.Unmarshal(data, &root); err != nil {
		t.Fatal(err)
	}
	if root.XMLName.Local != "svg" || root.XMLName.Space != "http://www.w3.org/2000/svg" || root.num(t, "width") != chartW {
		t.Fatalf("root %v width %s", root.XMLName, root.attr("width"))
	}
	if !bytes.Contains(data, []byte("Latency &lt;run 1&gt;")) {
		t.Error("title not escaped")
	}
	var series []svgNode
	panels := 0
	for _, n := range root.Nodes {
		switch n.attr("class") {
		case "series":
			series = append(series, n)
		case "panel":
			panels++
		}
	}
	if panels != 3 {
		t.Errorf("%d panels, want 3 (small, stream, per-event delay)", panels)
	}
	var targets []string
	for _, s := range series {
		targets = append(targets, s.attr("data-target"))
	}
	// One series per target, in the conventional order, extras last.
	if !slices.Equal(targets, []string{"direct", "nginx", "shepherd", "shepherd & co"}) {
		t.Fatalf("series %q", targets)
	}
	bars := map[string][]svgNode{}
	for _, s := range series {
		for _, r := range s.Nodes {
			if r.XMLName.Local != "rect" {
				t.Errorf("%s in a series", r.XMLName.Local)
			}
			if r.num(t, "height") < 0 || r.num(t, "width") <= 0 {
				t.Errorf("bar %v", r.Attrs)
			}
			bars[s.attr("data-target")] = append(bars[s.attr("data-target")], r)
		}
	}
	// direct: 4 percentiles × 3 panels; nginx: small only; shepherd: small and
	// the event delay; "shepherd & co": the stream, without p99.9.
	for t0, want := range map[string]int{"direct": 12, "nginx": 4, "shepherd": 8, "shepherd & co": 3} {
		if len(bars[t0]) != want {
			t.Errorf("%s: %d bars, want %d", t0, len(bars[t0]), want)
		}
	}
	// In the small panel (500..5000 µs, log): bars stand on the axis and a
	// larger value is a taller bar; 1000 µs is at log10(2)/log10(10) of the height.
	_, py, _, ph := panelBox(0)
	d := bars["direct"]
	for _, r := range d[:4] {
		if math.Abs(r.num(t, "y")+r.num(t, "height")-(py+ph)) > 0.11 {
			t.Errorf("bar does not stand on the axis: %v", r.Attrs)
		}
	}
	if !(d[0].num(t, "height") < d[1].num(t, "height") && d[1].num(t, "height") < d[2].num(t, "height")) {
		t.Error("bar heights not increasing with the percentile")
	}
	if h, want := d[1].num(t, "height"), ph*math.Log10(2); math.Abs(h-want) > 0.11 {
		t.Errorf("1000 µs bar %g high, want %g", h, want)
	}
	if !strings.Contains(d[1].Nodes[0].Text, "small at 500/s, direct p90: 1000 µs") {
		t.Errorf("tooltip %q", d[1].Nodes[0].Text)
	}
	if err := cmdChart([]string{"-o", out, filepath.Join(dir, "missing.tsv")}); err == nil {
		t.Error("missing input accepted")
	}
}
