package popularity

// DefaultPrefix is the key prefix when none is configured.
const DefaultPrefix = "bo"

// Every key of this package is built here. All carry the {popular} hash
// tag so that popularity_count touches one Redis Cluster slot.

// RankingKey is the ZSET of concerts (member event_id) by completed
// bookings (score).
func RankingKey(prefix string) string {
	return orDefault(prefix) + ":{popular}:ranking"
}

// SeenKey marks a booking_completed message (by envelope id) as counted.
func SeenKey(prefix, messageID string) string {
	return orDefault(prefix) + ":{popular}:seen:" + messageID
}

func orDefault(prefix string) string {
	if prefix == "" {
		return DefaultPrefix
	}
	return prefix
}
