// Package browser holds the gateway's browser test: headless Chromium,
// driven with chromedp, plays the fans' journeys through the web pages
// against every service running as a process (pkg/stacktest) — the
// waiting room, "your turn" pushed over the notifier's WebSocket, the seat
// map by keyboard, the sandbox's hosted checkout and the confirmation; the
// same over HTTP alone with the notifier unreachable; a stale token; a
// stalled socket; a late payment's refund note; leave and release; the
// largest seat map on a phone; a payment provider outage's paused timer —
// and runs axe-core on every state. It saves a screenshot of each step
// under test-output/browser/ at the repository root. The test installs Debian's chromium (scripts/ensure-chromium.sh)
// and axe-core (scripts/ensure-axe.sh) when they are missing and fails,
// never skips, when it cannot. TestLighthouse is opt-in
// (BOXOFFICE_LIGHTHOUSE=1).
package browser
