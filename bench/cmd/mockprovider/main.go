// Command mockprovider runs the scripted mock LLM provider (package
// shepherd/bench/mock) as a standalone server for load scripts. Every model
// request gets the same reply, shaped by the flags, in the wire format of the
// path it arrives on (Anthropic, OpenAI Chat, OpenAI Responses, Gemini).
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"

	"shepherd/bench/mock"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9100", "listen address")
	ttft := flag.Duration("ttft", 0, "delay before the first byte of a reply / first stream event")
	delay := flag.Duration("delay", 0, "delay between stream events")
	headerDelay := flag.Duration("header-delay", 0, "delay before response headers")
	chunk := flag.Int("chunk", 16, "characters of text per stream delta")
	pad := flag.Int("pad", 0, "generate this many bytes of lorem text per reply (when -text is empty)")
	text := flag.String("text", "", "reply text (default \"ok\" unless -pad or -tools is set)")
	tools := flag.Int("tools", 0, "tool calls in every reply")
	hold := flag.Duration("hold", 0, "hold each stream open this long after its first event")
	ping := flag.Duration("ping", 0, "keep-alive interval while holding a stream")
	noRecord := flag.Bool("no-record", true, "do not record requests")
	flag.Parse()

	def := mock.Reply{Text: *text}
	for i := range *tools {
		def.ToolCalls = append(def.ToolCalls, mock.ToolCall{
			Name: fmt.Sprintf("tool_%d", i),
			Args: fmt.Sprintf(`{"path":"src/file_%d.go","line":%d}`, i, i+1),
		})
	}
	srv := mock.New(mock.Options{
		Default:         def,
		TTFT:            *ttft,
		InterEventDelay: *delay,
		HeaderDelay:     *headerDelay,
		ChunkSize:       *chunk,
		PadText:         *pad,
		Hold:            *hold,
		PingEvery:       *ping,
		NoRecord:        *noRecord,
	})
	ln, err := net.Listen("tcp", *addr)
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
