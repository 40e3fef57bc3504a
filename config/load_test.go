package config

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/viper"
	"github.com/stretchr/testify/require"
)

// noEnv keeps tests independent of the developer's environment.
var noEnv = []string{}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "shepherd.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

func TestDefaultsAreValid(t *testing.T) {
	d := Defaults()
	require.NoError(t, d.Validate())
}

func TestLoadNoFileGivesDefaults(t *testing.T) {
	c, err := Load(LoadOptions{Env: noEnv})
	require.NoError(t, err)
	require.Equal(t, Defaults(), *c)
}

func TestLoadEmptyFileGivesDefaults(t *testing.T) {
	c, err := Load(LoadOptions{File: writeFile(t, "# nothing\n"), Env: noEnv})
	require.NoError(t, err)
	require.Equal(t, Defaults(), *c)
}

// TestExampleFile keeps config.example.yaml honest: it loads, it equals the
// defaults, it sets every key, and it names every key's environment variable.
func TestExampleFile(t *testing.T) {
	const path = "../config.example.yaml"
	c, err := Load(LoadOptions{File: path, Env: noEnv})
	require.NoError(t, err)
	require.Equal(t, Defaults(), *c)

	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, f := range fields() {
		require.Contains(t, string(raw), f.env, "example file does not mention %s for key %s", f.env, f.key)
	}

	// Every key is spelled out, not left to the defaults.
	v := newFileViper(t, path)
	for _, k := range Keys() {
		require.True(t, v.InConfig(k), "example file does not set key %s", k)
	}
}

func TestLoadMissingFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "absent.yaml")
	_, err := Load(LoadOptions{File: p, Env: noEnv})
	require.Error(t, err)
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.Contains(t, err.Error(), p)
}

func TestLoadFile(t *testing.T) {
	p := writeFile(t, `
listen: 0.0.0.0:9000
upstreams:
  anthropic: http://mock:9000/anthropic
state:
  backend: redis
  ttl: 1h
  redis:
    addrs: [r1:6379, r2:6379]
    timeout: 50ms
limits:
  max_body_bytes: 1048576
admin:
  listen: ""
  token: t0ken
`)
	c, err := Load(LoadOptions{File: p, Env: noEnv})
	require.NoError(t, err)

	want := Defaults()
	want.Listen = "0.0.0.0:9000"
	want.Upstreams.Anthropic = "http://mock:9000/anthropic"
	want.State.Backend = BackendRedis
	want.State.TTL = time.Hour
	want.State.Redis.Addrs = []string{"r1:6379", "r2:6379"}
	want.State.Redis.Timeout = 50 * time.Millisecond
	want.Limits.MaxBodyBytes = 1 << 20
	want.Admin.Listen = ""
	want.Admin.Token = "t0ken"
	require.Equal(t, want, *c)
}

func TestLoadEnv(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want func(*Config)
	}{
		{
			name: "nested key absent from file",
			env:  []string{"SHEPHERD_STATE_REDIS_URL=redis://cache:6379/2", "SHEPHERD_UPSTREAMS_ANTHROPIC=http://mock:1/a"},
			want: func(c *Config) {
				c.State.Redis.URL = "redis://cache:6379/2"
				c.Upstreams.Anthropic = "http://mock:1/a"
			},
		},
		{
			name: "list is comma-separated, blanks trimmed",
			env:  []string{"SHEPHERD_STATE_REDIS_ADDRS=a:1, b:2,,"},
			want: func(c *Config) { c.State.Redis.Addrs = []string{"a:1", "b:2"} },
		},
		{
			name: "durations and integers",
			env: []string{
				"SHEPHERD_STATE_REDIS_TIMEOUT=750ms", "SHEPHERD_LIMITS_SHUTDOWN_GRACE=1m",
				"SHEPHERD_LIMITS_MAX_BODY_BYTES=1024",
			},
			want: func(c *Config) {
				c.State.Redis.Timeout = 750 * time.Millisecond
				c.Limits.ShutdownGrace = time.Minute
				c.Limits.MaxBodyBytes = 1024
			},
		},
		{
			name: "set but empty selects the empty sentinel",
			env:  []string{"SHEPHERD_ADMIN_LISTEN="},
			want: func(c *Config) { c.Admin.Listen = "" },
		},
		{
			name: "typed enum",
			env:  []string{"SHEPHERD_STATE_BACKEND=redis", "SHEPHERD_STATE_REDIS_ADDRS=r:6379"},
			want: func(c *Config) {
				c.State.Backend = BackendRedis
				c.State.Redis.Addrs = []string{"r:6379"}
			},
		},
		{
			name: "unrelated and unknown variables are ignored",
			env:  []string{"SHEPHERD_NOT_A_KEY=1", "HOME=/root", "SHEPHERD_LISTEN_X=1", "NO_EQUALS_SIGN"},
			want: func(*Config) {},
		},
		{
			name: "last occurrence wins",
			env:  []string{"SHEPHERD_LOG_LEVEL=warn", "SHEPHERD_LOG_LEVEL=debug"},
			want: func(c *Config) { c.Log.Level = "debug" },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(LoadOptions{Env: tt.env})
			require.NoError(t, err)
			want := Defaults()
			tt.want(&want)
			require.Equal(t, want, *c)
		})
	}
}

