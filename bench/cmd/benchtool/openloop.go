package main

// Open-loop latency: requests at a fixed rate on a fixed schedule, latency
// measured from each request's scheduled time (so a stalled target is
// charged for the requests it delayed: no coordinated omission), and for
// streams the time to first byte and the gaps between consecutive events.
// For a stamped stream (the mock's -stamp: every text delta carries its send
// time), also the one-way delay of every text delta: the time the client
// has read the complete event minus the time stamped in it.
//
//	benchtool openloop -rate R -duration D -warmup W -body FILE [-headers FILE] [-stream] [-stamped] [-header 'K: V']... URL
//	benchtool openloop-report OPENLOOP.tsv

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/bench/workload"
)

// lateLimit is how late (after its scheduled time) a request may complete
// before it counts as an error; it also bounds every run.
const lateLimit = 10 * time.Second

type openloopConfig struct {
	url      string
	body     []byte
	headers  [][2]string // besides Content-Type and X-Session-Id
	rate     float64     // requests per second
	duration time.Duration
	warmup   time.Duration
	stream   bool
	stamped  bool          // a stream whose text deltas carry their send time: measure each one's delay
	limit    time.Duration // lateLimit unless a test shortens it
	// pick, when set, gives request i's body and session id instead of body
	// and "bench-<i mod 64>"; a cold request is sent and counted (sent,
	// errors) but its latency is kept apart (openloopStats.cold).
	pick func(i int) (body []byte, session string, cold bool)
	// serial > 0: request i is sent only once request i-serial has
	// completed (an agent session waits for each reply before its next
	// request); its latency still counts from its scheduled time.
	serial int
}

// openloopStats is the outcome of the measured part of one run. Latencies
// are sorted; ttfb and gaps are empty unless the run was a stream.
type openloopStats struct {
	rate         float64
	sent, errors int
	lat, ttfb    []time.Duration
	gaps         []time.Duration
	lag          []time.Duration // send time − scheduled time: the generator's own lateness (with serial, also the wait for the previous reply)
	events       int             // SSE events received by measured, successful requests
	delays       []time.Duration // stamped streams: receive time − stamped send time of every text delta
	cold         []time.Duration // latencies of the successful cold requests (pick), not in lat
	firstErr     error           // of the measured requests
}

// sample is the result of one request; every request goroutine owns one.
type sample struct {
	err       error
	lat, ttfb time.Duration
	lag       time.Duration
	gaps      []time.Duration
	events    int
	delays    []time.Duration
	cold      bool // pick said so
}

type headerFlags [][2]string

func (h *headerFlags) String() string { return fmt.Sprint(*h) }
func (h *headerFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("header %q: want 'Name: value'", v)
	}
	*h = append(*h, [2]string{strings.TrimSpace(k), strings.TrimSpace(val)})
	return nil
}

func cmdOpenloop(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("openloop", flag.ExitOnError)
	rate := fs.Float64("rate", 500, "requests per second (fixed schedule)")
	duration := fs.Duration("duration", 5*time.Second, "measured time")
	warmup := fs.Duration("warmup", time.Second, "unmeasured time before it, at the same rate")
	bodyFile := fs.String("body", "", "request body file (required)")
	stream := fs.Bool("stream", false, "the reply is SSE: also measure time to first byte and gaps between events")
	stamped := fs.Bool("stamped", false, "the reply is a stamped SSE stream (mockprovider -stamp): also measure the delay of every text delta (implies -stream)")
	headersFile := fs.String("headers", "", `request headers, "Name: value" lines (a .headers file of benchtool bodies); default the Anthropic headers`)
	var hs headerFlags
	fs.Var(&hs, "header", "extra request header 'Name: value' (repeatable)")
	_ = fs.Parse(args)
	if fs.NArg() != 1 || *bodyFile == "" {
		usage()
	}
	if !(*rate > 0) || *duration <= 0 || *warmup < 0 {
		return fmt.Errorf("openloop: need -rate > 0, -duration > 0, -warmup >= 0")
	}
	body, err := os.ReadFile(*bodyFile)
	if err != nil {
		return err
	}
	headers := workload.Headers
	if *headersFile != "" {
		if headers, err = readHeaders(*headersFile); err != nil {
			return err
		}
	}
	*stream = *stream || *stamped
	st, err := runOpenloop(openloopConfig{url: fs.Arg(0), body: body, headers: append(slices.Clone(headers), hs...), rate: *rate,
		duration: *duration, warmup: *warmup, stream: *stream, stamped: *stamped, limit: lateLimit})
	if err != nil {
		return err
	}
	if st.firstErr != nil {
		fmt.Fprintf(os.Stderr, "benchtool openloop: %d errors, first: %v\n", st.errors, st.firstErr)
	}
	fmt.Fprintln(w, st.line(*stream, *stamped))
	return nil
}

