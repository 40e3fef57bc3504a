// Package routing holds the routing rules that pick a model and an
// upstream per request (docs/routing.md): their one-line syntax (ParseRule,
// ParseUpstream), the table that validates them together (New) and picks
// the first rule a request matches (Table.Match), what a request is made of
// for matching (Request: kind, estimated input size, tool phase), and the
// session stickiness that keeps a session on the model and upstream it
// began with (Decide).
//
// It knows no wire format: the proxy describes each request with the
// neutral view (rewrite/conv) and the route's descriptor.
package routing
