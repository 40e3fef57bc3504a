package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRoutingLoadAndValidate(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`
routing:
  upstreams:
    - "cheap api=anthropic base_url=http://127.0.0.1:9/a credential_env=CHEAP_KEY"
  rules:
    - "no-gpt4 model=gpt-4* refuse=\"not here, sorry\""
    - "sub kind=subagent set_model=claude-sonnet-4-5 upstream=cheap"
`), 0o600))
	c, err := Load(LoadOptions{File: file, Env: []string{}})
	require.NoError(t, err)
	tb, err := c.Routing.Table()
	require.NoError(t, err)
	require.False(t, tb.Empty())
	require.Len(t, tb.Upstreams(), 1)

	// No routing section: no table, today's behaviour.
	d, err := Load(LoadOptions{Env: []string{}})
	require.NoError(t, err)
	tb, err = d.Routing.Table()
	require.NoError(t, err)
	require.True(t, tb.Empty())
}

func TestRoutingProblems(t *testing.T) {
	cases := []struct {
		name      string
		rules     []string
		upstreams []string
		key, want string
	}{
		{"unknown upstream", []string{"r upstream=nowhere"}, nil, "routing.rules", `upstream "nowhere"`},
		{"api mismatch", []string{"r api=gemini upstream=cheap"}, []string{"cheap api=openai base_url=http://h"}, "routing.rules", "api gemini is a gemini API but upstream cheap serves openai"},
		{"bad glob", []string{"r model=[x set_model=y"}, nil, "routing.rules", "not a valid glob"},
		{"empty rule", []string{"r"}, nil, "routing.rules", "does nothing"},
		{"refuse with model", []string{`r refuse="no" set_model=x`}, nil, "routing.rules", "cannot be combined"},
		{"bad upstream", nil, []string{"u api=openai base_url=http://user:pw@h"}, "routing.upstreams", "user info"},
		{"reserved name", nil, []string{"openai api=openai base_url=http://h"}, "routing.upstreams", "built-in"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Defaults()
			cfg.Routing.Rules, cfg.Routing.Upstreams = c.rules, c.upstreams
			err := cfg.Validate()
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			require.Len(t, ve.Problems, 1, "%v", err)
			require.Equal(t, c.key, ve.Problems[0].Key)
			require.Contains(t, ve.Problems[0].Msg, c.want)
			require.False(t, strings.Contains(err.Error(), "pw@"), "secret echoed: %v", err)
		})
	}
}

// Rules can come from the environment, comma-separated.
func TestRoutingFromEnv(t *testing.T) {
	c, err := Load(LoadOptions{Env: []string{
		"SHEPHERD_ROUTING_UPSTREAMS=cheap api=openai base_url=http://h",
		"SHEPHERD_ROUTING_RULES=a model=gpt-5* upstream=cheap, b kind=side set_model=gpt-5-mini",
	}})
	require.NoError(t, err)
	require.Equal(t, []string{"a model=gpt-5* upstream=cheap", "b kind=side set_model=gpt-5-mini"}, c.Routing.Rules)
}
