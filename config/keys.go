package config

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"
)

// EnvPrefix prefixes every environment variable that sets a key: key
// state.redis.url is read from SHEPHERD_STATE_REDIS_URL. See EnvName.
const EnvPrefix = "SHEPHERD_"

// field is one leaf key of Config, found by reflecting over the mapstructure
// tags, so a field added to Config is a key (with a default, an environment
// variable and a place in String) without further registration.
type field struct {
	key   string       // dotted key, e.g. "state.redis.url"
	env   string       // environment variable, e.g. "SHEPHERD_STATE_REDIS_URL"
	index []int        // path for reflect.Value.FieldByIndex from Config
	typ   reflect.Type // the leaf's Go type
}

var durationType = reflect.TypeFor[time.Duration]()

// fields lists Config's leaf keys in declaration order. It panics on a field
// without a usable mapstructure tag, of a kind the loader cannot convert from
// an environment string, or whose environment variable collides with another
// key's: all programming errors that every test of this package trips over.
var fields = sync.OnceValue(func() []field {
	var out []field
	walkFields(reflect.TypeFor[Config](), "", nil, &out)
	seen := map[string]string{}
	for _, f := range out {
		if other, dup := seen[f.env]; dup {
			panic(fmt.Sprintf("config: keys %s and %s share the environment variable %s", other, f.key, f.env))
		}
		seen[f.env] = f.key
	}
	return out
})

// sections holds the dotted names of the nested structs ("state",
// "state.redis", ...): keys that hold a mapping rather than a value.
var sections = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, f := range fields() {
		parts := strings.Split(f.key, ".")
		for i := 1; i < len(parts); i++ {
			m[strings.Join(parts[:i], ".")] = true
		}
	}
	return m
})

// byKey indexes fields by key.
var byKey = sync.OnceValue(func() map[string]field {
	m := make(map[string]field, len(fields()))
	for _, f := range fields() {
		m[f.key] = f
	}
	return m
})

func walkFields(t reflect.Type, prefix string, index []int, out *[]field) {
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("mapstructure")
		if sf.Anonymous && tag == ",squash" && sf.Type.Kind() == reflect.Struct {
			// An embedded struct's keys sit at its parent's level
			// (registry.Sections: topics.*, intents.*, …).
			walkFields(sf.Type, prefix, append(append([]int(nil), index...), i), out)
			continue
		}
		if tag == "" || tag == "-" || strings.ContainsAny(tag, ",.") || tag != strings.ToLower(tag) {
			panic(fmt.Sprintf("config: field %s.%s needs a plain lower-case mapstructure tag, got %q", t.Name(), sf.Name, tag))
		}
		key := tag
		if prefix != "" {
			key = prefix + "." + tag
		}
		idx := append(append([]int(nil), index...), i)
		if sf.Type.Kind() == reflect.Struct {
			walkFields(sf.Type, key, idx, out)
			continue
		}
		if !convertible(sf.Type) {
			panic(fmt.Sprintf("config: key %s has unsupported type %s", key, sf.Type))
		}
		*out = append(*out, field{key: key, env: EnvName(key), index: idx, typ: sf.Type})
	}
}

// convertible reports whether fromString can produce a value of type t.
func convertible(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	case reflect.Slice:
		return t.Elem().Kind() == reflect.String
	}
	return false
}

// Keys returns every configuration key (dotted, e.g. "state.redis.url"),
// sorted. These are exactly the keys Load accepts.
func Keys() []string {
	out := make([]string, 0, len(fields()))
	for _, f := range fields() {
		out = append(out, f.key)
	}
	sort.Strings(out)
	return out
}

// EnvName returns the environment variable that sets key: EnvPrefix followed
// by the key upper-cased with "." replaced by "_"
// (state.redis.url → SHEPHERD_STATE_REDIS_URL).
func EnvName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}
