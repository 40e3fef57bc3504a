package main

// Memory per open idle stream: N concurrent streaming requests held open
// (the mock holds each stream after its first event, pinging), and the RSS
// of the process under test before and while they are all open.
//
//	benchtool idle -n N [-hold D] [-timeout D] -body FILE [-pid PID] URL
//	benchtool idle-report IDLE.tsv
//
// The client uses raw TCP connections (one goroutine and a 512-byte read
// buffer per stream) rather than net/http, so that 10k streams cost the
// client little; it reads and discards what arrives after the first event
// (pings) so that the proxy's writes never block.

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shepherd-proxy/shepherd/bench/workload"
)

type idleConfig struct {
	url     string // base URL; the requests go to url + path
	path    string // the request path and query (default workload.Path)
	n       int
	body    []byte
	hold    time.Duration // how long all streams stay open once open (RSS sampled meanwhile)
	timeout time.Duration // for all N to receive their first event
	pid     int           // process whose RSS is read; 0: none
	dialers int           // streams being opened at once
}

type idleResult struct {
	n, open, failed    int
	rssBefore, rssOpen int64 // kB; -1 when not measured
	firstErr           error
	limitWarning       string // the measured process may run out of file descriptors
	openedIn, heldFor  time.Duration
	droppedDuringHold  int
}

// perStream is the RSS growth per open stream in kB (NaN when not measured).
func (r idleResult) perStream() float64 {
	if r.rssBefore < 0 || r.rssOpen < 0 || r.open == 0 {
		return math.NaN()
	}
	return float64(r.rssOpen-r.rssBefore) / float64(r.open)
}

// line is the machine-readable IDLE line.
func (r idleResult) line() string {
	kb := func(v int64) string {
		if v < 0 {
			return "-"
		}
		return strconv.FormatInt(v, 10)
	}
	ps := "-"
	if v := r.perStream(); v == v {
		ps = strconv.FormatFloat(v, 'f', 1, 64)
	}
	return fmt.Sprintf("IDLE n=%d open=%d failed=%d rss_before_kb=%s rss_open_kb=%s per_stream_kb=%s",
		r.n, r.open, r.failed, kb(r.rssBefore), kb(r.rssOpen), ps)
}

func cmdIdle(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("idle", flag.ExitOnError)
	n := fs.Int("n", 1000, "concurrent streams to open")
	hold := fs.Duration("hold", 3*time.Second, "keep all streams open this long once open, sampling RSS (peak reported)")
	timeout := fs.Duration("timeout", 60*time.Second, "give up waiting for the first events after")
	bodyFile := fs.String("body", "", "request body file, a streaming request (required)")
	path := fs.String("path", workload.Path, "request path (and query) of the streams: the body's API")
	pid := fs.Int("pid", 0, "process whose VmRSS is measured (0: none)")
	dialers := fs.Int("dialers", 256, "streams being opened at once")
	_ = fs.Parse(args)
	if fs.NArg() != 1 || *bodyFile == "" {
		usage()
	}
	if *n < 1 || *hold < 0 || *timeout <= 0 || *dialers < 1 {
		return errors.New("idle: need -n >= 1, -hold >= 0, -timeout > 0, -dialers >= 1")
	}
	body, err := os.ReadFile(*bodyFile)
	if err != nil {
		return err
	}
	r, err := runIdle(idleConfig{url: fs.Arg(0), path: *path, n: *n, body: body, hold: *hold, timeout: *timeout, pid: *pid, dialers: *dialers})
	if err != nil {
		return err
	}
	if r.limitWarning != "" {
		fmt.Fprintln(os.Stderr, "benchtool idle: warning:", r.limitWarning)
	}
	fmt.Fprintf(os.Stderr, "benchtool idle: %d/%d streams open after %v, held %v (%d dropped meanwhile)\n",
		r.n-r.failed+r.droppedDuringHold, r.n, r.openedIn.Round(time.Millisecond), r.heldFor.Round(time.Millisecond), r.droppedDuringHold)
	if r.firstErr != nil {
		fmt.Fprintf(os.Stderr, "benchtool idle: %d failed, first error: %v\n", r.failed, r.firstErr)
	}
	fmt.Fprintln(w, r.line())
	return nil
}

// raiseNofile raises the soft RLIMIT_NOFILE to the hard limit and returns it.
func raiseNofile() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return 0, err
		}
	}
	return lim.Cur, nil
}

