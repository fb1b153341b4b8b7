// Package browser holds the gateway's browser test: headless Chromium,
// driven with chromedp, plays one user's whole journey through the web
// pages against every service running as a process (pkg/stacktest) — a
// full room, the waiting room, "your turn" pushed over the notifier's
// WebSocket when another user's hold is cancelled, the seat map, the
// sandbox's hosted checkout and the confirmation — and saves a screenshot
// of each step under test-output/browser/ at the repository root. The test
// installs Debian's chromium with scripts/ensure-chromium.sh when it is
// missing and fails, never skips, when it cannot.
package browser
