package main

// Per-event forwarding delay: load.sh runs `benchtool openloop -stamped`
// against a mock that stamps every text delta with its send time and sends
// the events InterEventDelay apart, so each event crosses the proxy on its
// own; the one-way delay of an event is the time the client has read it
// minus the time stamped in it. Direct (mock → client) is the floor:
// target − direct is what the proxy adds to every event.
//
//	benchtool eventdelay-report EVENTDELAY.tsv

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// eventdelayColumns is the header of load.sh's eventdelay.tsv: one row per
// target, the OPENLOOP line's rate, sent, errors and delay_* fields (delays
// in µs).
var eventdelayColumns = []string{"target", "rate", "sent", "errors", "events",
	"delay_p50_us", "delay_p90_us", "delay_p99_us", "delay_p999_us", "delay_max_us"}

// tsvRow is a row of a results table: its leading text columns and the
// numbers after them (NaN for "-" or empty).
type tsvRow struct {
	keys []string
	v    []float64
}

// readTable reads a TSV file whose header must equal columns; the first
// nkeys columns are text, the others numbers.
func readTable(path string, columns []string, nkeys int) ([]tsvRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var out []tsvRow
	for line := 1; sc.Scan(); line++ {
		fields := strings.Split(sc.Text(), "\t")
		if line == 1 {
			if !slices.Equal(fields, columns) {
				return nil, fmt.Errorf("%s: header %q, want %q", path, fields, columns)
			}
			continue
		}
		if len(fields) != len(columns) {
			return nil, fmt.Errorf("%s:%d: %d fields, want %d", path, line, len(fields), len(columns))
		}
		r := tsvRow{keys: fields[:nkeys]}
		for i, s := range fields[nkeys:] {
			v := math.NaN()
			if s != "-" && s != "" {
				if v, err = strconv.ParseFloat(s, 64); err != nil {
					return nil, fmt.Errorf("%s:%d: column %s: %v", path, line, columns[nkeys+i], err)
				}
			}
			r.v = append(r.v, v)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// eventDelayRow is one target's per-event delay run.
type eventDelayRow struct {
	target string
	v      map[string]float64 // by column name
}

func readEventDelay(path string) ([]eventDelayRow, error) {
	rows, err := readTable(path, eventdelayColumns, 1)
	if err != nil {
		return nil, err
	}
	var out []eventDelayRow
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r.keys[0]] {
			return nil, fmt.Errorf("%s: second row for %s", path, r.keys[0])
		}
		seen[r.keys[0]] = true
		e := eventDelayRow{target: r.keys[0], v: map[string]float64{}}
		for i, c := range eventdelayColumns[1:] {
			e.v[c] = r.v[i]
		}
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b eventDelayRow) int { return targetRank(a.target) - targetRank(b.target) })
	return out, nil
}

func cmdEventDelayReport(args []string, w io.Writer) error {
	if len(args) != 1 {
		usage()
	}
	rows, err := readEventDelay(args[0])
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return errors.New("eventdelay-report: no results")
	}
	var direct eventDelayRow
	hasD := false
	for _, r := range rows {
		if r.target == "direct" {
			direct, hasD = r, true
		}
	}
	num := func(v float64) string {
		if v != v {
			return "–"
		}
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	added := func(r eventDelayRow, col string) string {
		a, b := r.v[col], direct.v[col]
		if !hasD || r.target == "direct" || a != a || b != b {
			return "–"
		}
		return fmt.Sprintf("%+.0f", a-b)
	}
	fmt.Fprintln(w, "| target | streams/s | streams | errors | events | delay p50 µs | delay p90 µs | delay p99 µs | delay max µs | added p50 µs | added p99 µs |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.target,
			strconv.FormatFloat(r.v["rate"], 'f', -1, 64), num(r.v["sent"]), num(r.v["errors"]), num(r.v["events"]),
			num(r.v["delay_p50_us"]), num(r.v["delay_p90_us"]), num(r.v["delay_p99_us"]), num(r.v["delay_max_us"]),
			added(r, "delay_p50_us"), added(r, "delay_p99_us"))
	}
	return nil
}