// line is the machine-readable OPENLOOP line (latencies in µs; the
// per-event delays with 0.1 µs resolution).
func (s *openloopStats) line(stream, stamped bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "OPENLOOP rate=%g sent=%d errors=%d p50_us=%d p90_us=%d p99_us=%d p999_us=%d max_us=%d lag_p50_us=%d lag_p99_us=%d",
		s.rate, s.sent, s.errors, us(percentile(s.lat, 50)), us(percentile(s.lat, 90)), us(percentile(s.lat, 99)),
		us(percentile(s.lat, 99.9)), us(percentile(s.lat, 100)), us(percentile(s.lag, 50)), us(percentile(s.lag, 99)))
	if stream {
		fmt.Fprintf(&b, " ttfb_p50_us=%d ttfb_p99_us=%d gap_p50_us=%d gap_p99_us=%d",
			us(percentile(s.ttfb, 50)), us(percentile(s.ttfb, 99)), us(percentile(s.gaps, 50)), us(percentile(s.gaps, 99)))
	}
	if stamped {
		fmt.Fprintf(&b, " delay_events=%d delay_p50_us=%.1f delay_p90_us=%.1f delay_p99_us=%.1f delay_p999_us=%.1f delay_max_us=%.1f",
			len(s.delays), fus(percentile(s.delays, 50)), fus(percentile(s.delays, 90)), fus(percentile(s.delays, 99)),
			fus(percentile(s.delays, 99.9)), fus(percentile(s.delays, 100)))
	}
	return b.String()
}

func us(d time.Duration) int64 { return d.Microseconds() }

// fus is d in microseconds, fractional.
func fus(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// percentile is the exact nearest-rank percentile of sorted samples (0 when
// there are none): the smallest sample with at least p% of them at or below.
func percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(n))) - 1
	return sorted[max(0, min(i, n-1))]
}

// runOpenloop sends request i at start + i/rate, each on its own goroutine,
// for warmup + duration, waits for the replies (each bounded by its
// scheduled time + limit) and returns the statistics of the requests
// scheduled after the warm-up.
func runOpenloop(cfg openloopConfig) (*openloopStats, error) {
	if cfg.limit <= 0 {
		cfg.limit = lateLimit
	}
	tr := &http.Transport{
		MaxIdleConns:        0, // no global limit
		MaxIdleConnsPerHost: 8192,
		DisableCompression:  true,
		IdleConnTimeout:     90 * time.Second,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	total := cfg.warmup + cfg.duration
	n := scheduledBefore(total, cfg.rate)
	first := scheduledBefore(cfg.warmup, cfg.rate) // first measured request
	samples := make([]sample, n)
	var done []chan struct{} // serial: closed when request i has completed
	if cfg.serial > 0 {
		done = make([]chan struct{}, n)
		for i := range done {
			done[i] = make(chan struct{})
		}
	}
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		due := start.Add(time.Duration(float64(i) / cfg.rate * float64(time.Second)))
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if done != nil {
				defer close(done[i])
				if i >= cfg.serial {
					<-done[i-cfg.serial]
				}
			}
			sent := time.Now()
			samples[i] = doRequest(client, cfg, i, due)
			samples[i].lag = sent.Sub(due)
			if cfg.pick != nil {
				_, _, samples[i].cold = cfg.pick(i)
			}
		}()
	}
	wg.Wait()

	st := &openloopStats{rate: cfg.rate}
	for _, s := range samples[first:] {
		st.sent++
		st.lag = append(st.lag, s.lag)
		if s.err != nil {
			st.errors++
			if st.firstErr == nil {
				st.firstErr = s.err
			}
			continue
		}
		if s.cold {
			st.cold = append(st.cold, s.lat)
			continue
		}
		st.lat = append(st.lat, s.lat)
		if cfg.stream {
			st.ttfb = append(st.ttfb, s.ttfb)
			st.gaps = append(st.gaps, s.gaps...)
			st.events += s.events
			st.delays = append(st.delays, s.delays...)
		}
	}
	slices.Sort(st.delays)
	slices.Sort(st.lat)
	slices.Sort(st.ttfb)
	slices.Sort(st.gaps)
	slices.Sort(st.lag)
	slices.Sort(st.cold)
	return st, nil
}

// scheduledBefore is how many requests are due in [0, d) at rate per second
// (the count of i with i/rate < d), tolerant of float rounding.
func scheduledBefore(d time.Duration, rate float64) int {
	return int(math.Ceil(d.Seconds()*rate - 1e-6))
}

