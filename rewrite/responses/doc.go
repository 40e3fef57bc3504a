// Package responses is the OpenAI Responses wire API (POST /v1/responses,
// JSON or SSE): its Descriptor (api.go), codec (codec.go), stream decoder
// (stream.go), splicer and continuation (splice.go, continue.go) and turn
// codec (turn.go). What it shares with Chat Completions lives in package
// rewrite (openai.go, turnedit_openai.go); it imports no other API package.
package responses
