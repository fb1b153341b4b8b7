// Package httpapi holds the HTTP pieces shared by boxoffice's services:
// the one JSON error format with a machine-readable code
// ({"statusCode","error","code","message","timestamp","path"}), JSON body
// binding that turns every bad body into a 400, the request-id, metrics,
// authentication, browser-protection and panic-recovery middleware of the
// gin services, and the listener every port serves through (one header
// limit, pre-handler errors in the JSON format). The mapping of the
// booking engine's errors to statuses is pkg/bookinghttp; the gateway's
// fasthttp server is its own (services/gateway/internal/fastserver).
//
// Contract: nothing a client sends produces a 500. A 500 means a bug (a
// recovered panic); an unavailable dependency (Redis, RabbitMQ, Kafka) is a
// 503 so that clients and payment providers retry.
package httpapi
