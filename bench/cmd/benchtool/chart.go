package main

// The latency chart: an SVG of grouped bars, one panel per workload of the
// open-loop phase (and one for the per-event delay), in each panel one group
// per percentile (p50, p90, p99, p99.9) and in each group one bar per target,
// on a logarithmic µs axis of the panel's own range. Hand-written SVG: no
// dependency, and the bytes only change when the numbers do.
//
//	benchtool chart -o FILE [-title T] [-eventdelay EVENTDELAY.tsv] OPENLOOP.tsv

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// chartPercentiles are the percentiles drawn, with their column suffixes in
// openloop.tsv and eventdelay.tsv.
var chartPercentiles = []struct{ label, col string }{
	{"p50", "p50_us"}, {"p90", "p90_us"}, {"p99", "p99_us"}, {"p99.9", "p999_us"},
}

// chartPanel is one panel: per target, one value (µs) per percentile, NaN
// when missing.
type chartPanel struct {
	title  string
	values map[string][]float64
}

type chartData struct {
	title    string
	subtitle []string // lines
	targets  []string // series order
	panels   []chartPanel
}

func cmdChart(args []string) error {
	fs := flag.NewFlagSet("chart", flag.ExitOnError)
	out := fs.String("o", "", "output SVG file (required)")
	title := fs.String("title", "Open-loop latency by percentile", "chart title")
	eventDelay := fs.String("eventdelay", "", "eventdelay.tsv: add a panel of the per-event delay")
	_ = fs.Parse(args)
	if fs.NArg() != 1 || *out == "" {
		usage()
	}
	d, err := chartFromFiles(fs.Arg(0), *eventDelay)
	if err != nil {
		return err
	}
	d.title = *title
	return os.WriteFile(*out, renderChart(d), 0o644)
}

// chartFromFiles collects the panels: one per open-loop workload (in file
// order), then the per-event delay when eventDelay is not empty.
func chartFromFiles(openloop, eventDelay string) (chartData, error) {
	rows, err := readOpenloop(openloop)
	if err != nil {
		return chartData{}, err
	}
	d := chartData{subtitle: []string{"Open loop: latency at a fixed rate, from each request's scheduled time to the end of the reply. " +
		"Bars: p50, p90, p99, p99.9 per target; log scale, each panel its own range."}}
	byWorkload := map[string]int{}
	for _, r := range rows {
		if !slices.Contains(d.targets, r.target) {
			d.targets = append(d.targets, r.target)
		}
		i, ok := byWorkload[r.workload]
		if !ok {
			i = len(d.panels)
			byWorkload[r.workload] = i
			d.panels = append(d.panels, chartPanel{
				title:  fmt.Sprintf("%s at %s/s", r.workload, strconv.FormatFloat(r.get("rate"), 'f', -1, 64)),
				values: map[string][]float64{}})
		}
		var v []float64
		for _, p := range chartPercentiles {
			v = append(v, r.get(p.col))
		}
		d.panels[i].values[r.target] = v
	}
	if eventDelay != "" {
		eds, err := readEventDelay(eventDelay)
		if err != nil {
			return chartData{}, err
		}
		p := chartPanel{values: map[string][]float64{}}
		for _, e := range eds {
			if !slices.Contains(d.targets, e.target) {
				d.targets = append(d.targets, e.target)
			}
			var v []float64
			for _, pc := range chartPercentiles {
				v = append(v, e.v["delay_"+pc.col])
			}
			p.values[e.target] = v
			p.title = fmt.Sprintf("per-event delay (stamped streams, %s/s)", strconv.FormatFloat(e.v["rate"], 'f', -1, 64))
		}
		if len(eds) > 0 {
			d.panels = append(d.panels, p)
			d.subtitle = append(d.subtitle, "Per-event delay: the time the client has read each text delta minus the send time the mock stamped in it.")
		}
	}
	if len(d.panels) == 0 {
		return chartData{}, errors.New("chart: no results")
	}
	slices.SortStableFunc(d.targets, func(a, b string) int { return targetRank(a) - targetRank(b) })
	return d, nil
}

// decade is the largest power of ten at or below v (v > 0), exact for
// powers of ten themselves (math.Log10(1000) is 2.9999999999999996).
func decade(v float64) float64 {
	base := math.Pow(10, math.Floor(math.Log10(v)))
	if base*10 <= v*(1+1e-9) {
		base *= 10
	}
	return base
}

// niceFloor is the largest 1, 2 or 5 × 10^k at or below v (v > 0).
func niceFloor(v float64) float64 {
	base := decade(v)
	for _, m := range []float64{5, 2} {
		if m*base <= v*(1+1e-9) {
			return m * base
		}
	}
	return base
}

// niceCeil is the smallest 1, 2 or 5 × 10^k at or above v (v > 0).
func niceCeil(v float64) float64 {
	base := decade(v)
	for _, m := range []float64{1, 2, 5, 10} {
		if m*base >= v*(1-1e-9) {
			return m * base
		}
	}
	return 10 * base
}