func TestLoadEnvErrorsNameVariableAndKey(t *testing.T) {
	_, err := Load(LoadOptions{Env: []string{
		"SHEPHERD_LIMITS_MAX_BODY_BYTES=lots",
		"SHEPHERD_STATE_TTL=5",
	}})
	require.Error(t, err)
	msg := err.Error()
	require.Contains(t, msg, "SHEPHERD_LIMITS_MAX_BODY_BYTES")
	require.Contains(t, msg, "limits.max_body_bytes")
	require.Contains(t, msg, "SHEPHERD_STATE_TTL")
	require.Contains(t, msg, "state.ttl")
}

func TestLoadEnvDefaultsToProcessEnvironment(t *testing.T) {
	t.Setenv("SHEPHERD_SESSION_HEADER", "X-From-Process")
	c, err := Load(LoadOptions{})
	require.NoError(t, err)
	require.Equal(t, "X-From-Process", c.Session.Header)
}

func TestPrecedence(t *testing.T) {
	file := writeFile(t, "listen: 127.0.0.1:1001\nlog:\n  level: warn\n")
	env := []string{"SHEPHERD_LISTEN=127.0.0.1:1002", "SHEPHERD_LOG_FORMAT=console"}
	flags := map[string]any{"listen": "127.0.0.1:1003"}

	tests := []struct {
		name       string
		opts       LoadOptions
		wantListen string
	}{
		{"defaults", LoadOptions{Env: noEnv}, "127.0.0.1:8787"},
		{"file beats defaults", LoadOptions{File: file, Env: noEnv}, "127.0.0.1:1001"},
		{"env beats file", LoadOptions{File: file, Env: env}, "127.0.0.1:1002"},
		{"flag beats env", LoadOptions{File: file, Env: env, Overrides: flags}, "127.0.0.1:1003"},
		{"nil flag is not set", LoadOptions{File: file, Env: env, Overrides: map[string]any{"listen": nil}}, "127.0.0.1:1002"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(tt.opts)
			require.NoError(t, err)
			require.Equal(t, tt.wantListen, c.Listen)
		})
	}

	// Layers merge key by key: the file's log.level survives the env's
	// log.format in the same section.
	c, err := Load(LoadOptions{File: file, Env: env, Overrides: flags})
	require.NoError(t, err)
	require.Equal(t, Log{Level: "warn", Format: "console"}, c.Log)
}

func TestOverrides(t *testing.T) {
	c, err := Load(LoadOptions{Env: noEnv, Overrides: map[string]any{
		"limits.upstream_timeout": "3s",               // string, environment syntax
		"limits.shutdown_grace":   5 * time.Second,    // typed
		"state.redis.addrs":       []string{"x:6379"}, // typed list
		"state.max_sessions":      "7",
	}})
	require.NoError(t, err)
	require.Equal(t, 3*time.Second, c.Limits.UpstreamTimeout)
	require.Equal(t, 5*time.Second, c.Limits.ShutdownGrace)
	require.Equal(t, []string{"x:6379"}, c.State.Redis.Addrs)
	require.Equal(t, 7, c.State.MaxSessions)

	_, err = Load(LoadOptions{Env: noEnv, Overrides: map[string]any{"lisen": ":1"}})
	require.ErrorContains(t, err, `unknown key "lisen"`)
	require.ErrorContains(t, err, `did you mean "listen"?`)
}

