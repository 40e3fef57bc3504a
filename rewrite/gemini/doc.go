// Package gemini is the Gemini generateContent wire API (…:generateContent
// and …:streamGenerateContent under /v1beta/ or /v1/, a JSON array or SSE):
// its Descriptor (api.go), codec (codec.go), stream decoder (stream.go),
// splicer and continuation (splice.go, continue.go), turn codec (turn.go)
// and the adoption of an agent's own call ids (replay_ids.go). It builds on
// package rewrite's shared machinery and imports no other API package.
package gemini
