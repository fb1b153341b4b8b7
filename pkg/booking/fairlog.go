package booking

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// The admission log's Redis side (docs/fairness.md "The admission log"):
// every admission appends "seq|at_ms|reason|user" to the event's alog list
// in the script that admits (lua/lib/room.lua log_admissions); pkg/fairness
// chains the entries and hashes the users with the event's fairness salt.

// FairSalt returns the event's fairness salt (hex, 32 random bytes, config
// fair_salt), made at its first use: the secret behind the public user
// hashes of the draw and the admission log (fairness.UserHash). Never
// published. ErrEventNotFound for an unknown event.
func (s *Store) FairSalt(ctx context.Context, eventID string) (string, error) {
	if err := checkIDs(eventID); err != nil {
		return "", err
	}
	cfg := s.eventKeys(eventID)[kConfig]
	v, err := s.rdb.HMGet(ctx, cfg, "fair_salt", "total").Result()
	if err != nil {
		return "", fmt.Errorf("fair salt: %w", err)
	}
	if salt, _ := v[0].(string); salt != "" {
		return salt, nil
	}
	if v[1] == nil {
		return "", ErrEventNotFound
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	if err := s.rdb.HSetNX(ctx, cfg, "fair_salt", hex.EncodeToString(b)).Err(); err != nil {
		return "", fmt.Errorf("fair salt: %w", err)
	}
	salt, err := s.rdb.HGet(ctx, cfg, "fair_salt").Result()
	if err != nil {
		return "", fmt.Errorf("fair salt: %w", err)
	}
	return salt, nil
}

// AdmissionLog returns the event's raw admission-log entries from index
// start (0-based), at most count, in admission order
// (fairness.ParseRaw reads one).
func (s *Store) AdmissionLog(ctx context.Context, eventID string, start, count int64) ([]string, error) {
	if err := checkIDs(eventID); err != nil {
		return nil, err
	}
	out, err := s.rdb.LRange(ctx, s.eventKeys(eventID)[kAlog], start, start+count-1).Result()
	if err != nil {
		return nil, fmt.Errorf("admission log: %w", err)
	}
	return out, nil
}

// AdmissionLogStart returns how many entries of the event's admission log
// come before its alog list, and the hash of the last of them (config
// alog_base and alog_head, set by RestoreEvent from the ledger's archive;
// 0 and "" for a log that began in this Redis).
func (s *Store) AdmissionLogStart(ctx context.Context, eventID string) (int64, string, error) {
	if err := checkIDs(eventID); err != nil {
		return 0, "", err
	}
	v, err := s.rdb.HMGet(ctx, s.eventKeys(eventID)[kConfig], "alog_base", "alog_head").Result()
	if err != nil {
		return 0, "", fmt.Errorf("admission log start: %w", err)
	}
	base, _ := v[0].(string)
	head, _ := v[1].(string)
	if base == "" {
		return 0, "", nil
	}
	n, err := strconv.ParseInt(base, 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("admission log start: alog_base %q: %w", base, err)
	}
	return n, head, nil
}

// AdmissionLogLen returns the number of entries in the event's admission
// log.
func (s *Store) AdmissionLogLen(ctx context.Context, eventID string) (int64, error) {
	if err := checkIDs(eventID); err != nil {
		return 0, err
	}
	n, err := s.rdb.LLen(ctx, s.eventKeys(eventID)[kAlog]).Result()
	if err != nil {
		return 0, fmt.Errorf("admission log: %w", err)
	}
	return n, nil
}

// AdmissionLogPublished returns how many of the event's admission-log
// entries are on Kafka (config alog_kafka; 0 when none).
func (s *Store) AdmissionLogPublished(ctx context.Context, eventID string) (int64, error) {
	if err := checkIDs(eventID); err != nil {
		return 0, err
	}
	n, err := s.rdb.HGet(ctx, s.eventKeys(eventID)[kConfig], "alog_kafka").Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("admission log published: %w", err)
	}
	return n, nil
}

// SetAdmissionLogPublished records that the event's admission-log entries
// up to index n are on Kafka. Publishers that race may set it back; the
// entries are then published again, with the same ids.
func (s *Store) SetAdmissionLogPublished(ctx context.Context, eventID string, n int64) error {
	if err := checkIDs(eventID); err != nil {
		return err
	}
	if err := s.rdb.HSet(ctx, s.eventKeys(eventID)[kConfig], "alog_kafka", n).Err(); err != nil {
		return fmt.Errorf("admission log published: %w", err)
	}
	return nil
}
