// Package openaichat is the OpenAI Chat Completions wire API (POST
// /v1/chat/completions, JSON or SSE): its Descriptor (api.go), codec
// (codec.go), stream decoder (stream.go), splicer and continuation
// (splice.go, continue.go) and turn codec (turn.go). What it shares with the
// Responses API lives in package rewrite (openai.go, turnedit_openai.go); it
// imports no other API package.
package openaichat