// fdReserve is what the client keeps for itself besides one fd per stream
// (stdio, epoll, /proc reads).
const fdReserve = 32

// readRSS is VmRSS of a process in kB, from /proc/PID/status.
func readRSS(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			return strconv.ParseInt(f[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}

// procNofile is the soft "Max open files" of a process (0 when unknown or
// unlimited).
func procNofile(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/limits")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				v, _ := strconv.ParseUint(f[0], 10, 64)
				return v
			}
		}
	}
	return 0
}

// runIdle opens cfg.n streams, waits for every first event (or the
// timeout), holds them cfg.hold while sampling the RSS of cfg.pid, and
// closes them all.
func runIdle(cfg idleConfig) (idleResult, error) {
	r := idleResult{n: cfg.n, rssBefore: -1, rssOpen: -1}
	nofile, err := raiseNofile()
	if err != nil {
		return r, fmt.Errorf("idle: raising RLIMIT_NOFILE: %w", err)
	}
	if uint64(cfg.n)+fdReserve > nofile {
		return r, fmt.Errorf("idle: -n %d needs about %d open files but this process may open only %d (hard RLIMIT_NOFILE): raise it (ulimit -Hn, as root) or lower -n",
			cfg.n, cfg.n+fdReserve, nofile)
	}
	u, err := url.Parse(cfg.url)
	if err != nil {
		return r, err
	}
	if u.Scheme != "http" {
		return r, fmt.Errorf("idle: %s: only http:// URLs", cfg.url)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	var head bytes.Buffer
	fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n",
		strings.TrimRight(u.Path, "/")+cmp.Or(cfg.path, workload.Path), u.Host, len(cfg.body))
	for _, h := range workload.Headers {
		fmt.Fprintf(&head, "%s: %s\r\n", h[0], h[1])
	}
	if cfg.pid > 0 {
		if lim := procNofile(cfg.pid); lim > 0 && uint64(2*cfg.n)+fdReserve > lim {
			r.limitWarning = fmt.Sprintf("process %d may open at most %d files; a proxy needs about 2 per stream (client + upstream), %d for %d streams: some may fail",
				cfg.pid, lim, 2*cfg.n+fdReserve, cfg.n)
		}
		if r.rssBefore, err = readRSS(cfg.pid); err != nil {
			return r, err
		}
	}
	if cfg.dialers < 1 {
		cfg.dialers = 256
	}

	var (
		conns    = make([]net.Conn, cfg.n)
		openWG   sync.WaitGroup // one per stream: done when open or failed
		readWG   sync.WaitGroup // one per open stream: done when its reader returns
		sem      = make(chan struct{}, cfg.dialers)
		closing  atomic.Bool
		dropped  atomic.Int64 // open streams that ended before we closed them
		errMu    sync.Mutex
		firstErr error
	)
	fail := func(err error) {
		errMu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		errMu.Unlock()
	}
	start := time.Now()
	deadline := start.Add(cfg.timeout)
	openWG.Add(cfg.n)
	for i := range cfg.n {
		go func() {
			sem <- struct{}{}
			c, err := openStream(addr, head.Bytes(), i, cfg.body, deadline)
			<-sem
			if err != nil {
				fail(fmt.Errorf("stream %d: %w", i, err))
				openWG.Done()
				return
			}
			conns[i] = c
			readWG.Add(1) // before openWG.Done, so readWG.Wait sees it
			openWG.Done()
			defer readWG.Done()
			buf := make([]byte, 512)
			for {
				if _, err := c.Read(buf); err != nil {
					if !closing.Load() {
						dropped.Add(1)
						if err == io.EOF {
							err = errors.New("stream ended while held open (mock -hold too short?)")
						}
						fail(fmt.Errorf("stream %d: %w", i, err))
					}
					return
				}
			}
		}()
	}
	openWG.Wait()
	r.openedIn = time.Since(start)

	// Hold: sample the RSS, keep the peak.
	sample := func() {
		if cfg.pid <= 0 {
			return
		}
		if v, err := readRSS(cfg.pid); err == nil && v > r.rssOpen {
			r.rssOpen = v
		} else if err != nil {
			fail(fmt.Errorf("reading RSS: %w", err))
		}
	}
	holdStart := time.Now()
	sample()
	for time.Since(holdStart) < cfg.hold {
		time.Sleep(min(250*time.Millisecond, cfg.hold-time.Since(holdStart)))
		sample()
	}
	r.heldFor = time.Since(holdStart)

	opened := 0
	for _, c := range conns {
		if c != nil {
			opened++
		}
	}
	r.droppedDuringHold = int(dropped.Load())
	r.open = opened - r.droppedDuringHold
	r.failed = cfg.n - r.open

	closing.Store(true)
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
	readWG.Wait()
	r.firstErr = firstErr
	return r, nil
}

