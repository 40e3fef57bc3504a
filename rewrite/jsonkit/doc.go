// Package jsonkit is shepherd's JSON toolkit: a validator faster than
// encoding/json's on agent-sized bodies (Valid), a one-pass index of a
// body's top level (ValidIndexed), iteration that skips values by their
// brackets and quotes (SkipValue, EachElement, Members), byte-level edits
// that leave every byte outside the edited spot identical (Splice,
// SetMember, AppendElements), and JSON string escaping (AppendString).
//
// It imports nothing of the project, so the codecs, the hooks and the mock
// provider can all build on it. Results from gjson are read without
// copying where a helper's name says so (UnsafeString) and copied where a
// value outlives the body (OwnedString, OwnedRaw).
package jsonkit
