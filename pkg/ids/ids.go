// Package ids holds the rules for the ids boxoffice takes from clients and
// tokens: the one place the gateway, auth, the notifier and the booking
// engine check them, so a malformed id is refused the same way everywhere.
// It imports nothing of boxoffice's.
package ids

import "strings"

// MaxLen is the longest user, seat or payment id; MaxEventLen the longest
// event id.
const (
	MaxLen      = 128
	MaxEventLen = 64
)

// Valid reports whether s may be used as a user, seat or payment id (or,
// more loosely than ValidEvent, an event id): 1 to MaxLen printable ASCII
// characters without spaces, braces or '|' (braces would break the Redis
// hash tag, '|' the outbox encoding).
func Valid(s string) bool {
	if len(s) == 0 || len(s) > MaxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c > '~' || c == '{' || c == '}' || c == '|' {
			return false
		}
	}
	return true
}

// ValidEvent reports whether id may name an event: 1 to MaxEventLen of
// A-Z a-z 0-9 . _ - (no '/', which could not be fetched as a path segment,
// nor anything a hash tag or a key would trip on). The one rule for every
// entry point: creation, the gateway's paths, queries and bodies, and the
// notifier. Every valid event id is Valid too.
func ValidEvent(id string) bool {
	if len(id) == 0 || len(id) > MaxEventLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ReservedUserPrefix begins the user ids the system gives buyers of its
// own (a box-office sale's buyer, booking.BoxOfficeBuyer): no token may
// name one, so no fan acts as such a buyer or reads its orders.
const ReservedUserPrefix = "box-office:"

// ValidUser reports whether s may name a fan (a token's subject): Valid,
// and not beginning with ReservedUserPrefix.
func ValidUser(s string) bool { return Valid(s) && !strings.HasPrefix(s, ReservedUserPrefix) }

// EventRule describes ValidEvent for error messages.
const EventRule = "1-64 characters of A-Z, a-z, 0-9, '.', '_' and '-'"
