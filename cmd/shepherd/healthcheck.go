package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/shepherd-proxy/shepherd/config"
)

// runHealthcheck is `shepherd healthcheck [-config FILE] [-url URL]
// [-ready] [-timeout D]`: it GETs /healthz (or /readyz with -ready) of a
// running shepherd's admin endpoints and returns nil on 200, an error
// otherwise. Without -url the address comes from the configuration the
// server reads (the file, then SHEPHERD_* variables): admin.listen, or
// listen when admin.listen is "", an unspecified host dialled on the
// loopback. It is what the container image's HEALTHCHECK runs (the image
// has no shell or curl). /healthz and /readyz need no token.
func runHealthcheck(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("shepherd healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configFile := fs.String("config", "", "YAML config file the server runs with (see config.example.yaml)")
	base := fs.String("url", "", "admin base URL, e.g. http://127.0.0.1:8788 (default: from the configuration)")
	ready := fs.Bool("ready", false, "check /readyz (the state store answers) instead of /healthz")
	timeout := fs.Duration("timeout", 3*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("healthcheck: unexpected argument %q", fs.Arg(0))
	}
	if *base == "" {
		cfg, err := config.Load(config.LoadOptions{File: *configFile})
		if err != nil {
			return fmt.Errorf("healthcheck: %w", err)
		}
		listen := cfg.Admin.Listen
		if listen == "" {
			listen = cfg.Listen // the admin endpoints share the main listener
		}
		*base = "http://" + dialable(listen)
	}
	path := "/healthz"
	if *ready {
		path = "/readyz"
	}
	return probe(ctx, normalizeBase(*base)+path, *timeout)
}

// probe GETs url and returns nil when it answers 200 within timeout.
func probe(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %d", url, resp.StatusCode)
	}
	return nil
}
