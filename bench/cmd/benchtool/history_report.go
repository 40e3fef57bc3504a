package main

// The history phase's tables, and the README's performance table rewritten
// between its markers.
//
//	benchtool history-report HISTORY.tsv
//	benchtool readme -history HISTORY.tsv [-results RESULTS.tsv] [-rows 50k,1m] [-note TEXT] README.md

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// historyColumns is the header of load.sh's history.tsv: one row per
// history size × target, the HISTORY line's fields ("-" when the closed
// loop was skipped).
var historyColumns = []string{"size", "target", "bytes", "turns", "rate", "sent", "errors",
	"p50_us", "p90_us", "p99_us", "p999_us", "max_us", "cold_p50_us",
	"connections", "rps", "closed_errors", "closed_p50_us", "closed_p99_us"}

// historyRow is one size × target of the history phase.
type historyRow struct {
	size, target string
	v            map[string]float64 // by column name, NaN when absent
}

// historyData is history.tsv: sizes in file order, targets in the
// conventional order, rows by size and target.
type historyData struct {
	sizes, targets []string
	rows           map[[2]string]historyRow
}

func (h historyData) get(size, target, col string) float64 {
	r, ok := h.rows[[2]string{size, target}]
	if !ok {
		return math.NaN()
	}
	v, ok := r.v[col]
	if !ok {
		return math.NaN()
	}
	return v
}

// added is size's col of target minus ref's (NaN when either is missing).
func (h historyData) added(size, target, ref, col string) float64 {
	return h.get(size, target, col) - h.get(size, ref, col)
}

func readHistory(path string) (historyData, error) {
	rows, err := readTable(path, historyColumns, 2)
	if err != nil {
		return historyData{}, err
	}
	h := historyData{rows: map[[2]string]historyRow{}}
	for _, r := range rows {
		k := [2]string{r.keys[0], r.keys[1]}
		if _, dup := h.rows[k]; dup {
			return historyData{}, fmt.Errorf("%s: second row for %s → %s", path, k[0], k[1])
		}
		hr := historyRow{size: k[0], target: k[1], v: map[string]float64{}}
		for i, c := range historyColumns[2:] {
			hr.v[c] = r.v[i]
		}
		h.rows[k] = hr
		if !slices.Contains(h.sizes, k[0]) {
			h.sizes = append(h.sizes, k[0])
		}
		if !slices.Contains(h.targets, k[1]) {
			h.targets = append(h.targets, k[1])
		}
	}
	if len(h.rows) == 0 {
		return historyData{}, fmt.Errorf("%s: no results", path)
	}
	slices.SortStableFunc(h.targets, func(a, b string) int { return targetRank(a) - targetRank(b) })
	return h, nil
}

// signed formats v with a sign and no decimals, "–" for NaN.
func signed(v float64) string {
	if v != v {
		return "–"
	}
	return fmt.Sprintf("%+.0f", v)
}