// doRequest sends one request scheduled at due and reads the reply to its
// end; times are measured from due.
func doRequest(client *http.Client, cfg openloopConfig, i int, due time.Time) (s sample) {
	ctx, cancel := context.WithDeadline(context.Background(), due.Add(cfg.limit))
	defer cancel()
	// 64 sessions in turn, as in the wrk script (post.lua), unless pick says.
	body, session := cfg.body, "bench-"+strconv.Itoa(i%64)
	if cfg.pick != nil {
		body, session, _ = cfg.pick(i)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.url, bytes.NewReader(body))
	if err != nil {
		return sample{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Session-Id", session)
	for _, h := range cfg.headers {
		req.Header.Set(h[0], h[1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return sample{err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return sample{err: fmt.Errorf("status %d: %s", resp.StatusCode, b)}
	}
	if !cfg.stream {
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return sample{err: err}
		}
		return sample{lat: time.Since(due)}
	}

	// SSE: note when the first body byte arrives and when each event (a
	// block ended by a blank line) is complete.
	buf := make([]byte, 32<<10)
	var last time.Time // completion of the previous event
	var prev byte      // last byte of the previous read, for "\n\n" split across reads
	var pending []byte // stamped: the incomplete event so far
	for {
		k, rerr := resp.Body.Read(buf)
		if k > 0 {
			now := time.Now()
			if s.ttfb == 0 {
				s.ttfb = now.Sub(due)
			}
			chunk := buf[:k]
			if cfg.stamped {
				var err error
				if pending, err = s.stampDelays(pending, chunk, now); err != nil {
					return sample{err: err}
				}
			}
			ends := bytes.Count(chunk, []byte("\n\n"))
			if prev == '\n' && chunk[0] == '\n' {
				ends++
			}
			for range ends {
				if s.events > 0 {
					s.gaps = append(s.gaps, now.Sub(last))
				}
				last = now
				s.events++
			}
			prev = chunk[k-1]
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return sample{err: rerr}
		}
	}
	if s.events == 0 {
		return sample{err: errors.New("stream without events")}
	}
	if cfg.stamped && len(s.delays) == 0 {
		return sample{err: errors.New("stamped stream without text deltas")}
	}
	s.lat = time.Since(due)
	return s
}

// stampDelays appends chunk, read at recv, to the incomplete event pending
// and records the delay of every stamped text delta it completes; it
// returns what is left incomplete.
func (s *sample) stampDelays(pending, chunk []byte, recv time.Time) ([]byte, error) {
	pending = append(pending, chunk...)
	rest := pending
	for {
		i := bytes.Index(rest, []byte("\n\n"))
		if i < 0 {
			break
		}
		sent, text, err := eventStamp(rest[:i])
		if err != nil {
			return nil, err
		}
		if text {
			s.delays = append(s.delays, recv.Sub(sent))
		}
		rest = rest[i+2:]
	}
	return append(pending[:0], rest...), nil
}

// eventStamp reads the send time stamped in one SSE event (without its
// blank line): text reports whether the event is a text delta, an Anthropic
// text_delta or a Chat Completions content delta; a text delta without a
// stamp is an error (the stream was not stamped, or its text was changed).
func eventStamp(ev []byte) (sent time.Time, text bool, err error) {
	var data []byte
	for line := range bytes.SplitSeq(ev, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
		}
	}
	if len(data) == 0 || string(data) == "[DONE]" {
		return time.Time{}, false, nil
	}
	var v struct {
		Type  string `json:"type"`
		Delta struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"delta"`
		Choices []struct {
			Delta struct {
				Content string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return time.Time{}, false, fmt.Errorf("event data is not JSON: %v: %.200s", err, data)
	}
	var t string
	switch {
	case v.Type == "content_block_delta" && v.Delta.Type == "text_delta":
		t = v.Delta.Text
	case len(v.Choices) > 0 && v.Choices[0].Delta.Content != "":
		t = v.Choices[0].Delta.Content
	default:
		return time.Time{}, false, nil
	}
	sent, ok := mock.ParseStamp(t)
	if !ok {
		return time.Time{}, true, fmt.Errorf("text delta without a send-time stamp: %q", t)
	}
	return sent, true, nil
}

// --- report -------------------------------------------------------------------

// openloopColumns is the header of load.sh's openloop.tsv; stream-only
// columns hold "-" for JSON workloads.
var openloopColumns = []string{"workload", "target", "rate", "sent", "errors", "p50_us", "p90_us", "p99_us",
	"p999_us", "max_us", "ttfb_p50_us", "ttfb_p99_us", "gap_p50_us", "gap_p99_us"}

type openloopRow struct {
	workload, target string
	v                []float64 // openloopColumns[2:], NaN when absent
}

func (r openloopRow) get(col string) float64 {
	i := slices.Index(openloopColumns, col) - 2
	if i < 0 || i >= len(r.v) { // a missing reference row
		return math.NaN()
	}
	return r.v[i]
}

func readOpenloop(path string) ([]openloopRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var out []openloopRow
	seen := map[[2]string]bool{}
	for line := 1; sc.Scan(); line++ {
		fields := strings.Split(sc.Text(), "\t")
		if line == 1 {
			if !slices.Equal(fields, openloopColumns) {
				return nil, fmt.Errorf("%s: header %q, want %q", path, fields, openloopColumns)
			}
			continue
		}
		if len(fields) != len(openloopColumns) {
			return nil, fmt.Errorf("%s:%d: %d fields, want %d", path, line, len(fields), len(openloopColumns))
		}
		r := openloopRow{workload: fields[0], target: fields[1]}
		for i, s := range fields[2:] {
			v := math.NaN()
			if s != "-" && s != "" {
				if v, err = strconv.ParseFloat(s, 64); err != nil {
					return nil, fmt.Errorf("%s:%d: column %s: %v", path, line, openloopColumns[i+2], err)
				}
			}
			r.v = append(r.v, v)
		}
		k := [2]string{r.workload, r.target}
		if seen[k] {
			return nil, fmt.Errorf("%s:%d: second row for %s → %s", path, line, r.workload, r.target)
		}
		seen[k] = true
		out = append(out, r)
	}
	return out, sc.Err()
}

func cmdOpenloopReport(args []string, w io.Writer) error {
	if len(args) != 1 {
		usage()
	}
	rows, err := readOpenloop(args[0])
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return errors.New("openloop-report: no results")
	}
	var workloads, targets []string
	byKey := map[[2]string]openloopRow{}
	for _, r := range rows {
		if !slices.Contains(workloads, r.workload) {
			workloads = append(workloads, r.workload)
		}
		if !slices.Contains(targets, r.target) {
			targets = append(targets, r.target)
		}
		byKey[[2]string{r.workload, r.target}] = r
	}
	slices.SortStableFunc(targets, func(a, b string) int { return targetRank(a) - targetRank(b) })

	// added: target − reference in µs; "–" for the reference itself or
	// when either is missing.
	added := func(r, ref openloopRow, ok bool, col string) string {
		a, b := r.get(col), ref.get(col)
		if !ok || a != a || b != b {
			return "–"
		}
		return fmt.Sprintf("%+.0f", a-b)
	}
	rat := func(r, ref openloopRow, ok bool, col string) string {
		return ratio(r.get(col), ref.get(col), ok && r.get(col) == r.get(col) && ref.get(col) == ref.get(col))
	}
	num := func(v float64) string {
		if v != v {
			return "–"
		}
		return strconv.FormatFloat(v, 'f', 0, 64)
	}

	fmt.Fprintln(w, "| workload | target | rate/s | requests | errors | p50 µs | p99 µs | added p50 µs | added p99 µs | p50 ÷ direct | p99 ÷ direct | p50 ÷ nginx | p99 ÷ nginx |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	var streams []string
	for _, wl := range workloads {
		d, hasD := byKey[[2]string{wl, "direct"}]
		n, hasN := byKey[[2]string{wl, "nginx"}]
		for _, t := range targets {
			r, ok := byKey[[2]string{wl, t}]
			if !ok {
				continue
			}
			if r.get("ttfb_p50_us") == r.get("ttfb_p50_us") && !slices.Contains(streams, wl) {
				streams = append(streams, wl)
			}
			vsD, vsN := hasD && t != "direct", hasN && t != "direct" && t != "nginx"
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", wl, t,
				strconv.FormatFloat(r.get("rate"), 'f', -1, 64), num(r.get("sent")), num(r.get("errors")),
				num(r.get("p50_us")), num(r.get("p99_us")),
				added(r, d, vsD, "p50_us"), added(r, d, vsD, "p99_us"),
				rat(r, d, vsD, "p50_us"), rat(r, d, vsD, "p99_us"), rat(r, n, vsN, "p50_us"), rat(r, n, vsN, "p99_us"))
		}
	}
	if len(streams) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| workload | target | TTFB p50 µs | TTFB p99 µs | added TTFB p50 µs | added TTFB p99 µs | event gap p50 µs | event gap p99 µs |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|")
	for _, wl := range streams {
		d, hasD := byKey[[2]string{wl, "direct"}]
		for _, t := range targets {
			r, ok := byKey[[2]string{wl, t}]
			if !ok {
				continue
			}
			vsD := hasD && t != "direct"
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", wl, t,
				num(r.get("ttfb_p50_us")), num(r.get("ttfb_p99_us")),
				added(r, d, vsD, "ttfb_p50_us"), added(r, d, vsD, "ttfb_p99_us"),
				num(r.get("gap_p50_us")), num(r.get("gap_p99_us")))
		}
	}
	return nil
}
