package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shepherd-proxy/shepherd/journal"
	"github.com/shepherd-proxy/shepherd/state"
)

// editSummary is one entry of the journal list: the record without its
// whole contents, and whether they are known.
type editSummary struct {
	state.EditRecord
	AfterKnown bool `json:"after_known"`
}

// editsAnswer is GET /shepherd/v1/sessions/{id}/edits.
type editsAnswer struct {
	Session string        `json:"session"`
	Edits   []editSummary `json:"edits"`
}

// editsList prints the journal as a table.
func editsList(ctx context.Context, c *adminClient, o editsOptions, out io.Writer) error {
	var q url.Values
	if o.Path != "" {
		q = url.Values{"path": {o.Path}}
	}
	var a editsAnswer
	if err := c.get(ctx, c.editsPath("", q), &a); err != nil {
		return fmt.Errorf("edits list: %w", err)
	}
	if len(a.Edits) == 0 {
		if o.Path != "" {
			fmt.Fprintf(out, "No edit of %s journalled in session %s.\n", o.Path, o.Session)
		} else {
			fmt.Fprintf(out, "No edit journalled in session %s.\n", o.Session)
		}
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tSTATUS\tOPERATION\tPATH\tCHAPTER\tINTENT\tTOOL")
	for _, e := range a.Edits {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Seq, stampUTC(e.At), e.Status, e.Operation,
			cell(e.Path, 60), cell(e.Chapter, 32), cell(e.Intent, 16), cell(e.Tool, 20))
	}
	return tw.Flush()
}

// editsShow prints one entry: a header of its facts, then its diff.
func editsShow(ctx context.Context, c *adminClient, _ editsOptions, seq int64, out io.Writer) error {
	var rec state.EditRecord
	if err := c.get(ctx, c.editsPath(seqPath(seq), nil), &rec); err != nil {
		return fmt.Errorf("edits show %d: %w", seq, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "edit %d: %s %s (%s)\n", rec.Seq, rec.Operation, rec.Path, rec.Status)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "  %-9s %s\n", k, oneLine(v))
		}
	}
	row("time", stampUTC(rec.At))
	tool := rec.Tool
	if rec.CallID != "" {
		tool += " (call " + rec.CallID + ")"
	}
	row("tool", tool)
	row("chapter", rec.Chapter)
	row("intent", rec.Intent)
	row("reason", rec.Reason)
	if rec.BeforeKnown {
		row("before", "known")
	} else {
		row("before", "unknown: the session never saw the file before this edit")
	}
	row("size", fmt.Sprintf("%d bytes", rec.Size))
	b.WriteString("\n")
	if rec.Diff == "" {
		b.WriteString("(no diff known)\n")
	} else {
		b.WriteString(rec.Diff)
		if !strings.HasSuffix(rec.Diff, "\n") {
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// editsRevert prints the patch that undoes an entry or, with --apply,
// applies the revert in the workspace (journal.Apply: refused, nothing
// written, when the file changed since the edit).
func editsRevert(ctx context.Context, c *adminClient, o editsOptions, seq int64, out io.Writer) error {
	var rv journal.Revert
	if err := c.get(ctx, c.editsPath(seqPath(seq)+"/revert", nil), &rv); err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.Status == http.StatusConflict {
			return fmt.Errorf("edits revert %d: %s (nothing to apply)", seq, ae.Message)
		}
		return fmt.Errorf("edits revert %d: %w", seq, err)
	}
	if !o.Apply {
		_, err := io.WriteString(out, rv.Patch)
		return err
	}
	dir := o.Dir
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return fmt.Errorf("edits revert %d: %w", seq, err)
		}
	}
	if err := journal.Apply(dir, rv); err != nil {
		if errors.Is(err, journal.ErrChanged) {
			return fmt.Errorf("edits revert %d: refused, nothing written: %w", seq, err)
		}
		return fmt.Errorf("edits revert %d: %w", seq, err)
	}
	target := rv.Path
	if !filepath.IsAbs(target) {
		target = filepath.Join(dir, target)
	}
	switch {
	case rv.Mode == journal.RevertRestore && rv.Delete:
		fmt.Fprintf(out, "Reverted edit %d: removed %s (the edit created it).\n", seq, target)
	case rv.Mode == journal.RevertRestore && rv.Operation == state.EditDelete:
		fmt.Fprintf(out, "Reverted edit %d: recreated %s with its prior content.\n", seq, target)
	case rv.Mode == journal.RevertRestore:
		fmt.Fprintf(out, "Reverted edit %d: restored the prior content of %s.\n", seq, target)
	default:
		fmt.Fprintf(out, "Reverted edit %d: applied the reverse patch to %s.\n", seq, target)
	}
	return nil
}

// stampUTC formats a time as the console prints it ("" for the zero time).
func stampUTC(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// cell is a table cell: one line, at most n runes, "-" when empty.
func cell(s string, n int) string {
	s = oneLine(s)
	if s == "" {
		return "-"
	}
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// oneLine replaces control characters (newlines, tabs, escapes a model may
// have written) with spaces, so a value cannot break the table or the
// terminal.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
