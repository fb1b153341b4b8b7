// Package fault holds the fault-tolerance suite: the services run as real
// processes (pkg/stacktest) behind fault proxies (toxiproxy) to Redis,
// RabbitMQ, Kafka and PostgreSQL, a sale runs while one fault after another
// hits them (kill -9 and restart of each service, a second instance killed,
// broker outages, resets, latency, half-open connections, poison messages),
// and after each fault the suite checks that nothing was lost or done twice.
// See docs/testing.md (fault matrix). It has no code besides the tests.
package fault
