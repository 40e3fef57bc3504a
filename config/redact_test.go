package config

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRedacted(t *testing.T) {
	tests := []struct {
		name, url, want string
	}{
		{"user and password", "redis://user:hunter2@cache:6379/0", "redis://user:***@cache:6379/0"},
		{"password only", "rediss://:hunter2@cache:6380", "rediss://:***@cache:6380"},
		{"no password", "redis://cache:6379/1", "redis://cache:6379/1"},
		{"user without password", "redis://user@cache:6379", "redis://user@cache:6379"},
		{"password in query", "redis://cache:6379/0?password=hunter2&db=1", "redis://cache:6379/0?db=1&password=***"},
		{"unix socket", "unix://u:hunter2@/var/run/redis.sock", "unix://u:***@/var/run/redis.sock"},
		{"unparseable", "redis://u:hunter2@[::1", "***"},
		{"unset", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Defaults()
			c.State.Redis.URL = tt.url
			r := c.Redacted()
			require.Equal(t, tt.want, r.State.Redis.URL)
			require.NotContains(t, r.String(), "hunter2")
			require.Equal(t, tt.url, c.State.Redis.URL, "original untouched")
		})
	}
}

func TestRedactedToken(t *testing.T) {
	c := Defaults()
	require.Empty(t, c.Redacted().Admin.Token, "an unset token stays visibly unset")

	c.Admin.Token = "s3cr3t-token"
	c.State.Redis.Addrs = []string{"a:1"}
	r := c.Redacted()
	require.Equal(t, Mask, r.Admin.Token)
	require.Equal(t, "s3cr3t-token", c.Admin.Token, "original untouched")

	r.State.Redis.Addrs[0] = "changed"
	require.Equal(t, "a:1", c.State.Redis.Addrs[0], "Redacted must not alias the original's slices")
}

func TestStringRedactsAndListsEveryKey(t *testing.T) {
	c := Defaults()
	c.Admin.Token = "s3cr3t-token"
	c.State.Redis.URL = "redis://u:hunter2@cache:6379/0"
	c.State.Redis.Addrs = []string{"a:1", "b:2"}

	for _, s := range []string{c.String(), fmt.Sprint(c), fmt.Sprintf("%v", &c), fmt.Sprintf("%+v", c)} {
		require.NotContains(t, s, "s3cr3t")
		require.NotContains(t, s, "hunter2")
		require.Contains(t, s, "admin.token=***")
		require.Contains(t, s, "state.redis.url=redis://u:***@cache:6379/0")
		require.Contains(t, s, "state.redis.addrs=[a:1,b:2]")
		require.Contains(t, s, "state.ttl=24h0m0s")
		require.Contains(t, s, `state.redis.master_name=""`)
		for _, k := range Keys() {
			require.Contains(t, s, k+"=")
		}
	}
}
