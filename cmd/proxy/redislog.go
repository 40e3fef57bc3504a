package main

import (
	"context"
	"fmt"

	"go.uber.org/zap"
)

// redisLogger routes go-redis's own log lines (dial failures, pool notices)
// through zap at warn level instead of the standard logger. go-redis only
// offers a process-wide logger, which is why this is set in main.
type redisLogger struct{ log *zap.Logger }

func (l redisLogger) Printf(_ context.Context, format string, v ...any) {
	l.log.Warn(fmt.Sprintf(format, v...))
}
