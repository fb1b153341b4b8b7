package admission

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
// notification, the offer notification the notifier pushes over
// WebSocket, is also POSTed as JSON to a URL, for senders of e-mail or
// SMS. It is part of the offer's RabbitMQ side: a failure (no 2xx, no
// answer within offerHookTimeout) leaves that side to be announced again,
// so the receiver may get an offer twice and dedupes on the
// Idempotency-Key header (offer-<event>-<sequence>).

// offerHookTimeout bounds one POST.
const offerHookTimeout = 5 * time.Second

var offerHookClient = &http.Client{Timeout: offerHookTimeout}

// postOffer POSTs n to the offer webhook, if one is set.
func (a *Announcer) postOffer(n messages.Notification) error {
	if a == nil || a.offerHook == "" {
		return nil
	}
	body, err := json.Marshal(n)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), offerHookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.offerHook, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("offer webhook: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "offer-"+n.EventID+"-"+strconv.FormatInt(n.Sequence, 10))
	resp, err := offerHookClient.Do(req)
	if err != nil {
		return fmt.Errorf("offer webhook: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("offer webhook: %s", resp.Status)
	}
	return nil
}
