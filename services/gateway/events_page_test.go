package main

import (
	"fmt"
	"net/http"
	"testing"
)

// TestListEventsPages: GET /api/events is paged by event id; walking the
// pages with next returns every event once, in order, with its price.
func TestListEventsPages(t *testing.T) {
	hs := newHarness(t, false)
	var ids []string
	for i := range 5 {
		id := fmt.Sprintf("ev%d", i)
		hs.createEvent(map[string]any{"id": id, "rows": 1, "seats_per_row": 2})
		ids = append(ids, id)
	}
	var got []string
	after, pages := "", 0
	for {
		path := "/api/events?limit=2"
		if after != "" {
			path += "&after=" + after
		}
		r := hs.do("GET", path, "", nil)
		if r.code != http.StatusOK {
			t.Fatalf("GET %s: %s", path, r.raw)
		}
		pages++
		evs, _ := r.body["events"].([]any)
		for _, e := range evs {
			m := e.(map[string]any)
			got = append(got, m["id"].(string))
			if m["price_cents"] == nil {
				t.Errorf("event %v has no price_cents", m["id"])
			}
		}
		after = r.str("next")
		if after == "" {
			break
		}
		if pages > 5 {
			t.Fatalf("pages never end: %v", got)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(ids) || pages != 3 {
		t.Fatalf("paged events %v in %d pages, want %v in 3", got, pages, ids)
	}
	if r := hs.do("GET", "/api/events?limit=5", "", nil); r.str("next") != "" {
		t.Errorf("a full last page has next: %s", r.raw)
	}
	for _, bad := range []string{"0", "101", "x"} {
		want(t, hs.do("GET", "/api/events?limit="+bad, "", nil), http.StatusBadRequest, "invalid_argument")
	}
}