func TestUnknownKeysRejected(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{
			name: "misspelt section",
			yaml: "upstream:\n  anthropic: https://api.anthropic.com\n",
			want: []string{`config: unknown key "upstream.anthropic"`, `did you mean "upstreams.anthropic"?`},
		},
		{
			name: "unknown leaf in a known section",
			yaml: "state:\n  redis:\n    password: x\n",
			want: []string{`unknown key "state.redis.password"`},
		},
		{
			name: "several at once",
			yaml: "foo: 1\nlimits:\n  max_body: 3\n",
			want: []string{`unknown key "foo"`, `unknown key "limits.max_body"`},
		},
		{
			name: "mapping under a value key",
			yaml: "listen:\n  port: 1\n",
			want: []string{"listen", "expected a value, got a mapping"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(LoadOptions{File: writeFile(t, tt.yaml), Env: noEnv})
			require.Error(t, err)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

func TestWrongTypesRejected(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"string for int", "limits: {max_body_bytes: lots}\n", []string{"config: limits.max_body_bytes:"}},
		{"bare number for duration", "state: {ttl: 60}\n", []string{"state.ttl", `unit such as "30s"`}},
		{"bad duration", "limits: {upstream_timeout: soon}\n", []string{"limits.upstream_timeout", `"soon" is not a duration`}},
		{"fraction for int", "state: {max_sessions: 1.5}\n", []string{"state.max_sessions", "not a whole number"}},
		{"bool for int", "limits: {max_conns_per_upstream: true}\n", []string{"limits.max_conns_per_upstream"}},
		{"scalar for section", "state: {redis: localhost}\n", []string{"state.redis"}},
		{"number list", "state: {redis: {addrs: [1]}}\n", []string{"state.redis.addrs"}},
		{
			"every bad key reported",
			"limits: {max_body_bytes: lots, shutdown_grace: 9}\nlog: {level: 3}\n",
			[]string{"limits.max_body_bytes", "limits.shutdown_grace", "log.level"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(LoadOptions{File: writeFile(t, tt.yaml), Env: noEnv})
			require.Error(t, err)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

func TestListFromFileString(t *testing.T) {
	c, err := Load(LoadOptions{File: writeFile(t, "state: {redis: {addrs: 'a:1, b:2'}}\n"), Env: noEnv})
	require.NoError(t, err)
	require.Equal(t, []string{"a:1", "b:2"}, c.State.Redis.Addrs)
}

func TestLoadValidates(t *testing.T) {
	_, err := Load(LoadOptions{Env: []string{"SHEPHERD_LOG_LEVEL=loud", "SHEPHERD_STATE_BACKEND=redis"}})
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, []string{"state.redis.url", "log.level"}, problemKeys(ve))
}

func TestKeys(t *testing.T) {
	keys := Keys()
	require.Contains(t, keys, "listen")
	require.Contains(t, keys, "state.redis.addrs")
	require.Contains(t, keys, "limits.max_body_bytes")
	// Every key is lower-case and names one environment variable of its
	// own (TestExampleFile checks each is documented).
	envs := map[string]string{}
	for _, k := range keys {
		require.Equal(t, k, strings.ToLower(k))
		prev, dup := envs[EnvName(k)]
		require.False(t, dup, "%s and %s share %s", prev, k, EnvName(k))
		envs[EnvName(k)] = k
	}
	require.Equal(t, "SHEPHERD_STATE_REDIS_URL", EnvName("state.redis.url"))
	require.Equal(t, "SHEPHERD_LIMITS_MAX_BODY_BYTES", EnvName("limits.max_body_bytes"))
}

func TestLoadIsRepeatable(t *testing.T) {
	// Load must not touch global state: concurrent loads with different
	// inputs see only their own.
	done := make(chan struct{})
	for i := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			listen := "127.0.0.1:" + string(rune('1'+i)) + "000"
			c, err := Load(LoadOptions{Env: []string{"SHEPHERD_LISTEN=" + listen}})
			if err == nil && c.Listen != listen {
				t.Errorf("got %s, want %s", c.Listen, listen)
			}
			if err != nil {
				t.Error(err)
			}
		}()
	}
	for range 8 {
		<-done
	}
}

// newFileViper reads path alone, to inspect which keys the file itself sets.
func newFileViper(t *testing.T, path string) *viper.Viper {
	t.Helper()
	v := viper.New()
	v.SetConfigFile(path)
	v.SetConfigType("yaml")
	require.NoError(t, v.ReadInConfig())
	return v
}
