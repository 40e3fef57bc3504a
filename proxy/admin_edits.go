package proxy

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/shepherd-proxy/shepherd/journal"
	"github.com/shepherd-proxy/shepherd/state"
)

// The edits API (issue 16), behind the admin token like the sessions API;
// the tenant is ?tenant= or looked up as for GET /shepherd/v1/sessions/{id}
// (409 when the id is ambiguous):
//   - GET /shepherd/v1/sessions/{id}/edits[?path=P]: the session's edit
//     journal, oldest first, one path's with ?path= (editJSON: no file
//     bodies);
//   - GET /shepherd/v1/sessions/{id}/edits/{n}: entry n whole, its before
//     and after content included (editAnswer);
//   - GET /shepherd/v1/sessions/{id}/edits/{n}/revert: how to undo entry n
//     (journal.Revert); 409 when neither its prior content nor its diff is
//     known.
//
// 400 for an n that is not a positive integer, 404 for an unknown session
// or entry, 503 when the store keeps no journal or fails.

// editJSON is an entry as the API answers it: the stored entry, saying
// whether its after-state is known. The list leaves the file bodies out
// (Before and After are omitted when nil); GET …/edits/{n} has them.
type editJSON struct {
	state.EditRecord
	AfterKnown bool `json:"after_known"`
}

// editAnswer is rec as the API answers it, with its file bodies or
// without.
func editAnswer(rec state.EditRecord, bodies bool) editJSON {
	out := editJSON{EditRecord: rec, AfterKnown: rec.After != nil}
	if !bodies {
		out.Before, out.After = nil, nil
	}
	return out
}

// editsRoute parses rest, a sessions-API path after the prefix: the
// session id, the entry ("" for the list) and whether it asks for the
// revert. ok is false when rest is not an edits path.
func editsRoute(rest string) (session, n string, revert, ok bool) {
	parts := strings.Split(rest, "/")
	if len(parts) < 2 || len(parts) > 4 || parts[0] == "" || parts[1] != "edits" {
		return "", "", false, false
	}
	switch len(parts) {
	case 2:
		return parts[0], "", false, true
	case 3:
		return parts[0], parts[2], false, parts[2] != ""
	}
	return parts[0], parts[2], true, parts[2] != "" && parts[3] == "revert"
}

// sessionEdits serves rest, the part of a sessions-API path after the
// prefix, when it is an edits path, and reports whether it did.
func (s *Server) sessionEdits(ctx *fasthttp.RequestCtx, rest string) bool {
	session, n, revert, ok := editsRoute(rest)
	if !ok {
		return false
	}
	if !ctx.IsGet() {
		writeJSON(ctx, fasthttp.StatusMethodNotAllowed, map[string]string{"error": "GET only"})
		return true
	}
	var seq int64
	if n != "" {
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil || v < 1 {
			writeJSON(ctx, fasthttp.StatusBadRequest, map[string]string{"error": "the edit number must be a positive integer"})
			return true
		}
		seq = v
	}
	j, _ := s.store.(state.EditJournal)
	if j == nil {
		writeJSON(ctx, fasthttp.StatusServiceUnavailable, map[string]string{"error": "the state store keeps no edit journal"})
		return true
	}
	tenant := string(ctx.QueryArgs().Peek("tenant"))
	if tenant == "" {
		if tenant, ok = s.sessionTenant(ctx, session, "session not found"); !ok {
			return true
		}
	}
	key := state.Key{Tenant: tenant, Session: session}
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if n == "" {
		s.listEdits(ctx, c, j, key)
		return true
	}
	rec, err := j.Edit(c, key, seq)
	switch {
	case errors.Is(err, state.ErrNotFound):
		writeJSON(ctx, fasthttp.StatusNotFound, map[string]string{"error": "edit not found"})
	case err != nil:
		s.storeUnavailable(ctx, "edits")
	case revert:
		s.revertEdit(ctx, rec)
	default:
		writeJSON(ctx, fasthttp.StatusOK, editAnswer(rec, true))
	}
	return true
}

func (s *Server) listEdits(ctx *fasthttp.RequestCtx, c context.Context, j state.EditJournal, key state.Key) {
	recs, err := j.Edits(c, key, string(ctx.QueryArgs().Peek("path")))
	switch {
	case errors.Is(err, state.ErrNotFound): // an invalid key: no journal
		recs = nil
	case err != nil:
		s.storeUnavailable(ctx, "edits")
		return
	}
	out := make([]editJSON, 0, len(recs))
	for _, rec := range recs {
		out = append(out, editAnswer(rec, false))
	}
	writeJSON(ctx, fasthttp.StatusOK, map[string]any{"session": key.Session, "edits": out})
}

func (s *Server) revertEdit(ctx *fasthttp.RequestCtx, rec state.EditRecord) {
	rv, err := journal.Reverse(rec)
	if errors.Is(err, journal.ErrNotRevertible) {
		writeJSON(ctx, fasthttp.StatusConflict, map[string]any{
			"error": "edit " + strconv.FormatInt(rec.Seq, 10) + " of " + rec.Path + " cannot be reverted: " +
				strings.TrimPrefix(err.Error(), "journal: the edit cannot be reverted: "),
			"seq": rec.Seq, "path": rec.Path,
		})
		return
	}
	if err != nil {
		writeJSON(ctx, fasthttp.StatusInternalServerError, map[string]string{"error": "revert failed"})
		return
	}
	writeJSON(ctx, fasthttp.StatusOK, rv)
}
