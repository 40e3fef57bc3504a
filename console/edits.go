package console

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/journal"
	"github.com/shepherd-proxy/shepherd/state"
)

// This file is the session page's edit journal: the files the agent's
// tool calls wrote, per chapter, with their diffs, and for each entry that
// can be undone the reverse patch journal.Reverse gives (the same patch
// `shepherd edits revert N` prints) with the command line that applies it.
//
// Fragments (token-guarded like the others):
//   - /console/f/edits/{id}[?tenant=T]: the journal.
//   - /console/f/edits/{id}/revert/{n}[?tenant=T]: how entry n is reverted.

// maxDiffLines bounds the diff lines one entry shows on the page.
const maxDiffLines = 400

// editsFragmentURL is the journal fragment of a session page.
func editsFragmentURL(id, tenant string) string {
	return withTenant(Prefix+"/f/edits/"+url.PathEscape(id), tenant, nil)
}

// editsData is the journal fragment's data.
type editsData struct {
	Missing     string // why there is nothing to show
	Unavailable bool   // the store keeps no edit journal
	Count       int
	Chapters    []editChapter
}

// editChapter is a run of consecutive entries made under one chapter.
type editChapter struct {
	Title string // "" when the topics feature was off
	Edits []editView
}

// editView is one journal entry as the page shows it.
type editView struct {
	Seq                    int64
	At                     time.Time
	Tool, Operation, Path  string
	Status, Reason, Intent string
	BeforeKnown            bool
	Size                   int64
	Diff                   []diffLine
	More                   int // diff lines not shown
	Revertible             bool
	RevertURL              string
	NotRevertible          string // why there is no Revert button
	Failed, Refused        bool
}

// diffLine is one line of a unified diff with its kind: "add", "del",
// "hunk", "meta" (---/+++ and "\ No newline") or "ctx".
type diffLine struct {
	Kind, Text string
}

// revertData is the revert fragment's data.
type revertData struct {
	Missing  string
	Seq      int64
	Path     string
	Mode     string
	Delete   bool
	Recreate bool
	Patch    []diffLine
	More     int
	Command  string
}

// editsRoute serves /console/f/edits/... (the caller checked the token).
func (h *Handler) editsRoute(ctx *fasthttp.RequestCtx, rest string) {
	id, tail, _ := strings.Cut(rest, "/")
	if id == "" {
		ctx.Error("not found", fasthttp.StatusNotFound)
		return
	}
	if tail == "" {
		h.editsFragment(ctx, id)
		return
	}
	n, ok := strings.CutPrefix(tail, "revert/")
	seq, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil || seq < 1 {
		ctx.Error("not found", fasthttp.StatusNotFound)
		return
	}
	h.revertFragment(ctx, id, seq)
}

// journalKey finds the session and the store's journal; on failure it
// sets the status and returns why.
func (h *Handler) journalKey(c context.Context, ctx *fasthttp.RequestCtx, id string) (state.EditJournal, state.Key, string) {
	j, ok := h.store.(state.EditJournal)
	if !ok {
		return nil, state.Key{}, ""
	}
	sess, err := h.findSession(c, id, string(ctx.QueryArgs().Peek("tenant")))
	switch {
	case errors.Is(err, state.ErrNotFound):
		ctx.SetStatusCode(fasthttp.StatusNotFound)
		return nil, state.Key{}, "No session " + strconv.Quote(id) + " (it may have expired)."
	case errors.Is(err, errAmbiguous):
		ctx.SetStatusCode(fasthttp.StatusConflict)
		return nil, state.Key{}, "Several tenants have a session " + strconv.Quote(id) + ": open it from the sessions list."
	case err != nil:
		h.log.Warn("console: reading a session", zap.Error(err))
		ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
		return nil, state.Key{}, "The state store did not answer."
	}
	return j, state.Key{Tenant: sess.Tenant, Session: sess.ID}, ""
}

// editsFragment serves /console/f/edits/{id}.
func (h *Handler) editsFragment(ctx *fasthttp.RequestCtx, id string) {
	c, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	var d editsData
	j, key, missing := h.journalKey(c, ctx, id)
	switch {
	case missing != "":
		d.Missing = missing
	case j == nil:
		d.Unavailable = true
	default:
		recs, err := j.Edits(c, key, "")
		if err != nil {
			h.log.Warn("console: reading the edit journal", zap.Error(err))
			d.Missing = "The state store did not answer."
			ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
			break
		}
		d.Count = len(recs)
		for _, r := range recs {
			v := editOf(r, key)
			if n := len(d.Chapters); n == 0 || d.Chapters[n-1].Title != r.Chapter {
				d.Chapters = append(d.Chapters, editChapter{Title: r.Chapter})
			}
			last := &d.Chapters[len(d.Chapters)-1]
			last.Edits = append(last.Edits, v)
		}
	}
	h.render(ctx, "frag_edits", d)
}

