package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/shepherd-proxy/shepherd/bench/workload"
)

func TestHistorySeq(t *testing.T) {
	var variants [][][]byte
	for _, v := range []string{"x", "y", "z"} {
		variants = append(variants, [][]byte{[]byte(v), []byte(v + "b"), []byte(v + "bc")})
	}
	seq := historySeq{variants: variants, slots: 2, prefix: "h"}
	pick := seq.openPick()
	// Slot s's session g is variant (s + 2g) mod 3.
	want := []struct {
		body, session string
		cold          bool
	}{
		{"x", "h-0-0", true}, {"y", "h-1-0", true}, {"xb", "h-0-0", false}, {"yb", "h-1-0", false},
		{"xbc", "h-0-0", false}, {"ybc", "h-1-0", false}, {"z", "h-0-1", true}, {"x", "h-1-1", true}, {"zb", "h-0-1", false},
		{"xb", "h-1-1", false}, {"zbc", "h-0-1", false}, {"xbc", "h-1-1", false}, {"y", "h-0-2", true},
	}
	for i, w := range want {
		body, session, cold := pick(i)
		if string(body) != w.body || session != w.session || cold != w.cold {
			t.Errorf("request %d: %q %q %v, want %q %q %v", i, body, session, cold, w.body, w.session, w.cold)
		}
	}
}

// lineField reads NAME=value from a HISTORY line.
func lineField(t *testing.T, line, name string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?:^| )` + name + `=([^ ]+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no %s in %q", name, line)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// Every session the server sees receives one agent's base history, then
// each next request extends the previous by one round trip, in order; the
// open and the closed loop use sessions of their own; cold requests are
// counted but kept out of the warm latencies.
func TestHistoryRun(t *testing.T) {
	const size, growth = "20k", 3
	n, _ := workload.ParseSize(size)
	turns := workload.HistoryTurns(n)
	variants := workload.AgentHistoryVariants(turns, growth, 4) // 2 × max(sessions, connections)
	bodies := variants[0]
	var mu sync.Mutex
	perSession := map[string][]int{} // body index of each request, in arrival order
	agents := map[string]int{}       // the variant of each session
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		k, v := -1, -1
		for vi, bodies := range variants {
			for i, want := range bodies {
				if bytes.Equal(b, want) {
					k, v = i, vi
				}
			}
		}
		if k < 0 || r.Header.Get("x-api-key") == "" {
			http.Error(w, "unexpected body or headers", http.StatusBadRequest)
			return
		}
		mu.Lock()
		s := r.Header.Get("X-Session-Id")
		perSession[s] = append(perSession[s], k)
		if prev, ok := agents[s]; ok && prev != v {
			t.Errorf("session %s: bodies of agents %d and %d", s, prev, v)
		}
		agents[s] = v
		mu.Unlock()
		w.Write([]byte(`{"type":"message"}`))
	}))
	defer srv.Close()
	var out bytes.Buffer
	err := cmdHistory([]string{"-size", size, "-growth", strconv.Itoa(growth), "-sessions", "2", "-rate", "200",
		"-duration", "400ms", "-warmup", "100ms", "-connections", "2", "-closed-duration", "300ms", srv.URL}, &out)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(out.String())
	if !strings.HasPrefix(line, "HISTORY size=20k ") {
		t.Fatalf("line %q", line)
	}
	if lineField(t, line, "bytes") != float64(len(bodies[0])) || lineField(t, line, "turns") != float64(turns) {
		t.Errorf("bytes/turns in %q, want %d/%d", line, len(bodies[0]), turns)
	}
	sent, cold := lineField(t, line, "sent"), lineField(t, line, "cold")
	if sent != 80 || lineField(t, line, "errors") != 0 || lineField(t, line, "closed_errors") != 0 {
		t.Errorf("sent/errors in %q, want 80 sent, no errors", line)
	}
	// One in growth+1 requests is a session's first: 80 measured requests
	// (from request 20 on, over 2 slots) hold 20 ± 2 of them.
	if cold < 18 || cold > 22 {
		t.Errorf("cold %g, want about 80/%d", cold, growth+1)
	}
	if lineField(t, line, "rps") <= 0 || lineField(t, line, "p50_us") <= 0 || lineField(t, line, "closed_p50_us") <= 0 {
		t.Errorf("no throughput or latency in %q", line)
	}
	mu.Lock()
	defer mu.Unlock()
	open, closed := 0, 0
	for s, ks := range perSession {
		switch {
		case strings.Contains(s, "-open-"):
			open++
		case strings.Contains(s, "-closed-"):
			closed++
		default:
			t.Errorf("session %q of neither loop", s)
		}
		for i, k := range ks {
			if k != i {
				t.Errorf("session %s: request %d sent body %d (sequence %v), want each request to extend the one before", s, i, k, ks)
				break
			}
		}
		if len(ks) > growth+1 {
			t.Errorf("session %s: %d requests, more than %d", s, len(ks), growth+1)
		}
	}
	if open < 2 || closed < 2 {
		t.Errorf("%d open-loop and %d closed-loop sessions, want at least 2 each", open, closed)
	}
	seen := map[int]bool{}
	for _, v := range agents {
		seen[v] = true
	}
	if len(seen) < 3 {
		t.Errorf("sessions of %d agents, want different agents across sessions", len(seen))
	}
}

