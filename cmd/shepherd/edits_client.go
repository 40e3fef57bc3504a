package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// maxAnswer bounds an admin API answer the command reads (a journal entry
// holds up to two whole files).
const maxAnswer = 64 << 20

// adminClient reads a session's edit journal from the admin API
// (GET /shepherd/v1/sessions/{id}/edits...). The token goes only into the
// Authorization header: never into a URL, an error or the output.
type adminClient struct {
	base, token     string
	session, tenant string
	http            *http.Client
}

func newAdminClient(o editsOptions) (*adminClient, error) {
	base, token, err := adminBase(o)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--admin %q is not an http(s) URL", base)
	}
	return &adminClient{base: base, token: token, session: o.Session, tenant: o.Tenant, http: &http.Client{}}, nil
}

// editsPath is the API path of the session's journal with the given
// suffix ("", "/3", "/3/revert") and query.
func (c *adminClient) editsPath(suffix string, q url.Values) string {
	if q == nil {
		q = url.Values{}
	}
	if c.tenant != "" {
		q.Set("tenant", c.tenant)
	}
	p := "/shepherd/v1/sessions/" + url.PathEscape(c.session) + "/edits" + suffix
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	return p
}

// apiError is an admin API answer other than 200: its status and the
// message of its JSON body ({"error": "..."}).
type apiError struct {
	Status  int
	Message string
}

func (e *apiError) Error() string {
	msg := fmt.Sprintf("admin API answered %d %s", e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.Status == http.StatusUnauthorized {
		msg += " (give the admin token with --token or SHEPHERD_ADMIN_TOKEN)"
	}
	return msg
}

// get GETs path and decodes the JSON answer into v.
func (c *adminClient) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is said once, below
		}
		return fmt.Errorf("admin API at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return fmt.Errorf("admin API at %s: reading the answer: %w", c.base, err)
	}
	if len(body) > maxAnswer {
		return fmt.Errorf("admin API at %s: answer larger than %d bytes", c.base, maxAnswer)
	}
	if resp.StatusCode != http.StatusOK {
		e := &apiError{Status: resp.StatusCode}
		var msg struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &msg) == nil {
			e.Message = msg.Error
		} else {
			e.Message = strings.TrimSpace(clipText(string(body), 200))
		}
		return e
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("admin API at %s: answer is not the expected JSON: %w", c.base, err)
	}
	return nil
}

// seqPath is "/{n}".
func seqPath(n int64) string { return "/" + strconv.FormatInt(n, 10) }

// clipText shortens s to at most n bytes for a message.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
