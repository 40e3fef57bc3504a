package mock_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

// Throughput of the mock itself (client included), to know how much of a
// proxy benchmark's budget the mock eats.
func benchmarkMock(b *testing.B, path, body string, pad int) {
	s := mock.New(mock.Options{NoRecord: true, PadText: pad, ChunkSize: 16})
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	url := s.URL() + path
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Post(url, "application/json", strings.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || n == 0 || resp.StatusCode != 200 {
				b.Errorf("%d %d %v", resp.StatusCode, n, err)
				return
			}
		}
	})
}

func BenchmarkAnthropicJSON(b *testing.B) {
	benchmarkMock(b, "/v1/messages", `{"model":"m"}`, 1024)
}

func BenchmarkAnthropicStream(b *testing.B) {
	benchmarkMock(b, "/v1/messages", `{"model":"m","stream":true}`, 1024)
}

func BenchmarkChatStream(b *testing.B) {
	benchmarkMock(b, "/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`, 1024)
}

func BenchmarkResponsesStream(b *testing.B) {
	benchmarkMock(b, "/v1/responses", `{"model":"m","stream":true}`, 1024)
}

func BenchmarkGeminiStream(b *testing.B) {
	benchmarkMock(b, "/v1beta/models/g:streamGenerateContent?alt=sse", `{}`, 1024)
}
