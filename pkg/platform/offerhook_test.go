package platform

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/messages"
)

// TestOfferWebhook: the hook POSTs the offer as JSON with its idempotency
// key, a non-2xx answer is an error, and no URL is no hook.
func TestOfferWebhook(t *testing.T) {
	var got messages.Notification
	var key string
	status := http.StatusNoContent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&got)
		key = r.Header.Get("Idempotency-Key")
		w.WriteHeader(status)
	}))
	defer srv.Close()
	hook := offerWebhook(srv.URL)
	n := messages.Notification{Type: messages.NotifyOffer, EventID: "evt", UserID: "u7", Sequence: 42, SeatID: "A1"}
	if err := hook(n); err != nil || got != n || key != "offer-evt-42" {
		t.Fatalf("posted %+v key %q: %v", got, key, err)
	}
	status = http.StatusBadGateway
	if err := hook(n); err == nil {
		t.Fatal("a 502 is no error")
	}
	if offerWebhook("") != nil {
		t.Fatal("a hook without a URL")
	}
}