const historyTSV = "size\ttarget\tbytes\tturns\trate\tsent\terrors\tp50_us\tp90_us\tp99_us\tp999_us\tmax_us\tcold_p50_us\tconnections\trps\tclosed_errors\tclosed_p50_us\tclosed_p99_us\n" +
	"50k\tdirect\t51627\t30\t50\t250\t0\t100\t120\t150\t160\t170\t110\t4\t2000\t0\t90\t140\n" +
	"50k\tnginx\t51627\t30\t50\t250\t0\t130\t150\t200\t210\t220\t140\t4\t1600\t0\t120\t190\n" +
	"50k\tshepherd\t51627\t30\t50\t250\t0\t230\t260\t400\t410\t420\t600\t4\t1200\t0\t220\t390\n" +
	"50k\tshepherd-hooks\t51627\t30\t50\t250\t0\t430\t460\t700\t710\t720\t900\t4\t800\t0\t420\t690\n" +
	"1m\tdirect\t1048600\t930\t50\t250\t0\t600\t700\t900\t950\t990\t610\t4\t400\t0\t590\t890\n" +
	"1m\tnginx\t1048600\t930\t50\t250\t0\t1100\t1300\t1600\t1650\t1700\t1150\t4\t300\t0\t1090\t1590\n" +
	"1m\tshepherd\t1048600\t930\t50\t250\t0\t2100\t2300\t2600\t2650\t2700\t5000\t4\t150\t0\t2090\t2590\n" +
	"1m\tshepherd-hooks\t1048600\t930\t50\t250\t2\t4100\t4300\t4600\t4650\t4700\t9000\t4\t75\t1\t4090\t4590\n"

const resultsTSV = "workload\ttarget\tround\trps\tp50_us\tp90_us\tp99_us\trequests\terrors\tproxy_cpu_us\tmock_cpu_us\twrk_cpu_us\tproxy_core_busy\tload_core_busy\tother_pct\n" +
	"small\tdirect\t1\t40000\t700\t900\t1000\t400000\t0\tnan\t20\t5\tnan\tnan\t1\n" +
	"small\tnginx\t1\t20000\t1500\t1800\t2000\t200000\t0\t30\t20\t5\tnan\tnan\t1\n" +
	"small\tshepherd\t1\t10000\t3000\t3300\t4000\t100000\t0\t90\t20\t5\tnan\tnan\t1\n" +
	"small\tshepherd-hooks\t1\t5000\t6000\t6300\t7000\t50000\t0\t190\t20\t5\tnan\tnan\t1\n"

