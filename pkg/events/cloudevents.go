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

// cloudEventHeaders are the ce_* headers of e: specversion, id (the
// envelope id), source (the deployment), type, time (occurred_at, RFC
// 3339), subject (the concert, event_id) and the value's content-type.
// They derive from the envelope only, so a republished fact carries the
// same headers.
func cloudEventHeaders(e Event) []kafka.Header {
	return []kafka.Header{
		{Key: "ce_specversion", Value: []byte(CloudEventsSpecVersion)},
		{Key: "ce_id", Value: []byte(e.ID)},
		{Key: "ce_source", Value: []byte(e.Source)},
		{Key: "ce_type", Value: []byte(CloudEventsTypePrefix + e.Type)},
		{Key: "ce_time", Value: []byte(e.OccurredAt.UTC().Format(occurredAtLayout))},
		{Key: "ce_subject", Value: []byte(e.EventID)},
		{Key: "content-type", Value: []byte(ContentType)},
	}
}
