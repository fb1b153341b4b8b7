// Command verify checks what a sale published about its fairness
// (docs/fairness.md): it fetches an event's draw, admission log and key
// set from a gateway and checks that the draw recomputes from its
// committed seed and closed list, that the log's hash chain links, that
// its signed head verifies against the key set and matches the log, and
// that every admission came in join order (the pre-queue in its draw's
// order first). Given a join receipt (the join's, or the page's download), it also counts
// how many who joined later were admitted earlier.
//
//	go run ./verify -gateway http://localhost:8080 -event tour-2026
//	go run ./verify -gateway http://localhost:8080 -event tour-2026 -receipt "$(cat receipt-tour-2026-41873.json)"
//	go run ./verify -event tour-2026 -save record.json      # keep what was fetched
//	go run ./verify -event tour-2026 -record record.json    # check a saved record
//	go run ./verify -kafka localhost:9092 -event tour-2026  # the log and the draw from Kafka
//
// It exits 0 when everything checks, 1 with what failed.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/fairness"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
)

func main() {
	gateway := flag.String("gateway", "http://localhost:8080", "the gateway's base URL")
	event := flag.String("event", "", "the event id")
	issuer := flag.String("issuer", "boxoffice", "the key set's issuer (PASS_ISSUER)")
	receipt := flag.String("receipt", "", "a receipt to check (the join receipt, JSON), optional")
	save := flag.String("save", "", "write the fetched record to this file")
	record := flag.String("record", "", "check this saved record instead of fetching")
	brokers := flag.String("kafka", "", "read the log and the draw from these Kafka brokers (comma-separated) instead of the gateway")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *gateway, *event, *issuer, *receipt, *save, *record, *brokers); err != nil {
		fmt.Fprintln(os.Stderr, "verify:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer, gateway, event, issuer, receipt, save, record, brokers string) error {
	var rec Record
	switch {
	case record != "":
		b, err := os.ReadFile(record)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			return fmt.Errorf("record %s: %w", record, err)
		}
	case event == "":
		return errors.New("-event is required")
	case brokers != "":
		var err error
		if rec, err = FromKafka(ctx, strings.Split(brokers, ","), events.ClientConfig{}, http.DefaultClient, gateway, event); err != nil {
			return err
		}
	default:
		var err error
		if rec, err = Fetch(ctx, http.DefaultClient, gateway, event); err != nil {
			return err
		}
	}
	if save != "" {
		b, _ := json.MarshalIndent(rec, "", " ")
		if err := os.WriteFile(save, b, 0o644); err != nil {
			return err
		}
	}
	now := time.Now()
	r, err := Check(rec, issuer, now)
	if err != nil {
		return err
	}
	signed := "signed head covers " + strconv.FormatInt(r.SignedSize, 10)
	if rec.SignedHead == "" {
		signed = "no signed head (Kafka carries none)"
	}
	draws := rec.Draw.Status
	for _, d := range rec.PhaseDraws {
		draws += ", phase " + d.Phase + " " + d.Status
	}
	fmt.Fprintf(out, "event %s: draw %s (%d pre-queued), %d admissions, chain intact, %s, 0 overtakes\n",
		rec.EventID, draws, r.Drawn, r.Entries, signed)
	if receipt != "" {
		rr, err := CheckReceipt(rec, receipt, issuer, now)
		if err != nil {
			return err
		}
		where := "not admitted yet"
		if rr.Admitted > 0 {
			where = "admitted as entry " + strconv.FormatInt(rr.Admitted, 10)
		}
		fmt.Fprintf(out, "receipt: join %d, %s, %d who joined later were admitted earlier\n", rr.Seq, where, rr.Overtakes)
		if rr.Overtakes > 0 {
			return fmt.Errorf("%d who joined after join %d were admitted before it", rr.Overtakes, rr.Seq)
		}
	}
	return nil
}

// Fetch reads event's record from a gateway: the key set, every page of
// the draw and of the admission log.
func Fetch(ctx context.Context, c *http.Client, gateway, event string) (Record, error) {
	rec := Record{EventID: event}
	var err error
	if rec.JWKS, err = get(ctx, c, gateway+"/.well-known/jwks.json"); err != nil {
		return Record{}, err
	}
	base := gateway + "/api/events/" + url.PathEscape(event)
	if rec.Draw, err = fetchDraw(ctx, c, gateway, event, ""); err != nil {
		return Record{}, err
	}
	for _, phase := range rec.Draw.Phases {
		d, err := fetchDraw(ctx, c, gateway, event, phase)
		if err != nil {
			return Record{}, err
		}
		rec.PhaseDraws = append(rec.PhaseDraws, d)
	}
	for after := int64(0); ; {
		var d fairness.LogDoc
		if err := getJSON(ctx, c, base+"/admissions?after="+strconv.FormatInt(after, 10), &d); err != nil {
			return Record{}, err
		}
		rec.Log = append(rec.Log, d.Entries...)
		if !d.Full {
			rec.SignedHead = d.SignedHead
			break
		}
		after = d.Entries[len(d.Entries)-1].Index
	}
	return rec, nil
}

// fetchDraw reads every page of event's draw from a gateway: the first
// phase's pre-queue (phase "") or a later phase's.
func fetchDraw(ctx context.Context, c *http.Client, gateway, event, phase string) (fairness.DrawDoc, error) {
	var draw fairness.DrawDoc
	base := gateway + "/api/events/" + url.PathEscape(event) + "/draw?"
	if phase != "" {
		base += "phase=" + url.QueryEscape(phase) + "&"
	}
	for page := int64(0); ; {
		var d fairness.DrawDoc
		if err := getJSON(ctx, c, base+"page="+strconv.FormatInt(page, 10), &d); err != nil {
			return fairness.DrawDoc{}, err
		}
		entries, phases := append(draw.Entries, d.Entries...), draw.Phases
		if page == 0 {
			phases = d.Phases // (on the first page only)
		}
		draw, draw.Entries, draw.Phases = d, entries, phases
		if d.NextPage == nil {
			return draw, nil
		}
		page = *d.NextPage
	}
}

func getJSON(ctx context.Context, c *http.Client, u string, v any) error {
	b, err := get(ctx, c, u)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}

func get(ctx context.Context, c *http.Client, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e httpapi.Error
		_ = json.Unmarshal(b, &e)
		return nil, fmt.Errorf("GET %s: %s: %s", u, resp.Status, e.Message)
	}
	return b, nil
}
