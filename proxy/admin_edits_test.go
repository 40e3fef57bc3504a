package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/journal"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// journalled is a store with an edit journal, as both state stores are.
type journalled interface {
	state.Store
	state.EditJournal
}

// editsStores runs fn on a fresh memory store and on Redis.
func editsStores(t *testing.T, fn func(t *testing.T, st journalled)) {
	t.Run("memory", func(t *testing.T) {
		fn(t, state.NewMemory(state.MemoryOptions{MaxSessions: 100, TTL: time.Hour}))
	})
	t.Run("redis", func(t *testing.T) {
		url := kit.RedisURL(t)
		prefix := fmt.Sprintf("shepherd-edits-%d", time.Now().UnixNano())
		st, err := state.NewRedis(state.RedisOptions{URL: url, KeyPrefix: prefix, TTL: time.Minute, Timeout: 2 * time.Second})
		require.NoError(t, err)
		t.Cleanup(func() { cleanupRedisPrefix(t, url, prefix) })
		fn(t, st)
	})
}

const editsToken = "adm1n-edits"

var editsAuth = map[string]string{"Authorization": "Bearer " + editsToken}

// seedEdits makes session s1 of tenant t1 with three entries: 1 a.go with
// both bodies, 2 b.go with a diff only, 3 a.go with nothing known.
func seedEdits(t *testing.T, st journalled) {
	t.Helper()
	ctx := context.Background()
	key := state.Key{Tenant: "t1", Session: "s1"}
	_, err := st.Update(ctx, key, func(s *state.Session) error { s.Requests = 1; return nil })
	require.NoError(t, err)
	before, after := "package a\n\nvar x = 1\n", "package a\n\nvar x = 2\n"
	_, err = st.AppendEdits(ctx, key, 10, []state.EditRecord{{
		Path: "a.go", Tool: "Write", CallID: "toolu_1", Operation: state.EditRewrite, Status: state.EditApplied,
		Chapter: "ch1", Intent: "bump x", Diff: journal.Diff("a.go", before, after),
		Before: &before, After: &after, BeforeKnown: true, Size: int64(len(after)),
	}, {
		Path: "b.go", Tool: "Edit", CallID: "toolu_2", Operation: state.EditModify, Status: state.EditApplied,
		Diff: "--- a/b.go\n+++ b/b.go\n@@ -1,1 +1,1 @@\n-old\n+new\n", Size: 3,
	}})
	require.NoError(t, err)
	_, err = st.AppendEdits(ctx, key, 10, []state.EditRecord{{
		Path: "a.go", Tool: "Write", CallID: "toolu_3", Operation: state.EditRewrite, Status: state.EditRefused, Reason: "outside the intent",
	}})
	require.NoError(t, err)
}

// TestEditsAPIList: the journal oldest first, without file bodies but
// saying which are known; ?path= filters; unknown sessions and paths.
func TestEditsAPIList(t *testing.T) {
	editsStores(t, func(t *testing.T, st journalled) {
		h := newHarness(t, harnessOptions{Store: st, Config: func(c *config.Config) { c.Admin.Token = editsToken }})
		seedEdits(t, st)

		resp, body := do(t, "GET", h.URL+"/shepherd/v1/sessions/s1/edits", "", editsAuth)
		require.Equal(t, 200, resp.StatusCode, string(body))
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		require.Equal(t, "s1", gjson.GetBytes(body, "session").String())
		edits := gjson.GetBytes(body, "edits").Array()
		require.Len(t, edits, 3, string(body))
		for i, e := range edits {
			assert.Equal(t, int64(i+1), e.Get("seq").Int(), "oldest first")
			assert.False(t, e.Get("before").Exists(), "no bodies in the list")
			assert.False(t, e.Get("after").Exists(), "no bodies in the list")
		}
		keys := map[string]bool{}
		edits[0].ForEach(func(k, _ gjson.Result) bool { keys[k.String()] = true; return true })
		assert.Equal(t, map[string]bool{"seq": true, "at": true, "path": true, "tool": true, "call_id": true, "operation": true,
			"status": true, "chapter": true, "intent": true, "diff": true, "before_known": true, "after_known": true, "size": true}, keys)
		assert.Equal(t, "a.go", edits[0].Get("path").String())
		assert.True(t, edits[0].Get("before_known").Bool())
		assert.True(t, edits[0].Get("after_known").Bool())
		assert.Contains(t, edits[0].Get("diff").String(), "-var x = 1\n+var x = 2\n")
		assert.Equal(t, "bump x", edits[0].Get("intent").String())
		assert.False(t, edits[1].Get("before_known").Bool())
		assert.False(t, edits[1].Get("after_known").Bool())
		assert.Equal(t, "refused", edits[2].Get("status").String())
		assert.Equal(t, "outside the intent", edits[2].Get("reason").String())

		resp, body = do(t, "GET", h.URL+"/shepherd/v1/sessions/s1/edits?path=a.go&tenant=t1", "", editsAuth)
		require.Equal(t, 200, resp.StatusCode, string(body))
		assert.Equal(t, []int64{1, 3}, seqsOf(body))
		resp, body = do(t, "GET", h.URL+"/shepherd/v1/sessions/s1/edits/?path=nope.go", "", editsAuth)
		require.Equal(t, 200, resp.StatusCode, string(body))
		assert.JSONEq(t, `{"session":"s1","edits":[]}`, string(body))

		// A session without a journal lists none; an unknown one is 404.
		_, err := st.Update(context.Background(), state.Key{Tenant: "t1", Session: "quiet"}, func(*state.Session) error { return nil })
		require.NoError(t, err)
		resp, body = do(t, "GET", h.URL+"/shepherd/v1/sessions/quiet/edits", "", editsAuth)
		require.Equal(t, 200, resp.StatusCode, string(body))
		assert.JSONEq(t, `{"session":"quiet","edits":[]}`, string(body))
		resp, body = do(t, "GET", h.URL+"/shepherd/v1/sessions/ghost/edits", "", editsAuth)
		require.Equal(t, 404, resp.StatusCode, string(body))
		assert.JSONEq(t, `{"error":"session not found"}`, string(body))
		resp, body = do(t, "GET", h.URL+"/shepherd/v1/sessions/s1/edits?tenant=t9", "", editsAuth)
		require.Equal(t, 200, resp.StatusCode, "an explicit tenant is taken as is")
		assert.JSONEq(t, `{"session":"s1","edits":[]}`, string(body))
	})
}

