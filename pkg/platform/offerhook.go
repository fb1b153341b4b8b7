package platform

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/boxoffice/boxoffice/pkg/messages"
)

// The offer webhook (WAITLIST_WEBHOOK_URL): every waitlist offer's
// notification, the offer the notifier pushes over WebSocket, is also
// POSTed as JSON to a URL, for senders of e-mail or SMS
// (admission.WithOfferHook). A failure (no 2xx, no answer within
// offerHookTimeout) leaves the offer's announcement to be made again, so
// the receiver may get an offer twice: it dedupes on the Idempotency-Key
// header, offer-<event>-<sequence>.

// offerHookTimeout bounds one POST.
const offerHookTimeout = 5 * time.Second

// offerWebhook returns the hook POSTing to url; nil for "".
func offerWebhook(url string) func(messages.Notification) error {
	if url == "" {
		return nil
	}
	client := &http.Client{Timeout: offerHookTimeout}
	return func(n messages.Notification) error {
		body, err := json.Marshal(n)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), offerHookTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("offer webhook: %w", err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "offer-"+n.EventID+"-"+strconv.FormatInt(n.Sequence, 10))
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("offer webhook: %w", err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("offer webhook: %s", resp.Status)
		}
		return nil
	}
}