// openStream dials, sends one streaming request and reads until the first
// SSE event of a 200 reply has arrived; the connection's deadline is
// cleared on success.
func openStream(addr string, head []byte, i int, body []byte, deadline time.Time) (net.Conn, error) {
	d := net.Dialer{Deadline: deadline}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			c.Close()
		}
	}()
	c.SetDeadline(deadline)
	req := make([]byte, 0, len(head)+len(body)+64)
	req = append(req, head...)
	req = fmt.Appendf(req, "X-Session-Id: idle-%d\r\n\r\n", i)
	req = append(req, body...)
	if _, err := c.Write(req); err != nil {
		return nil, err
	}
	if err := awaitFirstEvent(c); err != nil {
		return nil, err
	}
	c.SetDeadline(time.Time{})
	ok = true
	return c, nil
}

// awaitFirstEvent reads a response head and body bytes until the first
// SSE event terminator ("\n\n", or "\r\n\r\n" from an upstream that frames
// its events with CRLF, as Gemini's does) after the head. The status must
// be 200.
func awaitFirstEvent(r io.Reader) error {
	buf := make([]byte, 0, 4096)
	tmp := make([]byte, 2048)
	headEnd := -1
	for {
		k, err := r.Read(tmp)
		buf = append(buf, tmp[:k]...)
		if headEnd < 0 {
			if i := bytes.Index(buf, []byte("\r\n\r\n")); i >= 0 {
				headEnd = i + 4
				status, _, _ := strings.Cut(string(buf[:i]), "\r\n")
				if f := strings.Fields(status); len(f) < 2 || f[1] != "200" {
					return fmt.Errorf("status %q: %.200s", status, buf[headEnd:])
				}
			}
		}
		if headEnd >= 0 && (bytes.Contains(buf[headEnd:], []byte("\n\n")) || bytes.Contains(buf[headEnd:], []byte("\r\n\r\n"))) {
			return nil
		}
		if err != nil {
			if err == io.EOF {
				return errors.New("connection closed before the first event")
			}
			return err
		}
		if len(buf) > 64<<10 {
			return errors.New("no event in the first 64 KB")
		}
	}
}

// --- report -------------------------------------------------------------------

// idleColumns is the header of load.sh's idle.tsv; "-" marks a value not
// measured.
var idleColumns = []string{"target", "streams", "open", "failed", "rss_before_kb", "rss_open_kb", "per_stream_kb"}

func cmdIdleReport(args []string, w io.Writer) error {
	if len(args) != 1 {
		usage()
	}
	f, err := os.Open(args[0])
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	rows := 0
	for line := 1; sc.Scan(); line++ {
		fields := strings.Split(sc.Text(), "\t")
		if line == 1 {
			if !slices.Equal(fields, idleColumns) {
				return fmt.Errorf("%s: header %q, want %q", args[0], fields, idleColumns)
			}
			fmt.Fprintln(w, "| target | streams | open | failed | RSS before MB | RSS open MB | KB per stream |")
			fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|")
			continue
		}
		if len(fields) != len(idleColumns) {
			return fmt.Errorf("%s:%d: %d fields, want %d", args[0], line, len(fields), len(idleColumns))
		}
		v := make([]float64, len(fields)-1)
		for i, s := range fields[1:] {
			v[i] = math.NaN()
			if s != "-" && s != "" {
				if v[i], err = strconv.ParseFloat(s, 64); err != nil {
					return fmt.Errorf("%s:%d: column %s: %v", args[0], line, idleColumns[i+1], err)
				}
			}
		}
		num := func(x float64, scale float64, prec int) string {
			if x != x {
				return "–"
			}
			return strconv.FormatFloat(x/scale, 'f', prec, 64)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", fields[0],
			num(v[0], 1, 0), num(v[1], 1, 0), num(v[2], 1, 0), num(v[3], 1024, 1), num(v[4], 1024, 1), num(v[5], 1, 1))
		rows++
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if rows == 0 {
		return errors.New("idle-report: no results")
	}
	return nil
}