// editOf builds an entry's view.
func editOf(r state.EditRecord, key state.Key) editView {
	v := editView{Seq: r.Seq, At: r.At, Tool: r.Tool, Operation: r.Operation, Path: r.Path, Status: r.Status,
		Reason: r.Reason, Intent: r.Intent, BeforeKnown: r.BeforeKnown, Size: r.Size,
		Failed: r.Status == state.EditFailed, Refused: r.Status == state.EditRefused}
	v.Diff, v.More = diffLines(r.Diff)
	_, err := journal.Reverse(r)
	switch {
	case v.Refused:
		v.NotRevertible = "refused: the agent never ran it"
	case err != nil:
		v.NotRevertible = "cannot be reverted: neither the prior content nor a diff is known"
	default:
		v.Revertible = true
		v.RevertURL = withTenant(Prefix+"/f/edits/"+url.PathEscape(key.Session)+"/revert/"+strconv.FormatInt(r.Seq, 10), key.Tenant, nil)
	}
	return v
}

// revertFragment serves /console/f/edits/{id}/revert/{n}.
func (h *Handler) revertFragment(ctx *fasthttp.RequestCtx, id string, seq int64) {
	c, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	d := revertData{Seq: seq}
	j, key, missing := h.journalKey(c, ctx, id)
	switch {
	case missing != "":
		d.Missing = missing
	case j == nil:
		d.Missing = "This store keeps no edit journal."
		ctx.SetStatusCode(fasthttp.StatusNotFound)
	default:
		rec, err := j.Edit(c, key, seq)
		if err != nil {
			if !errors.Is(err, state.ErrNotFound) {
				h.log.Warn("console: reading an edit", zap.Error(err))
			}
			d.Missing = "Edit " + strconv.FormatInt(seq, 10) + " is no longer in the journal."
			ctx.SetStatusCode(fasthttp.StatusNotFound)
			break
		}
		rv, err := journal.Reverse(rec)
		if err != nil || rec.Status == state.EditRefused {
			d.Missing = "Edit " + strconv.FormatInt(seq, 10) + " cannot be reverted: neither its prior content nor its diff is known."
			if rec.Status == state.EditRefused {
				d.Missing = "Edit " + strconv.FormatInt(seq, 10) + " was refused: the agent never ran it, there is nothing to revert."
			}
			ctx.SetStatusCode(fasthttp.StatusConflict)
			break
		}
		d.Path, d.Mode = rv.Path, rv.Mode
		d.Delete = rv.Delete
		d.Recreate = rv.Mode == journal.RevertRestore && rv.Operation == state.EditDelete
		d.Patch, d.More = diffLines(rv.Patch)
		// The command names the tenant only when the id alone is ambiguous.
		tenants, err := state.SessionTenants(c, h.store, key.Session)
		if err != nil || len(tenants) == 1 {
			key.Tenant = ""
		}
		d.Command = revertCommand(seq, key)
	}
	h.render(ctx, "frag_revert", d)
}

// revertCommand is the command line that applies the revert of entry seq
// in the workspace (with --tenant when key.Tenant is set).
func revertCommand(seq int64, key state.Key) string {
	cmd := "shepherd edits revert " + strconv.FormatInt(seq, 10) + " --session " + shellQuote(key.Session)
	if key.Tenant != "" {
		cmd += " --tenant " + shellQuote(key.Tenant)
	}
	return cmd + " --apply"
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe
// characters.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:/@%+=,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// diffLines splits a unified diff into classified lines, at most
// maxDiffLines; more is how many were left out.
func diffLines(diff string) (lines []diffLine, more int) {
	if diff == "" {
		return nil, 0
	}
	all := strings.Split(strings.TrimSuffix(diff, "\n"), "\n")
	if len(all) > maxDiffLines {
		more = len(all) - maxDiffLines
		all = all[:maxDiffLines]
	}
	lines = make([]diffLine, len(all))
	header := true // ---/+++ are labels only before the first hunk
	for i, ln := range all {
		kind := "ctx"
		switch {
		case strings.HasPrefix(ln, "@@"):
			kind, header = "hunk", false
		case header && (strings.HasPrefix(ln, "--- ") || strings.HasPrefix(ln, "+++ ")):
			kind = "meta"
		case strings.HasPrefix(ln, `\`):
			kind = "meta"
		case strings.HasPrefix(ln, "+"):
			kind = "add"
		case strings.HasPrefix(ln, "-"):
			kind = "del"
		}
		lines[i] = diffLine{Kind: kind, Text: ln}
	}
	return lines, more
}
