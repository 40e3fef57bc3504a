package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/shepherd-proxy/shepherd/hooks"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
)

// LoadOptions says where Load reads configuration from. Precedence, highest
// first: Overrides, Env, File, Defaults.
type LoadOptions struct {
	// File is a YAML configuration file; "" reads none. A named file that
	// does not exist is an error.
	File string
	// Env is the environment in os.Environ form ("KEY=value"). nil means
	// os.Environ(); pass an empty non-nil slice to read no environment.
	//
	// Each key is read from EnvName(key), e.g. SHEPHERD_STATE_REDIS_URL. A
	// variable that is set counts even when empty (SHEPHERD_ADMIN_LISTEN=
	// selects the "" sentinel). List keys are comma-separated with blanks
	// trimmed and empty items dropped (SHEPHERD_STATE_REDIS_ADDRS=a:1,b:2);
	// durations are Go durations ("200ms"). SHEPHERD_* variables that name
	// no key are ignored, not rejected, so unrelated tooling may share the
	// prefix. When a variable appears twice the last one wins.
	Env []string
	// Overrides are values from command-line flags, by key (e.g. "listen").
	// Values may be of the field's type or, for any key, a string in the
	// environment variable syntax. nil values are skipped; an unknown key
	// is an error.
	Overrides map[string]any
}

// Load builds the configuration from Defaults, the file, the environment and
// the overrides, rejects keys that do not exist and values of the wrong
// type, and returns the result only if it passes Validate. Every error names
// the key (and the environment variable, where one is at fault).
func Load(opts LoadOptions) (*Config, error) {
	v := viper.New() // never the global instance: Load must be repeatable and side-effect free
	setDefaults(v)

	if opts.File != "" {
		if err := readFile(v, opts.File); err != nil {
			return nil, err
		}
	}

	env := opts.Env
	if env == nil {
		env = os.Environ()
	}
	if err := applyEnv(v, env); err != nil {
		return nil, err
	}
	if err := applyOverrides(v, opts.Overrides); err != nil {
		return nil, err
	}

	var c Config
	if err := v.UnmarshalExact(&c, decoderConfig); err != nil {
		return nil, decodeError(err)
	}
	normalize(&c)
	if err := c.mapDeprecated(); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// setDefaults registers every field of Defaults() under its key. Registering
// every key also makes each one known to viper even when no file mentions it.
func setDefaults(v *viper.Viper) {
	d := reflect.ValueOf(Defaults())
	for _, f := range fields() {
		v.SetDefault(f.key, d.FieldByIndex(f.index).Interface())
	}
}

// readFile merges the YAML file into v and rejects keys Config does not have.
func readFile(v *viper.Viper, path string) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("config: reading file: %w", err)
	}
	v.SetConfigFile(path)
	v.SetConfigType("yaml") // whatever the file's extension
	if err := v.ReadInConfig(); err != nil {
		return fmt.Errorf("config: reading %s: %w", path, err)
	}
	// At this point v holds only defaults (all known) and the file, so any
	// unknown key came from the file. UnmarshalExact would catch it too, but
	// names only the top-level section ("'' has invalid keys: upstream").
	var errs []error
	keys := v.AllKeys()
	sort.Strings(keys)
	for _, k := range keys {
		if _, ok := byKey()[k]; ok || sections()[k] {
			// A section given a scalar is a type error for the decoder.
			continue
		}
		if leaf := leafPrefix(k); leaf != "" {
			errs = append(errs, fmt.Errorf("config: %s (in %s): expected a value, got a mapping", leaf, path))
			continue
		}
		errs = append(errs, fmt.Errorf("config: unknown key %q (in %s)%s", k, path, suggest(k)))
	}
	return errors.Join(errs...)
}

// leafPrefix returns the known leaf key that k is nested under, if any
// (for "listen.port" it is "listen").
func leafPrefix(k string) string {
	for i := strings.LastIndexByte(k, '.'); i > 0; i = strings.LastIndexByte(k[:i], '.') {
		if _, ok := byKey()[k[:i]]; ok {
			return k[:i]
		}
	}
	return ""
}

