package main

// History size: agent sessions that resend their whole history every turn,
// each request the previous body plus one tool round trip (the shape the
// proxy's per-session memos are built for; wrk's one fixed body is not),
// first at a fixed rate (open loop: added latency), then closed loop
// (throughput). One HISTORY line per run.
//
//	benchtool history -size 1m [-growth 16] [-sessions 4] -rate R -duration D -warmup W
//	                  [-connections C -closed-duration D] [-headers FILE] URL

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shepherd-proxy/shepherd/bench/workload"
)

// historySeq hands out the requests of agent sessions from slots session
// slots: slot s's j-th request belongs to session
// "<prefix>-<s>-<g>", g = j div L (L = the bodies per variant), and is body
// j mod L of variant (s + slots·g) mod len(variants). Each session sends the
// base history (cold: the proxy has not seen it) and then L-1 requests that
// each extend the one before, then the slot starts a new session, as
// another agent (the next variant, which shares only the system prompt and
// tools with the others).
type historySeq struct {
	variants [][][]byte // [variant][k]
	slots    int
	prefix   string
}

func (h historySeq) request(slot, j int) (body []byte, session string, cold bool) {
	n := len(h.variants[0])
	gen, k := j/n, j%n
	v := (slot + h.slots*gen) % len(h.variants)
	return h.variants[v][k], h.prefix + "-" + strconv.Itoa(slot) + "-" + strconv.Itoa(gen), k == 0
}

// openPick spreads open-loop request i over the slots in turn.
func (h historySeq) openPick() func(i int) ([]byte, string, bool) {
	return func(i int) ([]byte, string, bool) { return h.request(i%h.slots, i/h.slots) }
}

// closedStats is the outcome of a closed-loop run: every completed request
// in the measured window counts toward rps (cold ones too, one in
// len(bodies): a fleet of agents sends them); lat holds the latencies of
// the warm ones, sorted.
type closedStats struct {
	connections    int
	requests, errs int
	rps            float64
	lat            []time.Duration
	firstErr       error
}