func seqsOf(body []byte) []int64 {
	out := []int64{}
	for _, e := range gjson.GetBytes(body, "edits").Array() {
		out = append(out, e.Get("seq").Int())
	}
	return out
}

// TestEditsAPIEntryAndRevert: one entry whole, and how to undo it: the
// prior content when known, else the reverse of its diff, else 409.
func TestEditsAPIEntryAndRevert(t *testing.T) {
	editsStores(t, func(t *testing.T, st journalled) {
		h := newHarness(t, harnessOptions{Store: st, Config: func(c *config.Config) { c.Admin.Token = editsToken }})
		seedEdits(t, st)
		base := h.URL + "/shepherd/v1/sessions/s1/edits/"

		resp, body := do(t, "GET", base+"1", "", editsAuth)
		require.Equal(t, 200, resp.StatusCode, string(body))
		assert.Equal(t, "package a\n\nvar x = 1\n", gjson.GetBytes(body, "before").String())
		assert.Equal(t, "package a\n\nvar x = 2\n", gjson.GetBytes(body, "after").String())
		assert.True(t, gjson.GetBytes(body, "before_known").Bool())
		assert.True(t, gjson.GetBytes(body, "after_known").Bool())
		assert.Equal(t, "toolu_1", gjson.GetBytes(body, "call_id").String())
		resp, body = do(t, "GET", base+"2", "", editsAuth)
		require.Equal(t, 200, resp.StatusCode, string(body))
		assert.False(t, gjson.GetBytes(body, "before").Exists())
		assert.False(t, gjson.GetBytes(body, "after_known").Bool())

		// Revert: restore, patch, or 409.
		resp, body = do(t, "GET", base+"1/revert", "", editsAuth)
		require.Equal(t, 200, resp.StatusCode, string(body))
		rec, err := st.Edit(context.Background(), state.Key{Tenant: "t1", Session: "s1"}, 1)
		require.NoError(t, err)
		want, err := journal.Reverse(rec)
		require.NoError(t, err)
		assert.Equal(t, journal.RevertRestore, want.Mode)
		assert.JSONEq(t, mustJSON(t, want), string(body), "journal.Reverse as JSON")

		resp, body = do(t, "GET", base+"2/revert", "", editsAuth)
		require.Equal(t, 200, resp.StatusCode, string(body))
		assert.Equal(t, journal.RevertPatch, gjson.GetBytes(body, "mode").String())
		assert.Equal(t, journal.ReverseDiff("--- a/b.go\n+++ b/b.go\n@@ -1,1 +1,1 @@\n-old\n+new\n"), gjson.GetBytes(body, "patch").String())
		assert.Contains(t, gjson.GetBytes(body, "patch").String(), "--- b/b.go\n+++ a/b.go\n")

		resp, body = do(t, "GET", base+"3/revert", "", editsAuth)
		require.Equal(t, 409, resp.StatusCode, string(body))
		assert.Equal(t, "edit 3 of a.go cannot be reverted: neither its prior content nor its diff is known",
			gjson.GetBytes(body, "error").String())
		assert.Equal(t, int64(3), gjson.GetBytes(body, "seq").Int())

		for _, n := range []string{"99", "99/revert"} {
			resp, body = do(t, "GET", base+n, "", editsAuth)
			require.Equal(t, 404, resp.StatusCode, "%s: %s", n, body)
			assert.JSONEq(t, `{"error":"edit not found"}`, string(body))
		}
		for _, n := range []string{"0", "-1", "x", "1.5", "99999999999999999999", "0/revert", "x/revert"} {
			resp, body = do(t, "GET", base+n, "", editsAuth)
			require.Equal(t, 400, resp.StatusCode, "%s: %s", n, body)
			assert.JSONEq(t, `{"error":"the edit number must be a positive integer"}`, string(body))
		}
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestEditsAPIAccess: the admin token, GET only, an ambiguous session id.
func TestEditsAPIAccess(t *testing.T) {
	st := state.NewMemory(state.MemoryOptions{})
	h := newHarness(t, harnessOptions{Store: st, Config: func(c *config.Config) { c.Admin.Token = editsToken }})
	seedEdits(t, st)
	for _, p := range []string{"/edits", "/edits/1", "/edits/1/revert"} {
		url := h.URL + "/shepherd/v1/sessions/s1" + p
		resp, body := do(t, "GET", url, "", nil)
		assert.Equal(t, 401, resp.StatusCode, "%s: %s", p, body)
		resp, body = do(t, "GET", url, "", map[string]string{"Authorization": "Bearer wrong"})
		assert.Equal(t, 401, resp.StatusCode, "%s: %s", p, body)
		assert.NotContains(t, string(body), editsToken)
		for _, m := range []string{"POST", "DELETE", "PUT"} {
			resp, body = do(t, m, url, "{}", editsAuth)
			assert.Equal(t, 405, resp.StatusCode, "%s %s: %s", m, p, body)
			assert.JSONEq(t, `{"error":"GET only"}`, string(body))
		}
	}

	_, err := st.Update(context.Background(), state.Key{Tenant: "t2", Session: "s1"}, func(*state.Session) error { return nil })
	require.NoError(t, err)
	resp, body := do(t, "GET", h.URL+"/shepherd/v1/sessions/s1/edits", "", editsAuth)
	require.Equal(t, 409, resp.StatusCode, string(body))
	assert.ElementsMatch(t, []string{"t1", "t2"}, []string{gjson.GetBytes(body, "tenants.0").String(), gjson.GetBytes(body, "tenants.1").String()})
	resp, body = do(t, "GET", h.URL+"/shepherd/v1/sessions/s1/edits/1?tenant=t1", "", editsAuth)
	require.Equal(t, 200, resp.StatusCode, string(body))
	resp, body = do(t, "GET", h.URL+"/shepherd/v1/sessions/s1/edits/1?tenant=t2", "", editsAuth)
	require.Equal(t, 404, resp.StatusCode, "the other tenant's session has no entry 1: %s", body)

	// Paths beside the edits API are not taken by it.
	resp, body = do(t, "GET", h.URL+"/shepherd/v1/sessions/s1/edits/1/undo?tenant=t1", "", editsAuth)
	assert.Equal(t, 404, resp.StatusCode, string(body))
	assert.NotContains(t, string(body), "edit")
}

// noJournal is a store that keeps no edit journal.
type noJournal struct{ state.Store }

// brokenJournal is a memory store whose journal reads fail with an error
// that quotes a credential.
type brokenJournal struct{ *state.Memory }

var errJournalDown = errors.New("state: redis journal: dial redis://user:s3cr3t-pw@10.0.0.1:6379: refused")

func (brokenJournal) Edits(context.Context, state.Key, string) ([]state.EditRecord, error) {
	return nil, errJournalDown
}

func (brokenJournal) Edit(context.Context, state.Key, int64) (state.EditRecord, error) {
	return state.EditRecord{}, errJournalDown
}

// TestEditsAPIStoreTrouble: 503 without a journal or when it fails, and
// the failure's text (which may hold credentials) never in the answer.
func TestEditsAPIStoreTrouble(t *testing.T) {
	for name, st := range map[string]state.Store{
		"none":   noJournal{state.NewMemory(state.MemoryOptions{})},
		"broken": brokenJournal{state.NewMemory(state.MemoryOptions{})},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, harnessOptions{Store: st, Config: func(c *config.Config) { c.Admin.Token = editsToken }})
			_, err := st.Update(context.Background(), state.Key{Tenant: "t1", Session: "s1"}, func(*state.Session) error { return nil })
			require.NoError(t, err)
			for _, p := range []string{"/edits", "/edits/1", "/edits/1/revert"} {
				resp, body := do(t, "GET", h.URL+"/shepherd/v1/sessions/s1"+p, "", editsAuth)
				require.Equal(t, 503, resp.StatusCode, "%s: %s", p, body)
				assert.NotContains(t, string(body), "s3cr3t")
				assert.NotContains(t, string(body), "redis://")
				if name == "none" {
					assert.JSONEq(t, `{"error":"the state store keeps no edit journal"}`, string(body))
				} else {
					assert.JSONEq(t, `{"error":"state store unavailable"}`, string(body))
				}
			}
		})
	}
}
