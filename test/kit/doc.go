// Package kit is the shared test kit: one agent driver per wire API behind
// one interface (Driver, registered in one table keyed by the API's name),
// a Prometheus text-format reader for /metrics, and the small pieces of
// test plumbing every suite needs (loopback listeners, the mock provider,
// Redis lookup, waiting for a port), and real infrastructure started on
// loopback for the scale suites: a Redis Cluster (rediscluster.go), Redis
// Sentinel (redissentinel.go) and an nginx balancer (nginx.go).
//
// It is an ordinary package so tests of any package can import it. Per-API
// knowledge that tests need (request shapes, reply and history readers,
// error shapes, stop values, metric route labels) lives only in the
// drivers; tests iterate Drivers() or look one up with Lookup or Get and
// never switch on an API's name.
package kit
