package events

import "github.com/segmentio/kafka-go"

// CloudEvents 1.0 Kafka protocol binding, binary content mode: the event's
// attributes travel as ce_* headers and the message value is the event's
// data, here the whole JSON envelope (so a reader that knows nothing of
// CloudEvents loses nothing). docs/events-kafka.md has the mapping.
const (
	// CloudEventsSpecVersion is the ce_specversion header's value.
	CloudEventsSpecVersion = "1.0"
	// CloudEventsTypePrefix starts ce_type: "boxoffice.<type>".
	CloudEventsTypePrefix = "boxoffice."
	// ContentType is the content-type header: the value is JSON.
	ContentType = "application/json"
)

// The constant headers' values, shared by every message.
var (
	specVersionValue = []byte(CloudEventsSpecVersion)
	contentTypeValue = []byte(ContentType)
)

// cloudEventHeaders returns the headers of e (at is its occurred_at as
// the envelope has it) and the message key (event_id). The headers are id
// and type (the envelope's, for routers), then the ce_* headers:
// specversion, id (the envelope id), source (the deployment), type, time
// (occurred_at, RFC 3339), subject (the concert, event_id) and the value's
// content-type; then request_id when requestID is not "". They derive from
// the envelope only, so a republished fact carries the same headers. Every
// value is a slice of one buffer or of the envelope (a fact goes to Kafka
// on every join: one allocation, not nine, and the time formatted once).
func cloudEventHeaders(e Event, at []byte, requestID string) ([]kafka.Header, []byte) {
	buf := make([]byte, 0, len(e.ID)+len(e.Source)+len(CloudEventsTypePrefix)+len(e.Type)+
		len(e.EventID)+len(requestID))
	var id, source, ceType, subject, rid []byte
	buf, id = appendPart(buf, e.ID)
	buf, source = appendPart(buf, e.Source)
	start := len(buf)
	buf = append(append(buf, CloudEventsTypePrefix...), e.Type...)
	ceType = buf[start:len(buf):len(buf)]
	buf, subject = appendPart(buf, e.EventID)
	_, rid = appendPart(buf, requestID)
	h := make([]kafka.Header, 0, 10)
	h = append(h,
		kafka.Header{Key: "id", Value: id},
		kafka.Header{Key: "type", Value: ceType[len(CloudEventsTypePrefix):]},
		kafka.Header{Key: "ce_specversion", Value: specVersionValue},
		kafka.Header{Key: "ce_id", Value: id},
		kafka.Header{Key: "ce_source", Value: source},
		kafka.Header{Key: "ce_type", Value: ceType},
		kafka.Header{Key: "ce_time", Value: at},
		kafka.Header{Key: "ce_subject", Value: subject},
		kafka.Header{Key: "content-type", Value: contentTypeValue},
	)
	if requestID != "" {
		h = append(h, kafka.Header{Key: HeaderRequestID, Value: rid})
	}
	return h, subject
}

// appendPart appends s to buf and returns buf and the part appended, with
// no room to grow into what follows.
func appendPart(buf []byte, s string) ([]byte, []byte) {
	start := len(buf)
	buf = append(buf, s...)
	return buf, buf[start:len(buf):len(buf)]
}