// suggest returns ` (did you mean "x"?)` for the known key closest to k, if
// it is close enough to be a likely typo.
func suggest(k string) string {
	best, bestDist := "", 4 // farther than 3 edits is not a typo
	for _, f := range fields() {
		if d := editDistance(k, f.key); d < bestDist {
			best, bestDist = f.key, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// applyEnv sets every key whose environment variable is present in env.
// viper's AutomaticEnv is not used: it reads the process environment, not
// env, and Unmarshal only consults it for keys viper already knows. Instead
// every key's variable is looked up explicitly.
func applyEnv(v *viper.Viper, env []string) error {
	vars := make(map[string]string, len(env))
	for _, kv := range env {
		name, val, ok := strings.Cut(kv, "=")
		if ok && strings.HasPrefix(name, EnvPrefix) {
			vars[name] = val // last one wins
		}
	}
	var errs []error
	for _, f := range fields() {
		s, ok := vars[f.env]
		if !ok {
			continue
		}
		val, err := fromString(f.typ, s)
		if err != nil {
			errs = append(errs, fmt.Errorf("config: %s (key %s): %w", f.env, f.key, err))
			continue
		}
		v.Set(f.key, val)
	}
	return errors.Join(errs...)
}

// applyOverrides sets the flag values; they win over everything else.
func applyOverrides(v *viper.Viper, overrides map[string]any) error {
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	for _, k := range keys {
		val := overrides[k]
		if val == nil {
			continue
		}
		f, ok := byKey()[k]
		if !ok {
			errs = append(errs, fmt.Errorf("config: unknown key %q in overrides%s", k, suggest(k)))
			continue
		}
		if s, isString := val.(string); isString && f.typ.Kind() != reflect.String {
			var err error
			if val, err = fromString(f.typ, s); err != nil {
				errs = append(errs, fmt.Errorf("config: override %s: %w", k, err))
				continue
			}
		}
		v.Set(k, val)
	}
	return errors.Join(errs...)
}

// fromString converts an environment or flag string to a value of type t.
func fromString(t reflect.Type, s string) (any, error) {
	if t == durationType {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("%q is not a duration (want e.g. 200ms, 30s, 10m, 24h)", s)
		}
		return d, nil
	}
	switch t.Kind() {
	case reflect.String:
		return reflect.ValueOf(s).Convert(t).Interface(), nil
	case reflect.Slice:
		return splitList(s), nil
	case reflect.Bool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("%q is not a boolean", s)
		}
		return b, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, t.Bits())
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", s)
		}
		return reflect.ValueOf(n).Convert(t).Interface(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(strings.TrimSpace(s), 10, t.Bits())
		if err != nil {
			return nil, fmt.Errorf("%q is not a non-negative integer", s)
		}
		return reflect.ValueOf(n).Convert(t).Interface(), nil
	case reflect.Float32, reflect.Float64:
		n, err := strconv.ParseFloat(strings.TrimSpace(s), t.Bits())
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", s)
		}
		return reflect.ValueOf(n).Convert(t).Interface(), nil
	}
	return nil, fmt.Errorf("cannot set a %s from a string", t) // unreachable: fields() checks convertible
}

// splitList splits a comma-separated list, trimming blanks and dropping
// empty items, so "a:1, b:2," is [a:1 b:2] and "" is empty.
func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// decoderConfig makes decoding strict: viper's default is weakly typed, which
// would turn `max_body_bytes: true` into 1 and `ttl: 60` into 60ns. Strings
// are converted only where a string is the documented syntax: durations and
// comma-separated lists.
func decoderConfig(dc *mapstructure.DecoderConfig) {
	dc.WeaklyTypedInput = false
	dc.ErrorUnused = true
	dc.DecodeHook = mapstructure.ComposeDecodeHookFunc(durationHook, listHook, wholeNumberHook, switchHook)
}

// durationHook decodes durations from Go duration strings only; a bare
// number has no unit and is rejected rather than read as nanoseconds.
func durationHook(from, to reflect.Type, data any) (any, error) {
	if to != durationType || from == durationType {
		return data, nil
	}
	s, ok := data.(string)
	if !ok {
		return nil, fmt.Errorf("want a duration string with a unit such as \"30s\", got %v (%s)", data, from)
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("%q is not a duration (want e.g. 200ms, 30s, 10m, 24h)", s)
	}
	return d, nil
}

// wholeNumberHook rejects a fractional number for an integer key, which
// mapstructure would otherwise truncate (max_sessions: 1.5 → 1). Whole
// floats such as 1e6 are accepted.
func wholeNumberHook(from, to reflect.Type, data any) (any, error) {
	if to == durationType || (from.Kind() != reflect.Float32 && from.Kind() != reflect.Float64) {
		return data, nil
	}
	switch to.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if f := reflect.ValueOf(data).Float(); f != math.Trunc(f) {
			return nil, fmt.Errorf("%v is not a whole number", f)
		}
	}
	return data, nil
}

// switchHook lets a Switch or a hooks.OptIn be written as a YAML boolean.
func switchHook(from, to reflect.Type, data any) (any, error) {
	if to != reflect.TypeFor[Switch]() && to != reflect.TypeFor[hooks.OptIn]() || from.Kind() != reflect.Bool {
		return data, nil
	}
	return strconv.FormatBool(data.(bool)), nil
}

// listHook lets a string list be written as one comma-separated string.
func listHook(from, to reflect.Type, data any) (any, error) {
	if from.Kind() != reflect.String || to.Kind() != reflect.Slice || to.Elem().Kind() != reflect.String {
		return data, nil
	}
	return splitList(reflect.ValueOf(data).String()), nil
}

// decodeError flattens mapstructure's joined errors into one line per key:
// "config: limits.max_body_bytes: expected type 'int', got unconvertible
// type 'string'".
func decodeError(err error) error {
	var lines []string
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, inner := range j.Unwrap() {
				walk(inner)
			}
			return
		}
		// Type assertions, not errors.As: As would jump through a join to
		// its first member and lose the others.
		if de, ok := e.(*mapstructure.DecodeError); ok {
			inner := de.Unwrap()
			_, joined := inner.(interface{ Unwrap() []error })
			if _, nested := inner.(*mapstructure.DecodeError); joined || nested {
				walk(inner)
				return
			}
			name := de.Name()
			if name == "" {
				name = "(top level)"
			}
			lines = append(lines, "config: "+name+": "+inner.Error())
			return
		}
		if u := errors.Unwrap(e); u != nil {
			walk(u)
			return
		}
		lines = append(lines, "config: "+e.Error())
	}
	walk(err)
	sort.Strings(lines)
	return errors.New(strings.Join(lines, "\n"))
}

// normalize makes equal configurations compare equal: empty lists are nil,
// whether they came from `addrs: []`, an empty environment variable or no
// setting at all.
func normalize(c *Config) {
	cv := reflect.ValueOf(c).Elem()
	for _, f := range fields() {
		if fv := cv.FieldByIndex(f.index); f.typ.Kind() == reflect.Slice && fv.Len() == 0 {
			fv.SetZero()
		}
	}
}