// runClosed runs connections workers, each one session slot sending its
// requests back to back, for warmup + duration; requests that complete
// inside the last duration are measured.
func runClosed(url string, headers [][2]string, seq historySeq, connections int, warmup, duration time.Duration) *closedStats {
	tr := &http.Transport{MaxIdleConnsPerHost: connections + 1, DisableCompression: true, IdleConnTimeout: 90 * time.Second}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: lateLimit}
	start := time.Now()
	from, until := start.Add(warmup), start.Add(warmup+duration)
	st := &closedStats{connections: connections}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range connections {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; time.Now().Before(until); j++ {
				body, session, cold := seq.request(w, j)
				t0 := time.Now()
				err := post(client, url, headers, body, session)
				end := time.Now()
				if end.Before(from) || end.After(until) {
					continue
				}
				mu.Lock()
				st.requests++
				switch {
				case err != nil:
					st.errs++
					if st.firstErr == nil {
						st.firstErr = err
					}
				case !cold:
					st.lat = append(st.lat, end.Sub(t0))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	st.rps = float64(st.requests-st.errs) / duration.Seconds()
	slices.Sort(st.lat)
	return st
}

// post sends one JSON request and reads the reply to its end; a status
// other than 200 is an error.
func post(client *http.Client, url string, headers [][2]string, body []byte, session string) error {
	ctx, cancel := context.WithTimeout(context.Background(), lateLimit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Session-Id", session)
	for _, h := range headers {
		req.Header.Set(h[0], h[1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

func cmdHistory(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("history", flag.ExitOnError)
	sizeFlag := fs.String("size", "", "history size of each session's first request, e.g. 50k or 1m (binary units; required)")
	growth := fs.Int("growth", 16, "requests per session after its first, each one tool round trip longer")
	sessions := fs.Int("sessions", 4, "open loop: concurrent sessions the requests go to in turn")
	rate := fs.Float64("rate", 50, "open loop: requests per second (fixed schedule)")
	duration := fs.Duration("duration", 5*time.Second, "open loop: measured time")
	warmup := fs.Duration("warmup", time.Second, "unmeasured time before each loop")
	connections := fs.Int("connections", 0, "closed loop after the open loop: workers (one session slot each) sending back to back; 0 skips it")
	closedDuration := fs.Duration("closed-duration", 3*time.Second, "closed loop: measured time")
	headersFile := fs.String("headers", "", `request headers, "Name: value" lines; default the Anthropic headers`)
	_ = fs.Parse(args)
	if fs.NArg() != 1 || *sizeFlag == "" {
		usage()
	}
	size, err := workload.ParseSize(*sizeFlag)
	if err != nil {
		return err
	}
	if *growth < 1 || *sessions < 1 || !(*rate > 0) || *duration <= 0 || *warmup < 0 || *connections < 0 || *closedDuration <= 0 {
		return fmt.Errorf("history: need -growth >= 1, -sessions >= 1, -rate > 0, -duration > 0, -warmup >= 0, -connections >= 0, -closed-duration > 0")
	}
	headers := workload.Headers
	if *headersFile != "" {
		if headers, err = readHeaders(*headersFile); err != nil {
			return err
		}
	}
	turns := workload.HistoryTurns(size)
	// Twice as many agents as concurrent sessions: a slot's next session is
	// another agent's, and an agent comes back only after the proxy has seen
	// 2×slots other sessions.
	seq := historySeq{variants: workload.AgentHistoryVariants(turns, *growth, 2*max(*sessions, *connections))}
	// Session ids unique to this run, so a proxy never sees a session
	// continue with bodies from another run.
	nonce := strconv.FormatInt(time.Now().UnixNano(), 36)
	seq.prefix, seq.slots = "history-"+*sizeFlag+"-"+nonce+"-open", *sessions
	url := fs.Arg(0)
	st, err := runOpenloop(openloopConfig{url: url, headers: headers, rate: *rate, duration: *duration, warmup: *warmup,
		limit: lateLimit, pick: seq.openPick(), serial: *sessions})
	if err != nil {
		return err
	}
	if st.firstErr != nil {
		fmt.Fprintf(os.Stderr, "benchtool history: open loop: %d errors, first: %v\n", st.errors, st.firstErr)
	}
	var cl *closedStats
	if *connections > 0 {
		seq.prefix, seq.slots = "history-"+*sizeFlag+"-"+nonce+"-closed", *connections
		cl = runClosed(url, headers, seq, *connections, *warmup, *closedDuration)
		if cl.firstErr != nil {
			fmt.Fprintf(os.Stderr, "benchtool history: closed loop: %d errors, first: %v\n", cl.errs, cl.firstErr)
		}
	}
	fmt.Fprintln(w, historyLine(*sizeFlag, len(seq.variants[0][0]), turns, *growth, *sessions, st, cl))
	return nil
}

// historyLine is the machine-readable HISTORY line: the size, the base
// body's bytes and round trips, the open loop's rate, counts and warm
// latency percentiles (µs), the cold requests' count and p50 ("-" when
// none was measured), and, after a closed loop, its connections, requests,
// errors, rps and warm p50/p99.
func historyLine(size string, bytes, turns, growth, sessions int, st *openloopStats, cl *closedStats) string {
	var b strings.Builder
	coldP50 := "-" // no session started in the measured window
	if len(st.cold) > 0 {
		coldP50 = strconv.FormatInt(us(percentile(st.cold, 50)), 10)
	}
	fmt.Fprintf(&b, "HISTORY size=%s bytes=%d turns=%d growth=%d sessions=%d rate=%g sent=%d errors=%d "+
		"p50_us=%d p90_us=%d p99_us=%d p999_us=%d max_us=%d cold=%d cold_p50_us=%s lag_p50_us=%d",
		size, bytes, turns, growth, sessions, st.rate, st.sent, st.errors,
		us(percentile(st.lat, 50)), us(percentile(st.lat, 90)), us(percentile(st.lat, 99)), us(percentile(st.lat, 99.9)),
		us(percentile(st.lat, 100)), len(st.cold), coldP50, us(percentile(st.lag, 50)))
	if cl != nil {
		fmt.Fprintf(&b, " connections=%d closed_requests=%d closed_errors=%d rps=%.1f closed_p50_us=%d closed_p99_us=%d",
			cl.connections, cl.requests, cl.errs, cl.rps, us(percentile(cl.lat, 50)), us(percentile(cl.lat, 99)))
	}
	return b.String()
}
