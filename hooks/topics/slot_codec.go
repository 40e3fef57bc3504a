package topics

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/shepherd-proxy/shepherd/state"
)

// The slot's chapters grow with the session (every tool call is noted
// under the chapter it was made in), and a serialising store (Redis) reads
// and writes the whole slot on every request that runs the hook, though
// the hook reads only the active topic. decodeSlot reads the slots this
// hook writes without reflection and keeps stored chapters as their JSON
// (storedChapters): a turn's chapters and calls are added to that JSON,
// and Of (the sessions API, the console) decodes it into a copy. Anything
// the fast decoder does not take goes to encoding/json
// (state.SameShapeFast), which stays the reference (FuzzSlotCodec holds
// the two to the same result); AppendSlotJSON writes what encoding/json
// writes for the state.

// decodeSlot reads a stored slot: versions 0 and 1 have the same shape.
var decodeSlot = state.SameShapeFast("topics", 0, SlotVersion, decodeStateFast)

// The JSON names of the slot's structs.
var (
	stateKeys   = []string{"topic", "chapters", "chapters_dropped", "calls_dropped"}
	chapterKeys = []string{"title", "started_at", "calls"}
	callKeys    = []string{"name", "id", "at"}
)

// decodeStateFast decodes data into s as encoding/json would, but for a
// chapters array with elements, kept as stored; or reports false (s then
// holds nothing the caller keeps).
func decodeStateFast(data []byte, s *State) bool {
	return jsonkit.DecodeDocument(data, stateKeys, func(key, v string) bool {
		switch key {
		case "topic":
			return jsonkit.DecodeString(v, &s.Topic)
		case "chapters":
			if jsonkit.HasElements(v) {
				s.Chapters, s.storedChapters = nil, strings.Clone(v) // decoded when read (Of)
				return true
			}
			return jsonkit.DecodeArray(v, &s.Chapters, decodeChapter)
		case "chapters_dropped":
			return jsonkit.DecodeInt(v, &s.ChaptersDropped)
		case "calls_dropped":
			return jsonkit.DecodeInt(v, &s.CallsDropped)
		}
		return true
	})
}

func decodeChapter(v string, c *Chapter) bool {
	_, ok := jsonkit.DecodeObject(v, chapterKeys, func(key, v string) bool {
		switch key {
		case "title":
			return jsonkit.DecodeString(v, &c.Title)
		case "started_at":
			return jsonkit.DecodeTime(v, &c.StartedAt)
		case "calls":
			return jsonkit.DecodeArray(v, &c.Calls, decodeCall)
		}
		return true
	})
	return ok
}

func decodeCall(v string, n *CallNote) bool {
	_, ok := jsonkit.DecodeObject(v, callKeys, func(key, v string) bool {
		switch key {
		case "name":
			return jsonkit.DecodeString(v, &n.Name)
		case "id":
			return jsonkit.DecodeString(v, &n.ID)
		case "at":
			return jsonkit.DecodeTime(v, &n.At)
		}
		return true
	})
	return ok
}

// decodeStoredChapters decodes storedChapters into Chapters, as
// encoding/json would have decoded the slot's chapters.
func (s *State) decodeStoredChapters() error {
	if err := jsonkit.TakeStored(&s.storedChapters, &s.Chapters, decodeChapter); err != nil {
		return fmt.Errorf("chapters: %w", err)
	}
	return nil
}

// storedCount is the number of stored chapters.
func (s *State) storedCount() int {
	if s.storedChapters == "" {
		return 0
	}
	n := 0
	jsonkit.EachElement(gjson.Parse(s.storedChapters), func(int, gjson.Result) bool { n++; return true })
	return n
}

