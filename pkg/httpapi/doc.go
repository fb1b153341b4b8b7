// Package httpapi holds the HTTP pieces shared by boxoffice's gin services:
// the one JSON error format with a machine-readable code
// ({"statusCode","error","code","message","timestamp","path"}), the mapping
// of the booking engine's sentinel errors to HTTP statuses (with errors.Is,
// at the edge only), JSON body binding that turns every bad body into a 400,
// and the request-id, metrics and panic-recovery middleware. fast.go serves
// a service on fasthttp: its hottest routes natively (FastRoute, FastCtx,
// with the same error format, request id and metrics) and the rest on the
// gin engine.
//
// Contract: nothing a client sends produces a 500. A 500 means a bug (a
// recovered panic); an unavailable dependency (Redis, RabbitMQ, Kafka) is a
// 503 so that clients and payment providers retry.
package httpapi
