package jsonkit

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Value appenders for hand-written encoders that must write what
// encoding/json writes for a value of the same Go type (the live feed's
// events, the session record, the turn engine's prefix slot). A value
// JSON cannot hold is an error, as with encoding/json; dst is then
// unspecified.

// AppendTime appends t as time.Time's MarshalJSON does (RFC 3339 with
// nanoseconds, quoted).
func AppendTime(dst []byte, t time.Time) ([]byte, error) {
	if y := t.Year(); y < 0 || y >= 10000 {
		return dst, fmt.Errorf("jsonkit: time %v out of JSON's range", t)
	}
	dst = append(dst, '"')
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	return append(dst, '"'), nil
}

// AppendFloat appends f, a float of bits bits (32 or 64), as encoding/json
// does: the shortest representation, in exponent form below 1e-6 and from
// 1e21 on, with a two-digit exponent shortened (e-09 is e-9).
func AppendFloat(dst []byte, f float64, bits int) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, fmt.Errorf("jsonkit: unsupported float value %v", f)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21)) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, bits)
	if format == 'e' {
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}