// logRange is the axis range for values: from the nice value at or below
// 0.8 × the smallest positive one (so that the smallest bar shows) to the
// nice value at or above the largest, at least one step apart; 1 to 10 when
// there is none.
func logRange(values []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range values {
		if v > 0 && !math.IsInf(v, 0) {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if math.IsInf(lo, 1) {
		return 1, 10
	}
	lo, hi = niceFloor(lo*0.8), niceCeil(hi)
	if hi <= lo {
		hi = niceCeil(lo * 1.01)
	}
	return lo, hi
}

// logTicks are the 1-2-5 values within [lo, hi]; over more than about three
// decades only the powers of ten, and lo and hi when they are at least 3×
// away from the nearest one (closer labels would overlap).
func logTicks(lo, hi float64) []float64 {
	var all, decades []float64
	for base := decade(lo); base <= hi*(1+1e-9); base *= 10 {
		for _, m := range []float64{1, 2, 5} {
			v := m * base
			if v >= lo*(1-1e-9) && v <= hi*(1+1e-9) {
				all = append(all, v)
				if m == 1 {
					decades = append(decades, v)
				}
			}
		}
	}
	if len(all) <= 10 {
		return all
	}
	out := decades
	if len(out) == 0 || out[0] >= 3*lo*(1-1e-9) {
		out = append([]float64{lo}, out...)
	}
	if out[len(out)-1]*3 <= hi*(1+1e-9) {
		out = append(out, hi)
	}
	return out
}

// logY maps v to a y coordinate: lo at bottom (top+height), hi at top;
// values outside [lo, hi] (and non-positive ones) are clamped.
func logY(v, lo, hi, top, height float64) float64 {
	f := 0.0
	if v > 0 {
		f = (math.Log10(v) - math.Log10(lo)) / (math.Log10(hi) - math.Log10(lo))
	}
	f = max(0, min(1, f))
	return top + height*(1-f)
}

// fmtUS labels an axis value given in µs.
func fmtUS(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 4, 64) + " s"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'g', 4, 64) + " ms"
	}
	return strconv.FormatFloat(v, 'g', 4, 64) + " µs"
}

// targetColor is a fixed color per conventional target, then a palette.
func targetColor(t string, i int) string {
	switch t {
	case "direct":
		return "#7f7f7f"
	case "nginx":
		return "#2ca02c"
	case "shepherd":
		return "#1f77b4"
	case "shepherd-hooks":
		return "#ff7f0e"
	case "shepherd-redis":
		return "#d62728"
	}
	palette := []string{"#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"}
	return palette[i%len(palette)]
}

func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// Chart geometry (px).
const (
	chartW      = 1000
	chartCols   = 2
	chartHeadH  = 100 // title, subtitle, legend
	chartPanelW = chartW / chartCols
	chartPanelH = 290
	plotLeft    = 66 // y-axis labels
	plotRight   = 14
	plotTop     = 34 // panel title
	plotBottom  = 34 // percentile labels
)

// panelBox is the plot area of panel i: left, top, width, height.
func panelBox(i int) (x, y, w, h float64) {
	col, row := i%chartCols, i/chartCols
	x = float64(col*chartPanelW) + plotLeft
	y = float64(chartHeadH+row*chartPanelH) + plotTop
	return x, y, chartPanelW - plotLeft - plotRight, chartPanelH - plotTop - plotBottom
}

// renderChart draws d as an SVG document: axes, grid and labels first, then
// one <g class="series" data-target="…"> per target holding all its bars.
func renderChart(d chartData) []byte {
	rows := (len(d.panels) + chartCols - 1) / chartCols
	height := chartHeadH + rows*chartPanelH + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartW, height, chartW, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", chartW, height)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="17" font-weight="bold">%s</text>`+"\n", 16, esc(d.title))
	for i, line := range d.subtitle {
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="#444">%s</text>`+"\n", 16, 44+14*i, esc(line))
	}
	// Legend.
	x := 16
	for i, t := range d.targets {
		fmt.Fprintf(&b, `<rect x="%d" y="72" width="12" height="12" fill="%s"/><text x="%d" y="82">%s</text>`+"\n",
			x, targetColor(t, i), x+16, esc(t))
		x += 16 + 7*len(t) + 24
	}

	// Axes, grid, labels; remember each panel's scale for the bars.
	type scale struct{ lo, hi float64 }
	scales := make([]scale, len(d.panels))
	pcts := len(chartPercentiles)
	for i, p := range d.panels {
		px, py, pw, ph := panelBox(i)
		var all []float64
		for _, v := range p.values {
			all = append(all, v...)
		}
		lo, hi := logRange(all)
		scales[i] = scale{lo, hi}
		fmt.Fprintf(&b, `<g class="panel">`+"\n")
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="13" font-weight="bold">%s</text>`+"\n", px, py-12, esc(p.title))
		for _, t := range logTicks(lo, hi) {
			y := logY(t, lo, hi, py, ph)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#dddddd"/>`, px, y, px+pw, y)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" font-size="10" fill="#444">%s</text>`+"\n", px-4, y+3, esc(fmtUS(t)))
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000000"/>`, px, py, px, py+ph)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000000"/>`+"\n", px, py+ph, px+pw, py+ph)
		gw := pw / float64(pcts)
		for k, pc := range chartPercentiles {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px+gw*(float64(k)+0.5), py+ph+16, pc.label)
		}
		fmt.Fprintf(&b, "</g>\n")
	}

	// Bars, one group per target.
	for ti, t := range d.targets {
		fmt.Fprintf(&b, `<g class="series" data-target="%s" fill="%s">`+"\n", esc(t), targetColor(t, ti))
		for i, p := range d.panels {
			vals, ok := p.values[t]
			if !ok {
				continue
			}
			px, py, pw, ph := panelBox(i)
			gw := pw / float64(pcts)
			bw := gw * 0.8 / float64(len(d.targets))
			for k, v := range vals {
				if v != v {
					continue
				}
				y := logY(v, scales[i].lo, scales[i].hi, py, ph)
				bx := px + gw*float64(k) + gw*0.1 + bw*float64(ti)
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s</title></rect>`+"\n",
					bx, y, bw, py+ph-y, esc(fmt.Sprintf("%s, %s %s: %s µs", p.title, t, chartPercentiles[k].label, strconv.FormatFloat(v, 'f', -1, 64))))
			}
		}
		fmt.Fprintf(&b, "</g>\n")
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}
