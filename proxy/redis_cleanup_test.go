package proxy_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// cleanupRedisPrefix deletes every key a test wrote under prefix.
func cleanupRedisPrefix(t *testing.T, url, prefix string) {
	t.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("REDIS_URL: %v", err)
	}
	c := redis.NewClient(opt)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	iter := c.Scan(ctx, 0, prefix+"*", 100).Iterator()
	for iter.Next(ctx) {
		c.Del(ctx, iter.Val())
	}
}
