package main

// The summary chart of a run: what each proxy adds as the history grows and
// how much load it carries relative to nginx. Panels, on linear axes:
//
//  1. added p50 (µs over direct, open loop) by history size, one line per
//     target: nginx, shepherd, shepherd-hooks...;
//  2. closed-loop req/s ÷ nginx by history size, one line per target (nginx
//     is the dashed line at 1);
//  3. saturation (wrk) req/s ÷ nginx per workload, one bar per target, when
//     results.tsv is given.
//
//	benchtool history-chart -o FILE [-title T] [-results RESULTS.tsv] HISTORY.tsv

import (
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// chartSeries is one target's points in a line panel (x in bytes), or its
// bars in a bar panel (x the group index).
type chartSeries struct {
	target string
	x, y   []float64
}

// linePanel is one panel of the summary chart.
type linePanel struct {
	id, title, yLabel string
	bars              bool     // grouped bars over groups instead of lines over x
	groups            []string // bar panels: group labels
	xTicks            []float64
	xLabels           []string
	ref               float64 // a dashed horizontal reference line (NaN: none)
	series            []chartSeries
}

type summaryChart struct {
	title    string
	subtitle []string
	targets  []string
	panels   []linePanel
}

func cmdHistoryChart(args []string) error {
	fs := flag.NewFlagSet("history-chart", flag.ExitOnError)
	out := fs.String("o", "", "output SVG file (required)")
	title := fs.String("title", "Added latency by history size, and throughput", "chart title")
	results := fs.String("results", "", "results.tsv of the saturation runs: add a panel of req/s ÷ nginx per workload")
	_ = fs.Parse(args)
	if fs.NArg() != 1 || *out == "" {
		usage()
	}
	h, err := readHistory(fs.Arg(0))
	if err != nil {
		return err
	}
	var sat []result
	if *results != "" {
		if sat, err = readResults(*results); err != nil {
			return err
		}
	}
	c := buildSummaryChart(h, sat)
	c.title = *title
	return os.WriteFile(*out, renderSummaryChart(c), 0o644)
}

// buildSummaryChart lays out the panels from the history results (sizes by
// the base body's bytes) and, when there are any, the saturation results.
func buildSummaryChart(h historyData, sat []result) summaryChart {
	c := summaryChart{subtitle: []string{
		"History: agent sessions resending their history, each request the previous one plus a tool round trip; x = the first request's size.",
		"Added p50: open loop at a fixed rate, target − direct. Throughput: closed loop (history) and wrk at saturation (one fixed body), ÷ nginx.",
	}}
	addTarget := func(t string) {
		if !slices.Contains(c.targets, t) {
			c.targets = append(c.targets, t)
		}
	}
	var xs []float64
	var xl []string
	for _, s := range h.sizes {
		xs = append(xs, h.get(s, "direct", "bytes"))
		if xs[len(xs)-1] != xs[len(xs)-1] { // no direct row: any target's
			for _, t := range h.targets {
				if v := h.get(s, t, "bytes"); v == v {
					xs[len(xs)-1] = v
					break
				}
			}
		}
		xl = append(xl, s)
	}
	added := linePanel{id: "added-p50", title: "added p50 vs direct, by history size", yLabel: "µs", xTicks: xs, xLabels: xl, ref: math.NaN()}
	thr := linePanel{id: "history-throughput", title: "history req/s ÷ nginx (closed loop)", yLabel: "× nginx", xTicks: xs, xLabels: xl, ref: 1}
	hasThr := false
	for _, t := range h.targets {
		if t != "direct" {
			s := chartSeries{target: t}
			for i, size := range h.sizes {
				if v := h.added(size, t, "direct", "p50_us"); v == v && xs[i] == xs[i] {
					s.x, s.y = append(s.x, xs[i]), append(s.y, v)
				}
			}
			if len(s.x) > 0 {
				added.series = append(added.series, s)
				addTarget(t)
			}
		}
		if t != "nginx" {
			s := chartSeries{target: t}
			for i, size := range h.sizes {
				v := h.get(size, t, "rps") / h.get(size, "nginx", "rps")
				if v == v && !math.IsInf(v, 0) && xs[i] == xs[i] {
					s.x, s.y = append(s.x, xs[i]), append(s.y, v)
				}
			}
			if len(s.x) > 0 {
				thr.series = append(thr.series, s)
				addTarget(t)
				hasThr = true
			}
		}
	}
	c.panels = append(c.panels, added)
	if hasThr {
		addTarget("nginx")
		c.panels = append(c.panels, thr)
	}
	if len(sat) > 0 {
		workloads, targets, sums := summarize(sat)
		p := linePanel{id: "saturation-throughput", title: "saturation req/s ÷ nginx (wrk)", yLabel: "× nginx", bars: true, ref: 1}
		for _, wl := range workloads {
			if _, ok := sums[[2]string{wl, "nginx"}]; ok {
				p.groups = append(p.groups, wl)
			}
		}
		for _, t := range targets {
			s := chartSeries{target: t}
			for gi, wl := range p.groups {
				if r, ok := sums[[2]string{wl, t}]; ok {
					s.x, s.y = append(s.x, float64(gi)), append(s.y, r.rps/sums[[2]string{wl, "nginx"}].rps)
				}
			}
			if len(s.x) > 0 {
				p.series = append(p.series, s)
				addTarget(t)
			}
		}
		if len(p.groups) > 0 {
			c.panels = append(c.panels, p)
		}
	}
	slices.SortStableFunc(c.targets, func(a, b string) int { return targetRank(a) - targetRank(b) })
	return c
}

// linTicks are round tick values (1, 2 or 5 × 10^k apart, about n of them)
// covering [lo, hi]; the first at or below lo, the last at or above hi.
func linTicks(lo, hi float64, n int) []float64 {
	if !(hi > lo) {
		hi = lo + 1
	}
	step := niceCeil((hi - lo) / float64(n))
	first := math.Floor(lo/step+1e-9) * step
	var out []float64
	for v := first; ; v += step {
		out = append(out, math.Round(v/step)*step)
		if v >= hi-1e-9*step {
			break
		}
	}
	return out
}

// linMap maps v from [lo, hi] onto [a, b] (either direction).
func linMap(v, lo, hi, a, b float64) float64 {
	if hi == lo {
		return a
	}
	return a + (v-lo)/(hi-lo)*(b-a)
}

// fmtNum labels a tick: no needless decimals.
func fmtNum(v float64) string {
	if math.Abs(v) < 1e-9 {
		return "0"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// panelYRange is the y range of a panel: from 0 (or the lowest value when
// negative) to the highest value or the reference line, as round ticks.
func panelYRange(p linePanel) []float64 {
	lo, hi := 0.0, 0.0
	if p.ref == p.ref {
		hi = p.ref
	}
	for _, s := range p.series {
		for _, v := range s.y {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if hi <= lo {
		hi = lo + 1
	}
	return linTicks(lo, hi*1.05, 5)
}

// panelXRange is the x range of a line panel: 0 to the largest x tick.
func panelXRange(p linePanel) (lo, hi float64) {
	for _, x := range p.xTicks {
		if x == x {
			hi = max(hi, x)
		}
	}
	if hi <= 0 {
		hi = 1
	}
	return 0, hi * 1.04
}

// renderSummaryChart draws c as SVG: per panel a <g class="panel"
// data-panel="ID"> with axes, ticks and labels, then one <g class="series"
// data-panel="ID" data-target="T"> per target and panel: a polyline and a
// circle per point (line panels) or a rect per bar, each with a <title>
// holding its value.
func renderSummaryChart(c summaryChart) []byte {
	rows := (len(c.panels) + chartCols - 1) / chartCols
	height := chartHeadH + rows*chartPanelH + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartW, height, chartW, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", chartW, height)
	fmt.Fprintf(&b, `<text x="16" y="24" font-size="17" font-weight="bold">%s</text>`+"\n", esc(c.title))
	for i, line := range c.subtitle {
		fmt.Fprintf(&b, `<text x="16" y="%d" font-size="11" fill="#444">%s</text>`+"\n", 44+14*i, esc(line))
	}
	x := 16
	for i, t := range c.targets {
		fmt.Fprintf(&b, `<rect x="%d" y="72" width="12" height="12" fill="%s"/><text x="%d" y="82">%s</text>`+"\n",
			x, targetColor(t, i), x+16, esc(t))
		x += 16 + 7*len(t) + 24
	}
	color := func(t string) string { return targetColor(t, slices.Index(c.targets, t)) }
	for i, p := range c.panels {
		px, py, pw, ph := panelBox(i)
		yt := panelYRange(p)
		ylo, yhi := yt[0], yt[len(yt)-1]
		yOf := func(v float64) float64 { return linMap(v, ylo, yhi, py+ph, py) }
		xlo, xhi := panelXRange(p)
		xOf := func(v float64) float64 { return linMap(v, xlo, xhi, px, px+pw) }

		fmt.Fprintf(&b, `<g class="panel" data-panel="%s">`+"\n", esc(p.id))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="13" font-weight="bold">%s</text>`+"\n", px, py-12, esc(p.title))
		for _, t := range yt {
			y := yOf(t)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#dddddd"/>`, px, y, px+pw, y)
			fmt.Fprintf(&b, `<text class="ytick" x="%.1f" y="%.1f" text-anchor="end" font-size="10" fill="#444">%s</text>`+"\n", px-4, y+3, esc(fmtNum(t)))
		}
		fmt.Fprintf(&b, `<text class="ylabel" x="%.1f" y="%.1f" font-size="10" fill="#444">%s</text>`+"\n", px-plotLeft+4, py-2, esc(p.yLabel))
		if p.ref == p.ref {
			y := yOf(p.ref)
			fmt.Fprintf(&b, `<line class="ref" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="5,4"/>`+"\n",
				px, y, px+pw, y, color("nginx"))
		}
		zero := yOf(0)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000000"/>`, px, py, px, py+ph)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000000"/>`+"\n", px, zero, px+pw, zero)
		if p.bars {
			gw := pw / float64(max(1, len(p.groups)))
			for gi, g := range p.groups {
				fmt.Fprintf(&b, `<text class="xtick" x="%.1f" y="%.1f" text-anchor="middle" font-size="10">%s</text>`+"\n",
					px+gw*(float64(gi)+0.5), py+ph+16, esc(g))
			}
		} else {
			for k, xv := range p.xTicks {
				if xv != xv {
					continue
				}
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#dddddd"/>`, xOf(xv), py, xOf(xv), py+ph)
				fmt.Fprintf(&b, `<text class="xtick" x="%.1f" y="%.1f" text-anchor="middle" font-size="10">%s</text>`+"\n",
					xOf(xv), py+ph+16, esc(p.xLabels[k]))
			}
			fmt.Fprintf(&b, `<text class="xlabel" x="%.1f" y="%.1f" text-anchor="end" font-size="10" fill="#444">history size</text>`+"\n", px+pw, py+ph+30)
		}
		fmt.Fprintf(&b, "</g>\n")

		for si, s := range p.series {
			fmt.Fprintf(&b, `<g class="series" data-panel="%s" data-target="%s" fill="%s" stroke="%s">`+"\n",
				esc(p.id), esc(s.target), color(s.target), color(s.target))
			if p.bars {
				gw := pw / float64(max(1, len(p.groups)))
				bw := gw * 0.8 / float64(len(p.series))
				for k, g := range s.x {
					y := yOf(s.y[k])
					top, h := min(y, zero), math.Abs(zero-y)
					fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" stroke="none"><title>%s</title></rect>`+"\n",
						px+gw*g+gw*0.1+bw*float64(si), top, bw, h,
						esc(fmt.Sprintf("%s, %s: %.2f", p.groups[int(g)], s.target, s.y[k])))
				}
			} else {
				var pts []string
				for k := range s.x {
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(s.x[k]), yOf(s.y[k])))
				}
				fmt.Fprintf(&b, `<polyline fill="none" stroke-width="2" points="%s"/>`+"\n", strings.Join(pts, " "))
				for k := range s.x {
					fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5"><title>%s</title></circle>`+"\n", xOf(s.x[k]), yOf(s.y[k]),
						esc(fmt.Sprintf("%s, %s at %s: %s %s", p.title, s.target, kb(s.x[k]), fmtNum(math.Round(s.y[k]*100)/100), p.yLabel)))
				}
			}
			fmt.Fprintf(&b, "</g>\n")
		}
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}
