// Command benchtool is the Go side of bench/load.sh: it writes the workload
// bodies and the wrk script, finds free ports, waits for the targets to
// serve correct replies, measures at a fixed rate, and turns raw results
// into Markdown tables and a chart.
//
//	benchtool bodies DIR                  write DIR/<workload>.json and .headers, DIR/post.lua,
//	                                      DIR/workloads.tsv and DIR/mock-<shape>.args
//	benchtool describe NAME...            one Markdown line describing the workloads (for the report)
//	benchtool ports N                     print N free loopback ports
//	benchtool wait [-timeout 20s] [-mock SHAPE] URL...  wait until every base URL serves every
//	                                      workload of that mock shape correctly
//	benchtool report [-noisy PCT] RESULTS.tsv  Markdown tables of a load run (see load.sh for the columns)
//	benchtool gobench < go-test-output    Markdown table of the Go benchmarks with Proxy - Direct deltas
//	benchtool openloop -rate R -duration D -warmup W -body FILE [-headers FILE] [-stream] [-stamped] [-header 'K: V']... URL
//	                                      open-loop latency at a fixed rate: one OPENLOOP line (see openloop.go)
//	benchtool openloop-report OPENLOOP.tsv  Markdown tables of the open-loop runs (see load.sh for the columns)
//	benchtool eventdelay-report EVENTDELAY.tsv  Markdown table of the per-event delay runs (see eventdelay.go)
//	benchtool chart -o FILE [-title T] [-eventdelay EVENTDELAY.tsv] OPENLOOP.tsv
//	                                      SVG chart of the open-loop latency percentiles (see chart.go)
//	benchtool idle -n N [-hold D] [-timeout D] -body FILE [-pid PID] URL
//	                                      hold N streams open, RSS of PID per stream: one IDLE line (see idle.go)
//	benchtool idle-report IDLE.tsv        Markdown table of the idle-stream runs (see load.sh for the columns)
//	benchtool history -size S [-growth N] [-sessions N] -rate R -duration D -warmup W [-connections C -closed-duration D] URL
//	                                      agent sessions resending a growing history: one HISTORY line (see history.go)
//	benchtool history-report HISTORY.tsv  Markdown tables of the history runs (see history_report.go for the columns)
//	benchtool history-chart -o FILE [-title T] [-results RESULTS.tsv] HISTORY.tsv
//	                                      SVG chart: added p50 by history size, throughput ÷ nginx (see chart_history.go)
//	benchtool readme -history HISTORY.tsv [-results RESULTS.tsv] [-rows 50k,1m] [-note TEXT] README.md
//	                                      rewrite the performance table between <!-- bench:begin --> and <!-- bench:end -->
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shepherd-proxy/shepherd/bench/workload"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	args := os.Args[2:]
	switch os.Args[1] {
	case "bodies":
		err = cmdBodies(args)
	case "describe":
		err = cmdDescribe(args, os.Stdout)
	case "ports":
		err = cmdPorts(args)
	case "wait":
		err = cmdWait(args)
	case "report":
		err = cmdReport(args, os.Stdout)
	case "gobench":
		err = cmdGobench(os.Stdin, os.Stdout)
	case "openloop":
		err = cmdOpenloop(args, os.Stdout)
	case "openloop-report":
		err = cmdOpenloopReport(args, os.Stdout)
	case "eventdelay-report":
		err = cmdEventDelayReport(args, os.Stdout)
	case "chart":
		err = cmdChart(args)
	case "idle":
		err = cmdIdle(args, os.Stdout)
	case "idle-report":
		err = cmdIdleReport(args, os.Stdout)
	case "history":
		err = cmdHistory(args, os.Stdout)
	case "history-report":
		err = cmdHistoryReport(args, os.Stdout)
	case "history-chart":
		err = cmdHistoryChart(args)
	case "readme":
		err = cmdReadme(args)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtool:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: benchtool bodies DIR | describe NAME... | ports N | wait [-timeout D] [-mock SHAPE] URL... |\n"+
		"  report [-noisy PCT] RESULTS.tsv | gobench |\n"+
		"  openloop -rate R -duration D -warmup W -body FILE [-headers FILE] [-stream] [-stamped] [-header 'K: V']... URL |\n"+
		"  openloop-report OPENLOOP.tsv | eventdelay-report EVENTDELAY.tsv | chart -o FILE [-title T] [-eventdelay EVENTDELAY.tsv] OPENLOOP.tsv |\n"+
		"  idle -n N [-hold D] [-timeout D] -body FILE [-pid PID] URL | idle-report IDLE.tsv |\n"+
		"  history -size S [-growth N] [-sessions N] -rate R -duration D -warmup W [-connections C -closed-duration D] [-headers FILE] URL |\n"+
		"  history-report HISTORY.tsv | history-chart -o FILE [-title T] [-results RESULTS.tsv] HISTORY.tsv |\n"+
		"  readme -history HISTORY.tsv [-results RESULTS.tsv] [-rows 50k,1m] [-note TEXT] README.md")
	os.Exit(2)
}

