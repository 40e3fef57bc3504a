package logging

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/config"
)

// libraryLogger adapts a library's Printf-style logger to a redacting zap
// logger. Arguments are rendered before formatting so that no raw bytes
// reach the line: errors, strings and byte slices have their quoted content
// masked (fasthttp and go-redis quote the request or response bytes they
// failed on), and the formatted line then has its credentials masked.
type libraryLogger struct {
	log   *zap.Logger
	level zap.AtomicLevel
}

func (l libraryLogger) printf(format string, args ...any) {
	if !l.log.Core().Enabled(l.level.Level()) {
		return
	}
	safe := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case error:
			safe[i] = RedactError(v)
		case string:
			safe[i] = config.MaskQuoted(v)
		case []byte:
			safe[i] = config.MaskQuoted(string(v))
		case fmt.Stringer:
			safe[i] = config.MaskQuoted(safeSprint(v))
		default:
			safe[i] = v
		}
	}
	msg := fmt.Sprintf(format, safe...)
	if ce := l.log.Check(l.level.Level(), msg); ce != nil {
		ce.Write()
	}
}

// FastHTTP returns a fasthttp.Logger (Server.Logger, PipelineClient.Logger)
// that writes through Redacting(log) at warn level. fasthttp logs
// connection-level failures there (header parse errors, accept errors);
// their raw request bytes never reach the line.
func FastHTTP(log *zap.Logger) fasthttp.Logger {
	return fasthttpLogger{libraryLogger{log: Redacting(log), level: zap.NewAtomicLevelAt(zap.WarnLevel)}}
}

type fasthttpLogger struct{ l libraryLogger }

func (f fasthttpLogger) Printf(format string, args ...any) { f.l.printf(format, args...) }

// Redis returns a go-redis logger (for redis.SetLogger) that writes through
// Redacting(log) at warn level: dial failures, pool notices.
func Redis(log *zap.Logger) RedisLogger {
	return RedisLogger{libraryLogger{log: Redacting(log), level: zap.NewAtomicLevelAt(zap.WarnLevel)}}
}

// RedisLogger is go-redis's logger interface implemented over zap.
type RedisLogger struct{ l libraryLogger }

// Printf implements go-redis's internal.Logging.
func (r RedisLogger) Printf(_ context.Context, format string, v ...any) { r.l.printf(format, v...) }

// RouteLibraries points the process-wide loggers of the libraries shepherd
// runs at log: go-redis's (which only offers a process-wide logger). The
// fasthttp servers and clients take theirs per instance (FastHTTP). Call
// it once at start-up, before any store is opened.
func RouteLibraries(log *zap.Logger) {
	redis.SetLogger(Redis(log.Named("redis")))
}
