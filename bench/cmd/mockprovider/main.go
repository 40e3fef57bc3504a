// Command mockprovider runs the scripted mock LLM provider (package
// shepherd/bench/mock) as a standalone server for load scripts. Every model
// request gets the same reply, shaped by the flags, in the wire format of the
// path it arrives on (Anthropic, OpenAI Chat, OpenAI Responses, Gemini).
package main

import (
	"flag"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

func main() {
	addr, opts, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		os.Exit(2) // the flag package has printed the error and the usage
	}
	srv := mock.New(opts)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatalf("mockprovider: %v", err)
	}
	log.Printf("mockprovider: listening on http://%s", ln.Addr())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case s := <-sig:
		log.Printf("mockprovider: %v, shutting down", s)
		srv.Close()
	case err := <-errc:
		if err != nil {
			log.Fatalf("mockprovider: %v", err)
		}
	}
}

// parseFlags turns the command line into the listen address and the mock's
// options; errors and usage go to out.
func parseFlags(args []string, out io.Writer) (string, mock.Options, error) {
	fs := flag.NewFlagSet("mockprovider", flag.ContinueOnError)
	fs.SetOutput(out)
	addr := fs.String("addr", "127.0.0.1:9100", "listen address")
	ttft := fs.Duration("ttft", 0, "delay before the first byte of a reply / first stream event")
	delay := fs.Duration("delay", 0, "delay between stream events")
	headerDelay := fs.Duration("header-delay", 0, "delay before response headers")
	chunk := fs.Int("chunk", 16, "characters of text per stream delta")
	pad := fs.Int("pad", 0, "generate this many bytes of lorem text per reply (when -text is empty)")
	text := fs.String("text", "", "reply text (default \"ok\" unless -pad or -tools is set)")
	tools := fs.Int("tools", 0, "tool calls in every reply")
	stamp := fs.Bool("stamp", false, "replace the text of every streamed text delta (Anthropic, Chat) with its send time: "+
		"Unix nanoseconds, 19 digits, space-padded to -chunk; use with -delay so that each event is flushed on its own")
	hold := fs.Duration("hold", 0, "hold each stream open this long after its first event")
	ping := fs.Duration("ping", 0, "keep-alive interval while holding a stream")
	holdAfter := fs.Int("hold-after", 1, "events a held stream sends before the hold")
	noRecord := fs.Bool("no-record", true, "do not record requests")
	if err := fs.Parse(args); err != nil {
		return "", mock.Options{}, err
	}
	def := mock.Reply{Text: *text}
	if *tools > 0 {
		def.ToolCalls = mock.NumberedToolCalls(*tools)
	}
	return *addr, mock.Options{
		Default:         def,
		TTFT:            *ttft,
		InterEventDelay: *delay,
		HeaderDelay:     *headerDelay,
		ChunkSize:       *chunk,
		PadText:         *pad,
		StampText:       *stamp,
		Hold:            *hold,
		HoldAfter:       *holdAfter,
		PingEvery:       *ping,
		NoRecord:        *noRecord,
	}, nil
}