func writeTemp(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestHistoryReport(t *testing.T) {
	var out bytes.Buffer
	if err := cmdHistoryReport([]string{writeTemp(t, "history.tsv", historyTSV)}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		// size, target, body, p50, p99, added vs direct p50/p99, vs nginx p50/p99, cold p50, requests, errors
		"| 50k | nginx | 50 KB | 130 | 200 | +30 | +50 | – | – | 140 | 250 | 0 |",
		"| 1m | shepherd | 1.00 MB | 2100 | 2600 | +1500 | +1700 | +1000 | +1000 | 5000 | 250 | 0 |",
		"| 1m | direct | 1.00 MB | 600 | 900 | – | – | – | – | 610 | 250 | 0 |",
		// throughput: connections, req/s, ÷ direct, ÷ nginx, p50, p99, errors
		"| 1m | shepherd-hooks | 4 | 75 | 0.19 | 0.25 | 4090 | 4590 | 1 |",
		"| 50k | nginx | 4 | 1600 | 0.80 | – | 120 | 190 | 0 |",
	} {
		if !strings.Contains(out.String(), want+"\n") {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if err := cmdHistoryReport([]string{writeTemp(t, "bad.tsv", "size\ttarget\n")}, &out); err == nil {
		t.Error("a file with the wrong header accepted")
	}
}

func TestReadme(t *testing.T) {
	doc := "# x\n\n## Performance\n\nintro\n\n" + readmeBegin + "\nold table\n" + readmeEnd + "\n\nafter\n"
	readme := writeTemp(t, "README.md", doc)
	hist := writeTemp(t, "history.tsv", historyTSV)
	res := writeTemp(t, "results.tsv", resultsTSV)
	if err := cmdReadme([]string{"-history", hist, "-results", res, "-note", "Smoke run, 2026-11-26.", readme}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(readme)
	s := string(got)
	for _, want := range []string{
		"# x\n\n## Performance\n\nintro\n\n" + readmeBegin + "\n| history resent each turn |",
		// nginx adds vs direct; shepherd adds over nginx, hooks off / on; req/s ÷ nginx, hooks off / on
		"| 50k (50 KB) | +30 µs | +100 µs | +300 µs | 0.75 | 0.50 |\n",
		"| 1m (1.00 MB) | +500 µs | +1000 µs | +3000 µs | 0.50 | 0.25 |\n",
		"Saturation (wrk, one fixed body), req/s ÷ nginx, hooks off / on: small 0.50 / 0.25.",
		"\nSmoke run, 2026-11-26.\n" + readmeEnd + "\n\nafter\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("README lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "old table") {
		t.Error("old table kept")
	}
	// Idempotent: a second run changes nothing.
	if err := cmdReadme([]string{"-history", hist, "-results", res, "-note", "Smoke run, 2026-11-26.", readme}); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(readme); string(again) != s {
		t.Error("second rewrite changed the README")
	}
	// -rows picks sizes; none measured: all.
	if got := readmeTable(mustHistory(t, hist), nil, []string{"1m"}, ""); strings.Contains(got, "| 50k") || !strings.Contains(got, "| 1m") {
		t.Errorf("rows 1m:\n%s", got)
	}
	if got := readmeTable(mustHistory(t, hist), nil, []string{"9m"}, ""); !strings.Contains(got, "| 50k") || !strings.Contains(got, "| 1m") {
		t.Errorf("rows 9m (not measured):\n%s", got)
	}
	if err := cmdReadme([]string{"-history", hist, writeTemp(t, "NOMARK.md", "no markers\n")}); err == nil {
		t.Error("a README without markers accepted")
	}
}

func mustHistory(t *testing.T, path string) historyData {
	t.Helper()
	h, err := readHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestLinTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		n      int
		want   []float64
	}{
		{0, 3150, 5, []float64{0, 1000, 2000, 3000, 4000}},
		{0, 1.05, 5, []float64{0, 0.5, 1, 1.5}},
		{-120, 400, 5, []float64{-200, 0, 200, 400}},
	} {
		got := linTicks(c.lo, c.hi, c.n)
		if len(got) != len(c.want) {
			t.Errorf("linTicks(%g, %g) = %v, want %v", c.lo, c.hi, got, c.want)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-9 {
				t.Errorf("linTicks(%g, %g) = %v, want %v", c.lo, c.hi, got, c.want)
				break
			}
		}
	}
}

func TestHistoryChart(t *testing.T) {
	out := filepath.Join(t.TempDir(), "chart.svg")
	hist := writeTemp(t, "history.tsv", historyTSV)
	res := writeTemp(t, "results.tsv", resultsTSV)
	if err := cmdHistoryChart([]string{"-o", out, "-title", "run <1>", "-results", res, hist}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var root svgNode
	if err := xml.Unmarshal(data, &root); err != nil {
		t.Fatalf("invalid SVG: %v", err)
	}
	if !bytes.Contains(data, []byte("run &lt;1&gt;")) {
		t.Error("title not escaped")
	}
	panels := map[string]svgNode{}
	series := map[string]svgNode{} // "panel/target"
	for _, n := range root.Nodes {
		switch n.attr("class") {
		case "panel":
			panels[n.attr("data-panel")] = n
		case "series":
			series[n.attr("data-panel")+"/"+n.attr("data-target")] = n
		}
	}
	for _, id := range []string{"added-p50", "history-throughput", "saturation-throughput"} {
		if _, ok := panels[id]; !ok {
			t.Errorf("no panel %s", id)
		}
	}
	for _, k := range []string{"added-p50/nginx", "added-p50/shepherd", "added-p50/shepherd-hooks",
		"history-throughput/direct", "history-throughput/shepherd", "history-throughput/shepherd-hooks",
		"saturation-throughput/direct", "saturation-throughput/nginx", "saturation-throughput/shepherd", "saturation-throughput/shepherd-hooks"} {
		if _, ok := series[k]; !ok {
			t.Errorf("no series %s", k)
		}
	}
	if _, ok := series["added-p50/direct"]; ok {
		t.Error("direct drawn against itself")
	}
	// Axis labels: the sizes on x, round µs values on y.
	texts := func(n svgNode, class string) []string {
		var out []string
		for _, c := range n.Nodes {
			if c.attr("class") == class {
				out = append(out, c.Text)
			}
		}
		return out
	}
	added := panels["added-p50"]
	if got := texts(added, "xtick"); strings.Join(got, ",") != "50k,1m" {
		t.Errorf("x ticks %q", got)
	}
	if got := texts(added, "ytick"); strings.Join(got, ",") != "0,1000,2000,3000,4000" {
		t.Errorf("y ticks %q", got)
	}
	if got := texts(panels["saturation-throughput"], "xtick"); strings.Join(got, ",") != "small" {
		t.Errorf("saturation groups %q", got)
	}
	// Values map to coordinates: shepherd-hooks adds 3500 µs at 1m: the
	// point sits at 3500/4000 of the height above the axis, at x 1048600 on
	// an axis from 0 to 1.04 × 1048600.
	px, py, pw, ph := panelBox(0)
	var pts []svgNode
	for _, c := range series["added-p50/shepherd-hooks"].Nodes {
		if c.XMLName.Local == "circle" {
			pts = append(pts, c)
		}
	}
	if len(pts) != 2 {
		t.Fatalf("%d points, want 2", len(pts))
	}
	if y, want := pts[1].num(t, "cy"), py+ph-ph*3500/4000; math.Abs(y-want) > 0.06 {
		t.Errorf("1m point at y %g, want %g", y, want)
	}
	if x, want := pts[1].num(t, "cx"), px+pw/1.04; math.Abs(x-want) > 0.06 {
		t.Errorf("1m point at x %g, want %g", x, want)
	}
	if !strings.Contains(pts[1].Nodes[0].Text, "shepherd-hooks at 1.00 MB: 3500 µs") {
		t.Errorf("tooltip %q", pts[1].Nodes[0].Text)
	}
	// The saturation bars: shepherd at 0.5 × nginx stands on the axis, 0.5 high
	// on the 0..2.5 axis (direct reaches 2).
	_, py2, _, ph2 := panelBox(2)
	var bar svgNode
	for _, c := range series["saturation-throughput/shepherd"].Nodes {
		if c.XMLName.Local == "rect" {
			bar = c
		}
	}
	if h, want := bar.num(t, "height"), ph2*0.5/2.5; math.Abs(h-want) > 0.11 {
		t.Errorf("bar height %g, want %g", h, want)
	}
	if bottom := bar.num(t, "y") + bar.num(t, "height"); math.Abs(bottom-(py2+ph2)) > 0.11 {
		t.Errorf("bar bottom %g, want the axis at %g", bottom, py2+ph2)
	}
}
