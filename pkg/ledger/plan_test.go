package ledger_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/ledger/ledgertest"
)

// TestSeatsTakenProbesBySeat: the check that a sale's seats are not sold
// to another order reads the seats it asks about, not every seat the
// event sold, whatever the planner's statistics say: none at all (the
// tables as the migrations left them, never analyzed: autovacuum off, or
// not run yet during an on-sale whose orders arrive faster than it), or
// those of a table with two sales. Before, without statistics it read
// every sold seat of the event for each sale, and the on-sale
// benchmark's webhooks slowed down with every seat sold.
func TestSeatsTakenProbesBySeat(t *testing.T) {
	t.Parallel()
	for _, analyze := range []bool{false, true} {
		t.Run(fmt.Sprint("analyze=", analyze), func(t *testing.T) {
			url := ledgertest.URL(t)
			l := ledgertest.Open(t, url)
			ctx := context.Background()
			for i := range 2 {
				if _, err := l.RecordSale(ctx, ledger.Sale{PaymentID: fmt.Sprint("p", i), EventID: "e", UserID: fmt.Sprint("u", i), SeatID: fmt.Sprint("S", i), Sequence: int64(i + 1)}); err != nil {
					t.Fatal(err)
				}
			}
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			// the statistics of a table with two sales, then 3,000 more
			if analyze {
				if _, err := conn.Exec(ctx, "ANALYZE orders; ANALYZE order_seats"); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := conn.Exec(ctx, `INSERT INTO orders (order_id, payment_id, event_id, user_id, seat_id, sequence, amount, currency, status)
		SELECT 'o' || i, 'q' || i, 'e', 'v' || i, 'T' || i, i + 10, 5000, 'EUR', 'completed' FROM generate_series(1, 3000) i;
		INSERT INTO order_seats (order_id, position, event_id, seat_id, price_cents, status)
		SELECT 'o' || i, 0, 'e', 'T' || i, 5000, 'completed' FROM generate_series(1, 3000) i`); err != nil {
				t.Fatal(err)
			}
			for _, seats := range [][]string{{"T1500"}, {"X1"}, {"T1", "T2999", "X2", "X3"}} {
				var plan []map[string]any
				q := "EXPLAIN (ANALYZE, FORMAT JSON) SELECT " + ledger.SeatsTakenSQL("$1", "$2", "$3")
				if err := conn.QueryRow(ctx, q, "p-new", "e", seats).Scan(&plan); err != nil {
					t.Fatal(err)
				}
				var read float64 // rows the order_seats scans produced or filtered out
				var walk func(n map[string]any)
				walk = func(n map[string]any) {
					if n["Relation Name"] == "order_seats" {
						loops, _ := n["Actual Loops"].(float64)
						rows, _ := n["Actual Rows"].(float64)
						removed, _ := n["Rows Removed by Filter"].(float64)
						read += loops*rows + removed
					}
					kids, _ := n["Plans"].([]any)
					for _, k := range kids {
						walk(k.(map[string]any))
					}
				}
				walk(plan[0]["Plan"].(map[string]any))
				if read > float64(len(seats)) {
					b, _ := json.MarshalIndent(plan, "", " ")
					t.Errorf("seats %v: order_seats rows read %v, want at most one per seat; plan:\n%s", seats, read, b)
				}
			}
			// and the check still answers: a seat sold to another order is taken
			for seats, want := range map[string]bool{"{T7}": true, "{X9}": false, "{X9,T8}": true} {
				var got bool
				if err := conn.QueryRow(ctx, "SELECT "+ledger.SeatsTakenSQL("$1", "$2", "$3"), "p-new", "e", seats).Scan(&got); err != nil || got != want {
					t.Errorf("seats %s taken = %v (%v), want %v", seats, got, err, want)
				}
			}
			var got bool
			if err := conn.QueryRow(ctx, "SELECT "+ledger.SeatsTakenSQL("$1", "$2", "$3"), "q7", "e", "{T7}").Scan(&got); err != nil || got {
				t.Errorf("its own order's seat counts as taken: %v %v", got, err)
			}
		})
	}
}
