package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/fairness"
)

// FromKafka reads event's record from the Kafka topics, as an analytics
// team or a regulator with access to them can: the admission log from
// admission_logged (each entry once, whatever its copies) and the draw's
// inputs from queue_randomized. Kafka carries no signed heads and not the
// closed list of a draw: when the event was drawn, the list is read from
// gateway's /draw and must have Kafka's seed, commitment and digest; the
// key set (for a receipt) is read from gateway too. gateway "" reads
// nothing over HTTP.
func FromKafka(ctx context.Context, brokers []string, client events.ClientConfig, c *http.Client, gateway, event string) (Record, error) {
	rec := Record{EventID: event, Source: SourceKafka}
	byIndex := map[int64]fairness.Entry{}
	err := events.ReadTopic(ctx, brokers, client, events.TopicAdmissionLogged, func(e events.Event) error {
		if e.EventID != event {
			return nil
		}
		en, err := parseLogged(e)
		if err != nil {
			return err
		}
		if was, ok := byIndex[en.Index]; ok && was != en {
			return fmt.Errorf("the Kafka topic holds two different entries %d of the admission log: %+v and %+v", en.Index, was, en)
		}
		byIndex[en.Index] = en
		return nil
	})
	if err != nil {
		return Record{}, err
	}
	for _, en := range byIndex {
		rec.Log = append(rec.Log, en)
	}
	slices.SortFunc(rec.Log, func(a, b fairness.Entry) int { return int(a.Index - b.Index) })
	rec.Draw = fairness.DrawDoc{EventID: event, Status: fairness.DrawNone, Entries: []fairness.DrawEntry{}}
	err = events.ReadTopic(ctx, brokers, client, events.TopicQueueRandomized, func(e events.Event) error {
		if e.EventID != event {
			return nil
		}
		f := fields(e.Reason)
		d := fairness.DrawDoc{EventID: event, Phase: f["phase"], Status: fairness.DrawDrawn, Seed: f["seed"], Commit: f["commit"],
			Digest: f["digest"], Count: e.Sequence, Entries: []fairness.DrawEntry{}}
		if r := f["beacon_round"]; r != "" {
			var err error
			if d.Round, err = strconv.ParseInt(r, 10, 64); err != nil || d.Round <= 0 {
				return fmt.Errorf("queue_randomized of %s: beacon_round %q is not a positive integer", event, r)
			}
			if d.Source, err = url.QueryUnescape(f["beacon_source"]); err != nil {
				return fmt.Errorf("queue_randomized of %s: beacon_source: %w", event, err)
			}
			d.Beacon.Value, d.Beacon.Signature = f["beacon"], f["beacon_signature"]
		}
		if d.Phase != "" {
			// a later phase's draw (its list and base from /draw?phase=)
			for _, o := range rec.PhaseDraws {
				if o.Phase == d.Phase && (o.Seed != d.Seed || o.Digest != d.Digest || o.Count != d.Count || o.Beacon != d.Beacon) {
					return fmt.Errorf("the Kafka topic holds two different draws of %s's phase %s", event, d.Phase)
				}
			}
			if !slices.ContainsFunc(rec.PhaseDraws, func(o fairness.DrawDoc) bool { return o.Phase == d.Phase }) {
				rec.PhaseDraws = append(rec.PhaseDraws, d)
			}
			return nil
		}
		if rec.Draw.Status == fairness.DrawDrawn && (d.Seed != rec.Draw.Seed || d.Digest != rec.Draw.Digest || d.Count != rec.Draw.Count || d.Beacon != rec.Draw.Beacon) {
			return fmt.Errorf("the Kafka topic holds two different draws of %s", event)
		}
		rec.Draw = d
		return nil
	})
	if err != nil {
		return Record{}, err
	}
	if gateway == "" {
		if rec.Draw.Status == fairness.DrawDrawn || len(rec.PhaseDraws) > 0 {
			return Record{}, fmt.Errorf("%s was drawn: the draw's list is not on Kafka, give -gateway to read it from /draw (it is checked against Kafka's digest)", event)
		}
		return rec, nil
	}
	if rec.JWKS, err = get(ctx, c, gateway+"/.well-known/jwks.json"); err != nil {
		return Record{}, err
	}
	if rec.Draw.Status == fairness.DrawDrawn {
		d, err := fetchDraw(ctx, c, gateway, event, "")
		if err != nil {
			return Record{}, err
		}
		if d.Seed != rec.Draw.Seed || d.Commit != rec.Draw.Commit || d.Digest != rec.Draw.Digest || d.Count != rec.Draw.Count {
			return Record{}, fmt.Errorf("the gateway's draw (digest %s) is not the one on Kafka (digest %s)", short(d.Digest), short(rec.Draw.Digest))
		}
		if d.Beacon != rec.Draw.Beacon {
			return Record{}, fmt.Errorf("the gateway's draw (beacon round %d, value %s) is not the one on Kafka (round %d, value %s)",
				d.Round, short(d.Beacon.Value), rec.Draw.Round, short(rec.Draw.Beacon.Value))
		}
		rec.Draw.Entries = d.Entries
	}
	for i, k := range rec.PhaseDraws {
		d, err := fetchDraw(ctx, c, gateway, event, k.Phase)
		if err != nil {
			return Record{}, err
		}
		if d.Seed != k.Seed || d.Commit != k.Commit || d.Digest != k.Digest || d.Count != k.Count {
			return Record{}, fmt.Errorf("the gateway's draw of phase %s (digest %s) is not the one on Kafka (digest %s)", k.Phase, short(d.Digest), short(k.Digest))
		}
		if d.Beacon != k.Beacon {
			return Record{}, fmt.Errorf("the gateway's draw of phase %s (beacon round %d, value %s) is not the one on Kafka (round %d, value %s)",
				k.Phase, d.Round, short(d.Beacon.Value), k.Round, short(k.Beacon.Value))
		}
		rec.PhaseDraws[i].Entries, rec.PhaseDraws[i].Base = d.Entries, d.Base
	}
	return rec, nil
}

// parseLogged reads an admission_logged fact's entry (docs/events-kafka.md).
func parseLogged(e events.Event) (fairness.Entry, error) {
	f := fields(e.Reason)
	seq, err := strconv.ParseInt(f["seq"], 10, 64)
	if err != nil || f["user_hash"] == "" || f["reason"] == "" || f["prev"] == "" || f["hash"] == "" {
		return fairness.Entry{}, fmt.Errorf("admission_logged %d of %s: reason %q is not seq=… user_hash=… reason=… prev=… hash=…", e.Sequence, e.EventID, e.Reason)
	}
	return fairness.Entry{Index: e.Sequence, Seq: seq, UserHash: f["user_hash"], AtMs: e.OccurredAt.UnixMilli(),
		Reason: f["reason"], Prev: f["prev"], Hash: f["hash"]}, nil
}

// fields reads "k=v k=v" into a map.
func fields(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Fields(s) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}
