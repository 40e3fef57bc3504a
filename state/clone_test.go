package state

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCloneSharesNothing walks every slice reachable from a fully populated
// Session and checks the clone has its own backing array (but for the
// ledger, copied on write, and so its read-only LedgerEntry.Data, and the
// slots, copied on write), so a field added to Session without a matching
// line in clone fails here.
func TestCloneSharesNothing(t *testing.T) {
	orig := fullSession()
	c := orig.clone()
	assert.Equal(t, orig, c)
	var walk func(path string, a, b reflect.Value)
	walk = func(path string, a, b reflect.Value) {
		switch a.Kind() {
		case reflect.Pointer:
			if !a.IsNil() {
				assert.NotEqual(t, a.Pointer(), b.Pointer(), "%s shared", path)
				walk(path, a.Elem(), b.Elem())
			}
		case reflect.Slice:
			if path == "Session.Ledger" {
				// Copied on write (Session.Ledger): shared by design, and
				// clipped so that an append to the copy allocates.
				assert.Equal(t, a.Pointer(), b.Pointer(), "%s not shared", path)
				assert.Equal(t, b.Len(), b.Cap(), "%s not clipped", path)
				return
			}
			if path == "Session.Ledger[].Data" {
				// Read-only (LedgerEntry): shared by design.
				assert.Equal(t, a.Pointer(), b.Pointer(), "%s not shared", path)
				return
			}
			if a.Len() > 0 {
				assert.NotEqual(t, a.Pointer(), b.Pointer(), "%s shared", path)
				for i := range a.Len() {
					walk(path+"[]", a.Index(i), b.Index(i))
				}
			}
		case reflect.Map:
			if a.Len() > 0 {
				assert.NotEqual(t, a.Pointer(), b.Pointer(), "%s shared", path)
				for _, k := range a.MapKeys() {
					walk(path+"["+k.String()+"]", a.MapIndex(k), b.MapIndex(k))
				}
			}
		case reflect.Interface:
			if strings.HasPrefix(path, "Session.Slots[") {
				// Copied on write (SlotForUpdate): shared by design.
				assert.Equal(t, a.Elem().Pointer(), b.Elem().Pointer(), "%s not shared", path)
				return
			}
			if !a.IsNil() {
				walk(path, a.Elem(), b.Elem())
			}
		case reflect.Struct:
			for i := range a.NumField() {
				if a.Type().Field(i).IsExported() {
					walk(path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i))
				}
			}
		}
	}
	walk("Session", reflect.ValueOf(orig), reflect.ValueOf(c))

	// Every slice field of fullSession is non-empty, so the walk saw them
	// (the unexported ones are not stored: clone drops what was staged
	// and shares the read-only counter snapshot).
	v := reflect.ValueOf(*orig)
	for i := range v.NumField() {
		if !v.Type().Field(i).IsExported() {
			continue
		}
		if f := v.Field(i); f.Kind() == reflect.Slice || f.Kind() == reflect.Map {
			assert.NotZero(t, f.Len(), "fullSession must populate %s", v.Type().Field(i).Name)
		}
	}
	assert.Nil(t, (*Session)(nil).clone())
	assert.Nil(t, (&Session{}).clone().Ledger, "nil slices stay nil")
}

// TestCloneLedgerAppendsDoNotMeet checks the ledger's copy on write from
// both sides: an append to a copy (clipped) leaves the original's array
// alone, and an append to an original with spare capacity lands past what
// the copy sees.
func TestCloneLedgerAppendsDoNotMeet(t *testing.T) {
	orig := &Session{Ledger: make([]LedgerEntry, 2, 8)}
	orig.Ledger[0] = LedgerEntry{Kind: "k", Anchor: "a0"}
	orig.Ledger[1] = LedgerEntry{Kind: "k", Anchor: "a1"}
	c := orig.clone()
	c.Ledger = append(c.Ledger, LedgerEntry{Kind: "k", Anchor: "copy"})
	orig.Ledger = append(orig.Ledger, LedgerEntry{Kind: "k", Anchor: "orig"})
	assert.Equal(t, "orig", orig.Ledger[2].Anchor)
	assert.Equal(t, "copy", c.Ledger[2].Anchor)
	assert.Equal(t, []string{"a0", "a1"}, []string{c.Ledger[0].Anchor, c.Ledger[1].Anchor})

	again := orig.clone()
	orig.Ledger = append(orig.Ledger, LedgerEntry{Kind: "k", Anchor: "later"})
	assert.Len(t, again.Ledger, 3, "the copy sees none of the original's later appends")
	assert.Equal(t, "orig", again.Ledger[2].Anchor)
}
