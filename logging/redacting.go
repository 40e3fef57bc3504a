// Package logging is the one path by which shepherd and the libraries it
// runs (fasthttp's server and client, go-redis) write log lines. Every line
// passes a redacting zap core: credentials are masked with
// config.RedactText wherever a message or field quotes them, and error
// texts additionally lose the raw request or response bytes libraries quote
// in them (config.MaskQuoted).
package logging

import (
	"fmt"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/shepherd-proxy/shepherd/config"
)

// Redacting returns l with a redacting core: every entry's message and
// fields go through config.RedactText before l's core encodes them; error
// fields (zap.Error) are written as their text with quoted content masked
// (config.MaskQuoted); byte strings, Stringers, reflected values and
// marshaled objects are written as redacted strings. Numbers, booleans,
// durations and times pass unchanged. Wrapping twice is a no-op; nil gives
// a no-op logger.
func Redacting(l *zap.Logger) *zap.Logger {
	if l == nil {
		return zap.NewNop()
	}
	if _, ok := l.Core().(redactingCore); ok {
		return l
	}
	return l.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return redactingCore{c} }))
}

type redactingCore struct{ zapcore.Core }

func (c redactingCore) With(fields []zapcore.Field) zapcore.Core {
	return redactingCore{c.Core.With(redactFields(fields))}
}

// Check lets the wrapped core decide (its level, and its sampling when it
// samples, as zap's production logger does) and routes the write through c.
func (c redactingCore) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if !c.Enabled(ent.Level) || c.Core.Check(ent, nil) == nil {
		return ce
	}
	return ce.AddCore(ent, c)
}

func (c redactingCore) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	ent.Message = config.RedactText(ent.Message)
	return c.Core.Write(ent, redactFields(fields))
}

// redactFields returns fields with every text redacted; it copies the
// slice when it changes anything.
func redactFields(fields []zapcore.Field) []zapcore.Field {
	out := fields
	copied := false
	for i, f := range fields {
		r, changed := redactField(f)
		if !changed {
			continue
		}
		if !copied {
			out = append([]zapcore.Field(nil), fields...)
			copied = true
		}
		out[i] = r
	}
	return out
}

func redactField(f zapcore.Field) (zapcore.Field, bool) {
	switch f.Type {
	case zapcore.StringType:
		r := config.RedactText(f.String)
		return zap.String(f.Key, r), r != f.String
	case zapcore.ByteStringType, zapcore.BinaryType:
		b, _ := f.Interface.([]byte)
		return zap.String(f.Key, config.RedactText(string(b))), true
	case zapcore.ErrorType:
		err, _ := f.Interface.(error)
		if err == nil {
			return f, false
		}
		return zap.String(f.Key, RedactError(err)), true
	case zapcore.StringerType, zapcore.ReflectType:
		return zap.String(f.Key, config.RedactText(safeSprint(f.Interface))), true
	case zapcore.ObjectMarshalerType, zapcore.ArrayMarshalerType, zapcore.InlineMarshalerType:
		enc := zapcore.NewMapObjectEncoder()
		f.AddTo(enc)
		return zap.String(f.Key, config.RedactText(fmt.Sprint(enc.Fields))), true
	}
	return f, false
}

// RedactError renders err for a log line or a client-visible detail:
// quoted raw input masked, then credentials masked.
func RedactError(err error) string {
	if err == nil {
		return ""
	}
	return config.RedactText(config.MaskQuoted(safeSprint(err)))
}

// safeSprint formats v with %v; a panicking String or Error method (a nil
// pointer receiver) yields a placeholder instead of a crash.
func safeSprint(v any) (s string) {
	defer func() {
		if r := recover(); r != nil {
			s = "<unprintable>"
		}
	}()
	return fmt.Sprint(v)
}