// postLua is the wrk script: it posts the body named by $BODY_FILE with the
// headers listed in $HEADERS_FILE ("Name: value" lines) to the URL's path
// and, when done, prints one machine-readable RESULT line (latencies in
// microseconds).
const postLua = `-- generated by benchtool bodies; do not edit
local f = assert(io.open(os.getenv("BODY_FILE"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
for line in io.lines(os.getenv("HEADERS_FILE")) do
  local k, v = line:match("^([^:]+):%s*(.-)%s*$")
  if k then wrk.headers[k] = v end
end
-- 64 sessions in turn, so the targets with hooks keep per-session state the
-- way a fleet of agents would (and do not all contend for one session).
local n = 0
function request()
  n = n + 1
  wrk.headers["X-Session-Id"] = "bench-" .. (n % 64)
  return wrk.format()
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d duration_us=%d bytes=%d connect=%d read=%d write=%d status=%d timeout=%d " ..
    "mean_us=%.1f p50_us=%d p90_us=%d p99_us=%d p999_us=%d max_us=%d\n",
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency:percentile(99.9), latency.max))
end
`

// workloadColumns is the header of DIR/workloads.tsv, which load.sh reads:
// one line per workload (All, then EventDelay), stream is 0 or 1, mock the
// shape's name, events the reply's SSE events (0 for JSON).
var workloadColumns = []string{"name", "api", "path", "stream", "mock", "events"}