// whole formats v without decimals, "–" for NaN.
func whole(v float64) string {
	if v != v {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// kb formats a byte count as KB (1,024 B) below a MiB, else MB.
func kb(v float64) string {
	switch {
	case v != v:
		return "–"
	case v >= 1<<20:
		return strconv.FormatFloat(v/(1<<20), 'f', 2, 64) + " MB"
	}
	return strconv.FormatFloat(v/(1<<10), 'f', 0, 64) + " KB"
}

func cmdHistoryReport(args []string, w io.Writer) error {
	if len(args) != 1 {
		usage()
	}
	h, err := readHistory(args[0])
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "| history | target | body | p50 µs | p99 µs | added p50 µs | added p99 µs | added p50 vs nginx µs | added p99 vs nginx µs | cold p50 µs | requests | errors |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, s := range h.sizes {
		for _, t := range h.targets {
			if _, ok := h.rows[[2]string{s, t}]; !ok {
				continue
			}
			vsD, vsN := "–", "–"
			vsD99, vsN99 := "–", "–"
			if t != "direct" {
				vsD, vsD99 = signed(h.added(s, t, "direct", "p50_us")), signed(h.added(s, t, "direct", "p99_us"))
			}
			if t != "direct" && t != "nginx" {
				vsN, vsN99 = signed(h.added(s, t, "nginx", "p50_us")), signed(h.added(s, t, "nginx", "p99_us"))
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", s, t, kb(h.get(s, t, "bytes")),
				whole(h.get(s, t, "p50_us")), whole(h.get(s, t, "p99_us")), vsD, vsD99, vsN, vsN99,
				whole(h.get(s, t, "cold_p50_us")), whole(h.get(s, t, "sent")), whole(h.get(s, t, "errors")))
		}
	}
	closed := false
	for _, r := range h.rows {
		closed = closed || r.v["rps"] == r.v["rps"]
	}
	if !closed {
		return nil
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| history | target | connections | req/s | req/s ÷ direct | req/s ÷ nginx | p50 µs | p99 µs | errors |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|")
	for _, s := range h.sizes {
		for _, t := range h.targets {
			rps := h.get(s, t, "rps")
			if rps != rps {
				continue
			}
			d, n := h.get(s, "direct", "rps"), h.get(s, "nginx", "rps")
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", s, t, whole(h.get(s, t, "connections")), whole(rps),
				ratio(rps, d, t != "direct" && d == d), ratio(rps, n, t != "direct" && t != "nginx" && n == n),
				whole(h.get(s, t, "closed_p50_us")), whole(h.get(s, t, "closed_p99_us")), whole(h.get(s, t, "closed_errors")))
		}
	}
	return nil
}

// The README's performance table sits between these lines; readme rewrites
// what is between them and nothing else.
const (
	readmeBegin = "<!-- bench:begin -->"
	readmeEnd   = "<!-- bench:end -->"
)

// readmeTable is the README's table: one row per history size in rows that
// was measured (all sizes when none of them was): what nginx adds to direct,
// what shepherd adds to nginx (p50, open loop) and its closed-loop
// throughput ÷ nginx's, hooks off and on; then, from the saturation runs
// when given, req/s ÷ nginx per workload.
func readmeTable(h historyData, sat []result, rows []string, note string) string {
	sizes := slices.DeleteFunc(slices.Clone(rows), func(s string) bool { return !slices.Contains(h.sizes, s) })
	if len(sizes) == 0 {
		sizes = h.sizes
	}
	var b strings.Builder
	fmt.Fprintln(&b, "| history resent each turn | nginx adds p50 | shepherd adds p50 over nginx, hooks off | hooks on | req/s ÷ nginx, hooks off | hooks on |")
	fmt.Fprintln(&b, "|---|--:|--:|--:|--:|--:|")
	us := func(v float64) string {
		if v != v {
			return "–"
		}
		return fmt.Sprintf("%+.0f µs", v)
	}
	for _, s := range sizes {
		n := h.get(s, "nginx", "rps")
		fmt.Fprintf(&b, "| %s (%s) | %s | %s | %s | %s | %s |\n", s, kb(h.get(s, "direct", "bytes")),
			us(h.added(s, "nginx", "direct", "p50_us")),
			us(h.added(s, "shepherd", "nginx", "p50_us")), us(h.added(s, "shepherd-hooks", "nginx", "p50_us")),
			ratio(h.get(s, "shepherd", "rps"), n, n == n && h.get(s, "shepherd", "rps") == h.get(s, "shepherd", "rps")),
			ratio(h.get(s, "shepherd-hooks", "rps"), n, n == n && h.get(s, "shepherd-hooks", "rps") == h.get(s, "shepherd-hooks", "rps")))
	}
	if len(sat) > 0 {
		workloads, _, sums := summarize(sat)
		var parts []string
		for _, wl := range workloads {
			n, ok := sums[[2]string{wl, "nginx"}]
			if !ok {
				continue
			}
			var rs []string
			for _, t := range []string{"shepherd", "shepherd-hooks"} {
				if s, ok := sums[[2]string{wl, t}]; ok {
					rs = append(rs, ratio(s.rps, n.rps, true))
				} else {
					rs = append(rs, "–")
				}
			}
			parts = append(parts, fmt.Sprintf("%s %s", wl, strings.Join(rs, " / ")))
		}
		if len(parts) > 0 {
			fmt.Fprintf(&b, "\nSaturation (wrk, one fixed body), req/s ÷ nginx, hooks off / on: %s.\n", strings.Join(parts, "; "))
		}
	}
	if note != "" {
		fmt.Fprintf(&b, "\n%s\n", note)
	}
	return b.String()
}

// replaceBetweenMarkers returns doc with the text between the begin and end
// marker lines replaced by body; an error when either marker is missing or
// they are out of order.
func replaceBetweenMarkers(doc, body string) (string, error) {
	i := strings.Index(doc, readmeBegin)
	j := strings.Index(doc, readmeEnd)
	if i < 0 || j < 0 || j < i {
		return "", fmt.Errorf("readme: want the lines %s and %s, in that order", readmeBegin, readmeEnd)
	}
	head := doc[:i+len(readmeBegin)]
	return head + "\n" + strings.TrimRight(body, "\n") + "\n" + doc[j:], nil
}

func cmdReadme(args []string) error {
	fs := flag.NewFlagSet("readme", flag.ExitOnError)
	hist := fs.String("history", "", "history.tsv of the run (required)")
	results := fs.String("results", "", "results.tsv of the run's saturation phase (optional)")
	rows := fs.String("rows", "50k,1m", "history sizes to show, comma-separated (all when none was measured)")
	note := fs.String("note", "", "a line under the table (the run: date, commit, settings)")
	_ = fs.Parse(args)
	if fs.NArg() != 1 || *hist == "" {
		usage()
	}
	h, err := readHistory(*hist)
	if err != nil {
		return err
	}
	var sat []result
	if *results != "" {
		if sat, err = readResults(*results); err != nil {
			return err
		}
	}
	path := fs.Arg(0)
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := replaceBetweenMarkers(string(doc), readmeTable(h, sat, strings.Split(*rows, ","), *note))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if out == string(doc) {
		return nil
	}
	return os.WriteFile(path, []byte(out), 0o644)
}