// addStored opens a chapter for each of titles and notes calls under the
// last chapter, in the stored chapters' JSON (this codec's or
// encoding/json's: the calls member named exactly "calls"); false when the chapters are not stored (or a value
// cannot be written: the caller then decodes them and adds to them as
// values, as it does to any chapters).
func (s *State) addStored(titles []string, calls []CallNote, at time.Time) bool {
	if s.storedChapters == "" {
		return false
	}
	raw := s.storedChapters
	if len(titles) > 0 {
		// New chapters go at the end; the calls under the newest.
		chapters, err := jsonkit.AppendStoredArray(raw, -1, len(titles), func(dst []byte, i int) ([]byte, error) {
			c := Chapter{Title: titles[i], StartedAt: at}
			if i == len(titles)-1 {
				c.Calls = calls
			}
			return appendChapter(dst, &c)
		})
		if err != nil {
			return s.decodeForValues()
		}
		s.storedChapters = chapters
		return true
	}
	last := lastElement(raw)
	if last.Raw == "" || last.Raw[0] != '{' {
		return s.decodeForValues() // not a chapter object: leave it to the values
	}
	if len(calls) == 0 {
		return true
	}
	// The calls go into the last chapter's calls array, or a new one.
	var notes []byte
	for i := range calls {
		var err error
		if i > 0 {
			notes = append(notes, ',')
		}
		if notes, err = appendCall(notes, &calls[i]); err != nil {
			return s.decodeForValues()
		}
	}
	obj := last.Raw
	cs := last.Get("calls")
	var out []byte
	if cs.IsArray() && cs.Index > 0 {
		closeAt := cs.Index + len(cs.Raw) - 1 // the array's ']' in raw (gjson's Index counts from raw's start)
		if closeAt >= len(raw) || raw[closeAt] != ']' {
			return s.decodeForValues()
		}
		out = make([]byte, 0, len(raw)+len(notes)+1)
		out = append(out, raw[:closeAt]...)
		if jsonkit.HasElements(cs.Raw) {
			out = append(out, ',')
		}
		out = append(append(out, notes...), raw[closeAt:]...)
	} else if cs.Exists() {
		return s.decodeForValues() // calls is null or not an array: leave it to the values
	} else {
		closeAt := strings.LastIndexByte(obj, '}')
		out = make([]byte, 0, len(raw)+len(notes)+12)
		out = append(out, raw[:last.Index+closeAt]...)
		if hasMembers(obj) {
			out = append(out, ',')
		}
		out = append(append(append(out, `"calls":[`...), notes...), ']')
		out = append(out, raw[last.Index+closeAt:]...)
	}
	s.storedChapters = string(out)
	return true
}

// decodeForValues decodes the stored chapters for the caller to change as
// values; unreadable ones are dropped (the chapters start again). It
// reports false, addStored's answer when it did not add.
func (s *State) decodeForValues() bool {
	if s.decodeStoredChapters() != nil {
		s.Chapters, s.storedChapters = nil, ""
	}
	return false
}

// lastElement is the last element of the JSON array raw, with its offset
// in raw as Index; none when raw has none.
func lastElement(raw string) gjson.Result {
	var last gjson.Result
	jsonkit.EachElement(gjson.Parse(raw), func(_ int, e gjson.Result) bool { last = e; return true })
	return last
}

// hasMembers reports whether the JSON object obj has a member.
func hasMembers(obj string) bool {
	i := jsonkit.SkipSpace(obj, 1)
	return i < len(obj) && obj[i] != '}'
}

// AppendSlotJSON implements state.SlotAppender: the JSON encoding/json
// writes for s (strings escaped by jsonkit.AppendString), with stored
// chapters as they were stored.
func (s *State) AppendSlotJSON(dst []byte) ([]byte, error) {
	dst = append(dst, '{')
	sep := false
	if s.Topic != "" {
		dst = jsonkit.AppendString(append(dst, `"topic":`...), s.Topic)
		sep = true
	}
	if s.storedChapters != "" || len(s.Chapters) > 0 {
		if sep {
			dst = append(dst, ',')
		}
		dst, sep = append(dst, `"chapters":`...), true
		if s.storedChapters != "" {
			dst = append(dst, s.storedChapters...)
		} else {
			dst = append(dst, '[')
			for i := range s.Chapters {
				if i > 0 {
					dst = append(dst, ',')
				}
				var err error
				if dst, err = appendChapter(dst, &s.Chapters[i]); err != nil {
					return dst, err
				}
			}
			dst = append(dst, ']')
		}
	}
	for _, n := range []struct {
		key string
		v   int64
	}{{`"chapters_dropped":`, s.ChaptersDropped}, {`"calls_dropped":`, s.CallsDropped}} {
		if n.v == 0 {
			continue
		}
		if sep {
			dst = append(dst, ',')
		}
		dst, sep = strconv.AppendInt(append(dst, n.key...), n.v, 10), true
	}
	return append(dst, '}'), nil
}

func appendChapter(dst []byte, c *Chapter) ([]byte, error) {
	dst = jsonkit.AppendString(append(dst, `{"title":`...), c.Title)
	dst, err := jsonkit.AppendTime(append(dst, `,"started_at":`...), c.StartedAt)
	if err != nil {
		return dst, err
	}
	if len(c.Calls) > 0 {
		dst = append(dst, `,"calls":[`...)
		for i := range c.Calls {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendCall(dst, &c.Calls[i]); err != nil {
				return dst, err
			}
		}
		dst = append(dst, ']')
	}
	return append(dst, '}'), nil
}

func appendCall(dst []byte, n *CallNote) ([]byte, error) {
	dst = jsonkit.AppendString(append(dst, `{"name":`...), n.Name)
	if n.ID != "" {
		dst = jsonkit.AppendString(append(dst, `,"id":`...), n.ID)
	}
	dst, err := jsonkit.AppendTime(append(dst, `,"at":`...), n.At)
	if err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}
