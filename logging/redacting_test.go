package logging

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

const secret = "SENTINELlogging0001"

func bufferLogger(buf *bytes.Buffer) *zap.Logger {
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(buf), zapcore.DebugLevel))
}

type leaky struct{}

func (leaky) String() string { return "Authorization: Bearer " + secret }

// TestRedactingMasksEveryFieldKind: message, string, byte string, error,
// Stringer, reflected value and With fields all lose the credential; the
// rest of each line stays readable.
func TestRedactingMasksEveryFieldKind(t *testing.T) {
	var buf bytes.Buffer
	log := Redacting(bufferLogger(&buf)).With(zap.String("url", "https://h/p?key="+secret))
	log.Debug("x-api-key: "+secret,
		zap.String("s", "?key="+secret),
		zap.ByteString("b", []byte("x-goog-api-key: "+secret)),
		zap.Error(fmt.Errorf("wrapped: %w", errors.New(`invalid header value "`+secret+`"`))),
		zap.Stringer("st", leaky{}),
		zap.Any("any", map[string]string{"authorization": "Bearer " + secret}),
		zap.Int("n", 7))
	out := buf.String()
	if strings.Contains(out, secret) {
		t.Fatalf("secret in log line: %s", out)
	}
	for _, want := range []string{`"n":7`, `invalid header value \"***\"`, `key=***`} {
		if !strings.Contains(out, want) {
			t.Errorf("log line lacks %s: %s", want, out)
		}
	}
	if Redacting(log) != log {
		t.Error("wrapping twice adds a second core")
	}
}

// TestLibraryLoggersMaskRawBytes: fasthttp's and go-redis's Printf lines
// lose the quoted raw request and any credential.
func TestLibraryLoggersMaskRawBytes(t *testing.T) {
	var buf bytes.Buffer
	log := bufferLogger(&buf)
	raw := []byte("POST /v1/messages?key=" + secret + " HTTP/1.1\r\nX-Api-Key: " + secret + "\r\n\r\n")
	FastHTTP(log).Printf("error when serving connection %q<->%q: %v", "a", "b",
		fmt.Errorf("error when reading request headers: contents: %q", raw))
	Redis(log).Printf(context.Background(), "redis: dial redis://u:%s@h:6379 failed: %s", secret, raw)
	out := buf.String()
	if strings.Contains(out, secret) {
		t.Fatalf("secret in log line: %s", out)
	}
	if !strings.Contains(out, "error when serving connection") || strings.Count(out, "\n") != 2 {
		t.Fatalf("library lines missing: %s", out)
	}
}

// TestRedactingKeepsSampling: a sampling core under the redacting one still
// drops the entries it samples out.
func TestRedactingKeepsSampling(t *testing.T) {
	var buf bytes.Buffer
	base := bufferLogger(&buf).WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewSamplerWithOptions(c, time.Minute, 2, 0)
	}))
	log := Redacting(base)
	for range 10 {
		log.Info("same message")
	}
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Fatalf("%d lines written, want 2 (sampled): %s", n, buf.String())
	}
}