func cmdBodies(args []string) error {
	if len(args) != 1 {
		usage()
	}
	dir := args[0]
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var tsv strings.Builder
	tsv.WriteString(strings.Join(workloadColumns, "\t") + "\n")
	for _, b := range append(workload.All(), workload.EventDelay()) {
		if err := os.WriteFile(filepath.Join(dir, b.Name+".json"), b.JSON, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, b.Name+".headers"), headerLines(b.Headers), 0o644); err != nil {
			return err
		}
		stream := 0
		if b.Stream {
			stream = 1
		}
		fmt.Fprintf(&tsv, "%s\t%s\t%s\t%d\t%s\t%d\n", b.Name, b.API, b.Path, stream, b.Mock.Name, b.Events())
	}
	if err := os.WriteFile(filepath.Join(dir, "workloads.tsv"), []byte(tsv.String()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "post.lua"), []byte(postLua), 0o644); err != nil {
		return err
	}
	// The mockprovider flags of each reply shape.
	for _, m := range workload.Shapes() {
		if err := os.WriteFile(filepath.Join(dir, "mock-"+m.Name+".args"), []byte(strings.Join(m.Args(), " ")+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// headerLines renders headers as "Name: value" lines (the .headers files).
func headerLines(hs [][2]string) []byte {
	var b []byte
	for _, h := range hs {
		b = fmt.Appendf(b, "%s: %s\n", h[0], h[1])
	}
	return b
}

// readHeaders reads a .headers file written by bodies.
func readHeaders(path string) ([][2]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out [][2]string
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("%s: bad header line %q", path, line)
		}
		out = append(out, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
	}
	return out, nil
}

// cmdDescribe prints the "Workloads" line of the report for the named
// workloads.
func cmdDescribe(args []string, w io.Writer) error {
	if len(args) == 0 {
		usage()
	}
	var parts []string
	for _, name := range args {
		b, ok := workload.ByName(name)
		if !ok {
			return fmt.Errorf("describe: unknown workload %q", name)
		}
		parts = append(parts, describeBody(b))
	}
	fmt.Fprintf(w, "- Workloads: %s\n", strings.Join(parts, "; "))
	return nil
}

func describeBody(b workload.Body) string {
	api := map[string]string{workload.APIAnthropic: "Anthropic Messages", workload.APIChat: "OpenAI Chat Completions"}[b.API]
	s := fmt.Sprintf("%s = %d B %s request (%s", b.Name, len(b.JSON), api, b.Summary)
	if b.Stream {
		return s + `, "stream":true) → SSE stream of ` + b.Mock.Describe()
	}
	return s + fmt.Sprintf(") → JSON reply with %d B of text", b.Mock.Pad)
}

func cmdPorts(args []string) error {
	if len(args) != 1 {
		usage()
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 1 {
		return fmt.Errorf("ports: bad count %q", args[0])
	}
	// Hold every listener until all are chosen so the ports are distinct.
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		lns = append(lns, ln)
		fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	}
	return nil
}

// cmdWait polls each base URL until it answers every workload served by
// the given mock shape with a 200 and a well-formed reply (a complete
// stream for streaming workloads).
func cmdWait(args []string) error {
	fs := flag.NewFlagSet("wait", flag.ExitOnError)
	timeout := fs.Duration("timeout", 20*time.Second, "give up after")
	shape := fs.String("mock", workload.MockDefault.Name, "check the workloads of this mock shape")
	_ = fs.Parse(args)
	if fs.NArg() == 0 {
		usage()
	}
	if len(bodiesOf(*shape)) == 0 {
		return fmt.Errorf("wait: no workload uses mock shape %q", *shape)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableCompression: true}}
	deadline := time.Now().Add(*timeout)
	for _, base := range fs.Args() {
		for {
			err := checkTarget(client, base, *shape)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: %w", base, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// bodiesOf returns the workloads (All and EventDelay) served by a mock shape.
func bodiesOf(shape string) []workload.Body {
	var out []workload.Body
	for _, b := range append(workload.All(), workload.EventDelay()) {
		if b.Mock.Name == shape {
			out = append(out, b)
		}
	}
	return out
}

// checkTarget sends every workload of the mock shape once and checks the
// reply: a message (or chat completion), or a stream of the expected number
// of events ending in message_stop, with the tool calls and the stamps the
// shape adds.
func checkTarget(client *http.Client, base, shape string) error {
	for _, b := range bodiesOf(shape) {
		req, err := http.NewRequest(http.MethodPost, base+b.Path, bytes.NewReader(b.JSON))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		for _, h := range b.Headers {
			req.Header.Set(h[0], h[1])
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != 200 {
			return fmt.Errorf("%s: status %d: %.200s", b.Name, resp.StatusCode, body)
		}
		if err := checkReply(b, body); err != nil {
			return fmt.Errorf("%s: %w", b.Name, err)
		}
	}
	return nil
}

func checkReply(b workload.Body, body []byte) error {
	if !b.Stream {
		want := `"type":"message"`
		if b.API == workload.APIChat {
			want = `"object":"chat.completion"`
		}
		if !bytes.Contains(body, []byte(want)) {
			return fmt.Errorf("reply without %s: %.200s", want, body)
		}
		return nil
	}
	events := bytes.Split(bytes.TrimSuffix(body, []byte("\n\n")), []byte("\n\n"))
	if len(events) != b.Events() || !bytes.HasPrefix(events[len(events)-1], []byte("event: message_stop")) {
		return fmt.Errorf("stream of %d events (want %d, ending in message_stop)", len(events), b.Events())
	}
	if n := bytes.Count(body, []byte(`"content_block":{"type":"tool_use"`)); n != b.Mock.Tools {
		return fmt.Errorf("stream with %d tool calls, want %d", n, b.Mock.Tools)
	}
	if b.Mock.Stamp {
		stamps := 0
		for _, ev := range events {
			_, text, err := eventStamp(ev)
			if err != nil {
				return err
			}
			if text {
				stamps++
			}
		}
		if want := b.Mock.TextDeltas(); stamps != want {
			return fmt.Errorf("stream with %d stamped text deltas, want %d", stamps, want)
		}
	}
	return nil
}

// A result is one wrk run, one line of load.sh's results.tsv.
type result struct {
	workload, target string
	round            int
	rps              float64
	p50, p90, p99    float64 // microseconds
	requests, errors int64
	proxyCPU         float64 // CPU µs per request of the process under test (NaN for direct)
	mockCPU          float64 // CPU µs per request of the mock
	wrkCPU           float64 // CPU µs per request of wrk
	proxyCore        float64 // busy % of the proxy's core during the run (NaN when not pinned)
	loadCore         float64 // busy % of the load generator's core (wrk and mock)
	other            float64 // % of the whole machine used by other processes
}

// resultColumns is the header load.sh writes; report checks it.
var resultColumns = []string{"workload", "target", "round", "rps", "p50_us", "p90_us", "p99_us",
	"requests", "errors", "proxy_cpu_us", "mock_cpu_us", "wrk_cpu_us", "proxy_core_busy", "load_core_busy", "other_pct"}

func readResults(path string) ([]result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var out []result
	line := 0
	for sc.Scan() {
		line++
		fields := strings.Split(sc.Text(), "\t")
		if line == 1 {
			if !slices.Equal(fields, resultColumns) {
				return nil, fmt.Errorf("%s: header %q, want %q", path, fields, resultColumns)
			}
			continue
		}
		if len(fields) != len(resultColumns) {
			return nil, fmt.Errorf("%s:%d: %d fields, want %d", path, line, len(fields), len(resultColumns))
		}
		num := func(i int) float64 {
			v, perr := strconv.ParseFloat(fields[i], 64)
			if perr != nil && err == nil {
				err = fmt.Errorf("%s:%d: column %s: %v", path, line, resultColumns[i], perr)
			}
			return v
		}
		r := result{workload: fields[0], target: fields[1], round: int(num(2)), rps: num(3),
			p50: num(4), p90: num(5), p99: num(6), requests: int64(num(7)), errors: int64(num(8)),
			proxyCPU: num(9), mockCPU: num(10), wrkCPU: num(11), proxyCore: num(12), loadCore: num(13), other: num(14)}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// summary is the median over rounds of one workload × target.
type summary struct {
	result
	rounds int
}

func median(rs []result, f func(result) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

func summarize(rs []result) (workloads, targets []string, sums map[[2]string]summary) {
	groups := map[[2]string][]result{}
	for _, r := range rs {
		if !slices.Contains(workloads, r.workload) {
			workloads = append(workloads, r.workload)
		}
		if !slices.Contains(targets, r.target) {
			targets = append(targets, r.target)
		}
		k := [2]string{r.workload, r.target}
		groups[k] = append(groups[k], r)
	}
	// Targets in the conventional order, extras after.
	slices.SortStableFunc(targets, func(a, b string) int { return targetRank(a) - targetRank(b) })
	sums = map[[2]string]summary{}
	for k, g := range groups {
		var s summary
		s.workload, s.target, s.rounds = k[0], k[1], len(g)
		s.rps = median(g, func(r result) float64 { return r.rps })
		s.p50 = median(g, func(r result) float64 { return r.p50 })
		s.p90 = median(g, func(r result) float64 { return r.p90 })
		s.p99 = median(g, func(r result) float64 { return r.p99 })
		s.proxyCPU = median(g, func(r result) float64 { return r.proxyCPU })
		s.mockCPU = median(g, func(r result) float64 { return r.mockCPU })
		s.wrkCPU = median(g, func(r result) float64 { return r.wrkCPU })
		s.other = median(g, func(r result) float64 { return r.other })
		s.proxyCore = median(g, func(r result) float64 { return r.proxyCore })
		s.loadCore = median(g, func(r result) float64 { return r.loadCore })
		for _, r := range g {
			s.requests += r.requests
			s.errors += r.errors
		}
		sums[k] = s
	}
	return workloads, targets, sums
}

func targetRank(t string) int {
	switch t {
	case "direct":
		return 0
	case "nginx":
		return 1
	case "shepherd":
		return 2
	}
	return 3
}

func cmdReport(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ExitOnError)
	noisy := fs.Float64("noisy", 10, "flag rows during which other processes used more than this % of the machine")
	_ = fs.Parse(args)
	if fs.NArg() != 1 {
		usage()
	}
	rs, err := readResults(fs.Arg(0))
	if err != nil {
		return err
	}
	if len(rs) == 0 {
		return errors.New("report: no results")
	}
	workloads, targets, sums := summarize(rs)
	flagged := false

	fmt.Fprintln(w, "| workload | target | req/s | p50 ms | p90 ms | p99 ms | req/s ÷ direct | p50 ÷ direct | p99 ÷ direct | req/s ÷ nginx | p50 ÷ nginx | p99 ÷ nginx | proxy CPU µs/req | errors |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, wl := range workloads {
		d, hasD := sums[[2]string{wl, "direct"}]
		n, hasN := sums[[2]string{wl, "nginx"}]
		for _, t := range targets {
			s, ok := sums[[2]string{wl, t}]
			if !ok {
				continue
			}
			name := t
			if s.other > *noisy {
				name += " ⚠"
				flagged = true
			}
			fmt.Fprintf(w, "| %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n",
				wl, name, s.rps, ms(s.p50), ms(s.p90), ms(s.p99),
				ratio(s.rps, d.rps, hasD && t != "direct"), ratio(s.p50, d.p50, hasD && t != "direct"), ratio(s.p99, d.p99, hasD && t != "direct"),
				ratio(s.rps, n.rps, hasN && t != "nginx" && t != "direct"), ratio(s.p50, n.p50, hasN && t != "nginx" && t != "direct"), ratio(s.p99, n.p99, hasN && t != "nginx" && t != "direct"),
				cpu(s.proxyCPU), s.errors)
		}
	}
	if flagged {
		fmt.Fprintf(w, "\n⚠ other processes used more than %g%% of the machine during this row's runs (median): treat it as noisy.\n", *noisy)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Where the CPU went (medians over rounds): busy % of the proxy's core and of the load core (wrk + mock), CPU per request of the mock and of wrk, and the share of the whole machine taken by other processes during the run (noise; should be near 0).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| workload | target | proxy core busy % | load core busy % | mock CPU µs/req | wrk CPU µs/req | other processes % | requests | rounds |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|")
	for _, wl := range workloads {
		for _, t := range targets {
			s, ok := sums[[2]string{wl, t}]
			if !ok {
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %d | %d |\n", wl, t, pct(s.proxyCore), pct(s.loadCore),
				cpu(s.mockCPU), cpu(s.wrkCPU), pct(s.other), s.requests, s.rounds)
		}
	}
	return nil
}

func pct(v float64) string {
	if v != v {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

func ms(us float64) string { return strconv.FormatFloat(us/1000, 'f', 2, 64) }

func ratio(a, b float64, ok bool) string {
	if !ok || b == 0 {
		return "–"
	}
	return strconv.FormatFloat(a/b, 'f', 2, 64)
}

func cpu(us float64) string {
	if us != us || us < 0 { // NaN or not measured
		return "–"
	}
	return strconv.FormatFloat(us, 'f', 1, 64)
}

// cmdGobench reads `go test -bench` output and prints a table with, for
// every BenchmarkProxyX/case (and BenchmarkProxyXHooks/case), the difference
// to BenchmarkDirectX/case.
func cmdGobench(r io.Reader, w io.Writer) error {
	type bench struct {
		name    string
		metrics map[string]float64
		units   []string
	}
	var benches []bench
	byName := map[string]bench{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i] // drop the GOMAXPROCS suffix
			}
		}
		b := bench{name: strings.TrimPrefix(name, "Benchmark"), metrics: map[string]float64{}}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			b.metrics[f[i+1]] = v
			b.units = append(b.units, f[i+1])
		}
		benches = append(benches, b)
		byName[b.name] = b
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(benches) == 0 {
		return errors.New("gobench: no benchmark lines on stdin")
	}
	fmt.Fprintln(w, "| benchmark | ns/op | B/op | allocs/op | ns/event | shepherd adds ns/op | shepherd adds B/op | shepherd adds allocs/op |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|")
	num := func(m map[string]float64, unit string) string {
		v, ok := m[unit]
		if !ok {
			return "–"
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	for _, b := range benches {
		add := [3]string{"–", "–", "–"}
		if rest, ok := strings.CutPrefix(b.name, "Proxy"); ok {
			// BenchmarkProxyXHooks/case compares with BenchmarkDirectX/case too.
			direct := "Direct" + rest
			if kind, c, ok := strings.Cut(rest, "/"); ok {
				direct = "Direct" + strings.TrimSuffix(kind, "Hooks") + "/" + c
			} else {
				direct = "Direct" + strings.TrimSuffix(rest, "Hooks")
			}
			if d, ok := byName[direct]; ok {
				for i, unit := range []string{"ns/op", "B/op", "allocs/op"} {
					pv, pok := b.metrics[unit]
					dv, dok := d.metrics[unit]
					if pok && dok {
						add[i] = fmt.Sprintf("%+.0f", pv-dv)
					}
				}
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", b.name,
			num(b.metrics, "ns/op"), num(b.metrics, "B/op"), num(b.metrics, "allocs/op"), num(b.metrics, "ns/event"),
			add[0], add[1], add[2])
	}
	// Session benchmarks (an op is a whole session) get their per-request
	// figures in a table of their own.
	header := false
	for _, b := range benches {
		perReq, ok := b.metrics["ns/request"]
		if !ok {
			continue
		}
		if !header {
			fmt.Fprintln(w)
			fmt.Fprintln(w, "| session benchmark | ns/request (mean) | last request ns | ns/op (whole session) | B/op | allocs/op |")
			fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|")
			header = true
		}
		fmt.Fprintf(w, "| %s | %.0f | %s | %s | %s | %s |\n", b.name, perReq,
			num(b.metrics, "last-ns"), num(b.metrics, "ns/op"), num(b.metrics, "B/op"), num(b.metrics, "allocs/op"))
	}
	return nil
}
