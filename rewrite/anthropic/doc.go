// Package anthropic is the Anthropic Messages wire API (POST /v1/messages,
// JSON or SSE, and count_tokens): its Descriptor (api.go), the codec that
// parses and edits its bodies (codec.go), the stream decoder (stream.go,
// stream_fast.go), the splicer and continuation (splice.go, continue.go) and
// the turn codec (turn.go). It builds on package rewrite's shared machinery
// and imports no other API package.
package anthropic
