// Package e2e holds the end-to-end test of the booking journey: every
// service as its own process on the real Redis, RabbitMQ (its own vhost)
// and an embedded Kafka, driven over HTTP like real users and a real
// payment provider would. It has no code of its own besides the test.
package e2e
