package jsonkit

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// Name returns the string's value, never aliasing the parsed bytes, one
// shared copy per name; long and escaped strings are copied as
// OwnedString copies them; the table stays bounded.
func TestName(t *testing.T) {
	body := []byte(`{"a":"Read","b":"Read","c":"Wr\u0069te","d":7}`)
	a := Name(gjson.GetBytes(body, "a"))
	b := Name(gjson.GetBytes(body, "b"))
	require.Equal(t, "Read", a)
	require.Equal(t, unsafe.StringData(a), unsafe.StringData(b), "one copy per name")
	copy(body[6:10], "XXXX")
	require.Equal(t, "Read", a, "not aliasing the body")
	require.Equal(t, "Write", Name(gjson.GetBytes(body, "c")))
	require.Equal(t, "", Name(gjson.GetBytes(body, "d")))
	long := strings.Repeat("x", internMaxLen+1)
	require.Equal(t, long, Name(gjson.Parse(`"`+long+`"`)))

	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 3 * internMaxEntries {
				name := fmt.Sprintf("tool_%d_%d", g, i)
				if got := Name(gjson.Parse(`"` + name + `"`)); got != name {
					t.Errorf("Name(%q) = %q", name, got)
				}
			}
		})
	}
	wg.Wait()
	interned.RLock()
	defer interned.RUnlock()
	require.LessOrEqual(t, len(interned.m), internMaxEntries)
}

func BenchmarkName(b *testing.B) {
	r := gjson.Parse(`"mcp__github__create_pull_request"`)
	b.ReportAllocs()
	for b.Loop() {
		_ = Name(r)
	}
}
