// Node harness for static/app.js (run by TestYourTurnWhilePaying): a stub
// DOM and WebSocket, then notifier messages, checking which panel shows.
// Usage: node your_turn.js path/to/app.js
"use strict";
const fs = require("fs");
const vm = require("vm");

const els = new Map();
function el(sel) {
  if (!els.has(sel)) {
    els.set(sel, { sel, hidden: true, textContent: "", disabled: false, dataset: {}, innerHTML: "", checked: false,
      style: { setProperty() {} }, children: [], appendChild(c) { this.children.push(c); }, append() {},
      replaceChildren() { this.children = []; }, querySelector: () => el(sel + " *"), querySelectorAll: () => [],
      addEventListener() {}, setAttribute() {}, focus() {}, scrollIntoView() {}, remove() {}, contains: () => false });
  }
  return els.get(sel);
}
let socket = null;
class FakeWebSocket { constructor(url) { this.url = url; socket = this; } close() {} }
const storage = new Map([["bo_user", "web-test"], ["bo_token", "tok"]]);
const ctx = {
  console, setTimeout: () => 0, clearTimeout: () => {}, setInterval: () => 0, Date, Math, JSON, URLSearchParams, Promise, Error,
  performance: { mark() {}, measure() {} }, requestAnimationFrame: () => 0, getComputedStyle: () => ({ fontSize: "16px" }),
  sessionStorage: { getItem: () => null, setItem() {} },
  location: { search: "?event_id=e1", protocol: "http:", hostname: "localhost", origin: "http://localhost" },
  localStorage: { getItem: (k) => storage.get(k) ?? null, setItem: (k, v) => storage.set(k, v), removeItem: (k) => storage.delete(k) },
  document: { querySelector: el, querySelectorAll: () => [], createElement: (t) => el("new " + t + Math.random()), body: { dataset: {} },
    documentElement: {}, addEventListener() {}, hidden: false, title: "" },
  fetch: async (path) => ({ ok: true, status: 200, json: async () => (path.startsWith("/api/events/") ? { id: "e1", name: "E" } : { event_id: "e1", total: 0, available: 0, held: 0, sold: 0, sections: [], seats: [] }) }),
  WebSocket: FakeWebSocket,
};
ctx.window = ctx;
ctx.addEventListener = () => {};
vm.createContext(ctx);
vm.runInContext(fs.readFileSync(process.argv[2], "utf8"), ctx);

const shown = () => ["#panel-join", "#panel-waiting", "#panel-turn", "#panel-pending", "#panel-done"].filter((p) => !el(p).hidden);
const send = (m) => socket.onmessage({ data: JSON.stringify(m) });
function expect(what, panel) {
  const s = shown();
  if (s.length !== 1 || s[0] !== panel) { console.error(`${what}: panels ${JSON.stringify(s)}, want ${panel}`); process.exit(1); }
}
setImmediate(async () => {
  await new Promise((r) => setImmediate(r));
  if (!socket) { console.error("no WebSocket opened", el("#error").textContent); process.exit(1); }
  // back from the checkout: the notifier's snapshot says payment_pending
  send({ type: "your_turn", event_id: "e1", state: "payment_pending", sequence: 3, seat_id: "B3", expire_at_ms: Date.now() + 60000 });
  expect("snapshot in payment", "#panel-pending");
  // the outbox re-announces the admission (after a broker outage)
  send({ type: "your_turn", event_id: "e1", user_id: "web-test", sequence: 3, expire_at_ms: Date.now() + 60000 });
  expect("repeated your_turn while paying", "#panel-pending");
  // an older join's your_turn
  send({ type: "your_turn", event_id: "e1", user_id: "web-test", sequence: 2, expire_at_ms: Date.now() + 60000 });
  expect("older your_turn", "#panel-pending");
  // the payment failed; the user joins again and is admitted: a new turn
  send({ type: "payment_failed", event_id: "e1", user_id: "web-test", reason: "declined" });
  expect("payment failed", "#panel-done");
  send({ type: "your_turn", event_id: "e1", user_id: "web-test", sequence: 5, expire_at_ms: Date.now() + 60000 });
  expect("a new join's turn", "#panel-turn");
  // waiting when the phase ended (on_phase_change leave): told, and Join again
  send({ type: "state", state: "phase_ended" });
  expect("the phase ended", "#panel-join");
  if (!el("#join-note").textContent.includes("has ended")) { console.error("phase_ended note: " + el("#join-note").textContent); process.exit(1); }
  // the same told by the notifier while waiting: the leave's cancelled notification
  send({ type: "position", event_id: "e1", state: "waiting", sequence: 7, position: 3, served: 4, waiting: 5 });
  send({ type: "cancelled", event_id: "e1", user_id: "web-test", sequence: 7, reason: "phase_ended" });
  expect("told the phase ended", "#panel-join");
  if (!el("#join-note").textContent.includes("has ended")) { console.error("phase_ended notification: " + el("#join-note").textContent); process.exit(1); }
  console.log("ok");
});
