// boxoffice web pages: plain JavaScript, no build step. No inline script
// or event handler attributes anywhere (the gateway's Content-Security-Policy
// forbids them); config.js is a separate, deferred script.
//
// The event page has two channels to the same truth (docs/web.md):
//   - the notifier's WebSocket, for speed;
//   - GET /api/booking/position over HTTP: at once on opening, polled with
//     backoff and jitter while the socket is down, and as a liveness check
//     when the socket has been silent for a while;
//   - while waiting with the socket down, GET /api/events/{id}/progress
//     instead: the same document for every fan (a CDN may answer it), the
//     place computed from the fan's sequence as from the socket's
//     broadcast; the exact position only when the sequence is served, the
//     queue sold out, or a minute passed (presence).
// All feed one state machine, onMessage(): an HTTP answer is turned into
// the message the socket would have sent (fromPosition).
"use strict";
(() => {
  const $ = (s) => document.querySelector(s);
  const cfg = window.BOXOFFICE_CONFIG || {};
  const params = new URLSearchParams(location.search);
  const eventID = params.get("event_id");
  // The payment provider's return: ?payment_id=…&payment_status=paid|declined.
  const returned = { id: params.get("payment_id") || "", status: params.get("payment_status") || "" };
  // Timings in ms; a test may override them before the page loads
  // (window.BOXOFFICE_TIMING).
  const T = Object.assign({
    livenessMS: 15000, livenessJitterMS: 5000, // a socket silent this long is checked over HTTP
    pollMinMS: 2000, pollMaxMS: 15000, pollErrorMaxMS: 30000, // HTTP polling while the socket is down
    wsMinMS: 1000, wsMaxMS: 15000, // socket reconnect backoff
    eventRefreshMS: 60000, // event details while waiting (a pause also comes with the socket's position broadcast)
    roomEventRefreshMS: 5000, // event details in the room: a payment provider outage pauses the timer
    exactEveryMS: 600000, // the exact position while polling the progress document (abandonment: sooner)
    drawPendingMS: 4000, // the place asked for again while the draw is being made (backing off to pollMaxMS; plus up to half as much, spread)
  }, window.BOXOFFICE_TIMING || {});

  const S = {
    token: null, user: null, event: null, altcha: null, // altcha: a solved join challenge not used yet
    // state: null until the first answer, then a booking state (none,
    // waiting, active, seat_selected, payment_pending, completed, failed,
    // expired, cancelled, abandoned) or sold_out.
    state: null, seq: 0, firstAhead: null, exact: null, expireAtMS: 0, seat: null, paymentID: null,
    ws: null, wsOpen: false, wsBackoff: 1000, wsTimer: null,
    lastHeard: 0, lastWS: 0, lastLocal: 0, lastLiveness: 0, lastEventFetch: 0, wsDownAt: 0, lastMode: null,
    pollTimer: null, pollDelay: 2000, checking: false, checkFailed: false, tokenRenewed: false, lastExact: 0, tokenOK: null,
    seatsTimer: null, seatsGen: 0, lastCounts: "", seatIDs: "", focusID: null,
    rows: [], status: new Map(), seatEls: new Map(), rendered: new Map(), win: null,
    eta: null, lastAnnounced: { pos: null, at: 0 }, warned: {},
    // Orders of several seats: the seats held (the server's
    // answer; S.seat is the first), each seat's priced section, the
    // sections {name, price_cents, start, len} and their currency.
    held: [], sec: new Map(), prices: [], currency: "",
    // drawAtMS: the sales start while the user is pre-queued (the draw's
    // countdown), else 0; drawPending: after the start, while the draw is
    // being made (it may wait for a beacon round), when to ask again for
    // the place, else 0.
    drawAtMS: 0, drawPending: 0, drawPendingDelay: 0, drawNoteAsked: false,
    // The schedule's countdown (phaseCountdown): the boundary counted down
    // to ({at, text}, null: none), the minute last announced, and, after a
    // boundary, the phase the event should show and until when to re-read
    // it ({want, until, next}, null: none).
    phaseNext: null, phaseMin: 0, phaseReload: null,
    // etaSecs: the last ETA shown (null: none), which paces progress polls.
    etaSecs: null,
    // chance: the progress document's chance parameters (pkg/chance) and
    // when they were read; chanceWords: the words last shown.
    chance: null, chanceAt: 0, chanceFetching: false, chanceWords: "",
    // receipt: the join receipt of the current join (docs/admission-pass.md,
    // "The join receipt"), kept in localStorage across reloads;
    // receiptURL: its download's object URL.
    receipt: null, receiptURL: "",
  };

  function notifierURL() {
    if (cfg.notifierURL) return cfg.notifierURL;
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    return `${proto}//${location.hostname}:8082/ws`;
  }

  // ---- HTTP ----

  // api calls the gateway. A 401 (a stale or invalid stored token) renews
  // the token once and retries; a network failure throws code "network".
  // opts.cache is fetch's cache mode: "no-store" unless given (the seat map
  // uses "no-cache", revalidated against its ETag).
  // opts.anonymous sends no token (a document shared by every fan, which a
  // CDN may cache).
  async function api(method, path, body, opts = {}) {
    const headers = Object.assign({}, opts.headers);
    if (body) headers["Content-Type"] = "application/json";
    if (S.token && !opts.anonymous) headers.Authorization = "Bearer " + S.token;
    let r;
    try {
      r = await fetch(path, { method, headers, body: body ? JSON.stringify(body) : undefined, cache: opts.cache || "no-store" });
    } catch (_) {
      const e = new Error("network error"); e.code = "network"; throw e;
    }
    if (r.ok && headers.Authorization) S.tokenOK = S.token; // the servers accept it
    let data = null;
    try { data = await r.json(); } catch (_) { /* empty body */ }
    if (r.status === 401 && path !== "/api/auth/dev-token" && !opts.renewed) {
      await renewToken();
      return api(method, path, body, Object.assign({}, opts, { renewed: true }));
    }
    if (!r.ok) {
      const e = new Error((data && data.message) || r.statusText);
      e.status = r.status; e.code = (data && data.code) || (r.status >= 500 ? "unavailable" : "http_" + r.status);
      e.seatIDs = (data && Array.isArray(data.seat_ids)) ? data.seat_ids : null; // a 409 names the taken seats
      e.body = data || {};
      throw e;
    }
    return data;
  }

  // Development identity: a generated user id kept in localStorage and a
  // token from the gateway's dev-token endpoint.
  async function identity() {
    S.user = localStorage.getItem("bo_user");
    if (!S.user) {
      S.user = "web-" + Math.random().toString(36).slice(2, 10);
      localStorage.setItem("bo_user", S.user);
    }
    S.token = localStorage.getItem("bo_token");
    if (!S.token) {
      const t = await api("POST", "/api/auth/dev-token", { user_id: S.user });
      S.token = t.token;
      localStorage.setItem("bo_token", S.token);
    }
    $("#who").textContent = S.user;
  }
  async function renewToken() {
    localStorage.removeItem("bo_token");
    S.token = null;
    await identity();
    S.tokenRenewed = true;
  }

  // Friendly text for every error code the API returns (docs/http-api.md).
  const MESSAGES = {
    network: "We can't reach boxoffice right now. Check your connection; the page keeps trying.",
    not_sold_out: "Seats are still on sale: join the queue to buy one.",
    waitlist_disabled: "This event has no waitlist.",
    offer_expired: "The offer ran out; the seat went to the next fan.",
    offer_closed: "That offer was already answered.",
    offer_not_found: "That offer is no longer open.",
    not_your_offer: "That offer is someone else's.",
    unauthorized: "Your session expired. Reload the page to continue.",
    forbidden: "You are not allowed to do that.",
    event_not_found: "This event does not exist (any more).",
    sales_not_started: "Sales for this event have not started yet. Come back when they open.",
    sales_ended: "Sales for this event have ended.",
    phase_closed: "No part of this sale is open right now. Come back when the next one starts.",
    sold_out: "Every seat of this event is sold. Sorry!",
    booking_not_found: "You are not in the queue for this event.",
    invalid_state: "That is not possible at this step any more; the page has been brought up to date.",
    hold_expired: "Your time to pick a seat and pay has run out.",
    seat_not_found: "That seat does not exist.",
    seat_unavailable: "That seat was just taken. Please pick another.",
    seat_not_for_sale: "That seat is not for sale. Please pick another.",
    orphan_seat: "That choice would leave a single seat free that nobody could buy. Please pick others.",
    no_adjacent_seats: "There are not that many seats free together. Try fewer seats, or another section.",
    section_not_found: "That section does not exist. Pick another.",
    cannot_cancel: "This booking can no longer be cancelled.",
    payment_mismatch: "That payment does not belong to this booking.",
    late_payment: "The payment arrived after your hold expired; it was not used and will be refunded.",
    already_completed: "You already have a ticket for this event.",
    payment_provider_unavailable: "The payment provider is not answering. Try Pay again in a moment; you will not be charged twice.",
    too_many_requests: "Lots of fans right now. Please try again in a few seconds.",
    rate_limited: "Lots of fans right now. Please try again in a few seconds.",
    challenge_required: "This event asks for a quick check before you join. Press Join the queue again.",
    challenge_failed: "The check before joining did not go through. Press Join the queue to try again.",
    challenge_unavailable: "boxoffice is busy or briefly unavailable. Please try again in a moment.",
    invalid_code: "That access code is not valid for this event. Check it and try again.",
    code_other_event: "That access code is for another event.",
    code_wrong_phase: "That access code is for another part of this sale, not the one open now.",
    code_expired: "That access code has expired.",
    code_taken: "That access code has already been used by someone else.",
    code_used_up: "That access code has no uses left.",
    code_required: "This part of the sale is for access code holders. Enter your code to join.",
    not_selected: "This part of the sale is for the registered fans who were selected. You can join the general sale when it opens.",
    invalid_argument: "Something in that request was not right. Reload the page and try again.",
    invalid_body: "Something in that request was not right. Reload the page and try again.",
    unavailable: "boxoffice is busy or briefly unavailable. Please try again in a moment.",
    internal: "Something went wrong on our side. Please try again in a moment.",
    not_refundable: "Tickets for this event cannot be cancelled.",
    refund_deadline_passed: "The time to cancel tickets for this event has passed.",
    not_cancellable: "This order cannot be cancelled.",
    order_not_found: "That order was not found.",
  };
  function friendly(e) {
    return MESSAGES[e && e.code] || (e && e.status >= 500 ? MESSAGES.unavailable : "Something went wrong. Please try again in a moment.");
  }

  // ---- announcements and small helpers ----

  function show(panel) {
    for (const p of ["#panel-join", "#panel-waiting", "#panel-turn", "#panel-pending", "#panel-done", "#panel-offer"]) $(p).hidden = p !== panel;
    waitlistBox(panel);
    document.body.dataset.view = panel.slice(7);
  }
  function error(msg) {
    const e = $("#error");
    e.textContent = msg || "";
    e.hidden = !msg;
    if (msg) announce(msg, true);
  }
  // announce speaks msg through a live region: polite, or assertive when
  // urgent. The region is emptied first so that a repeat is spoken again.
  function announce(msg, urgent) {
    const r = urgent ? $("#alert") : $("#announce");
    r.textContent = "";
    setTimeout(() => { r.textContent = msg; }, 50);
  }
  function money(cents) {
    if (typeof cents !== "number" || !isFinite(cents)) return "";
    return (cents / 100).toFixed(2);
  }
  function duration(s) {
    if (s < 60) return s + " s";
    const m = Math.floor(s / 60);
    return m < 60 ? `${m} min ${s % 60} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
  }
  function clock(ms) {
    return new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  }
  const inRoom = (st) => st === "active" || st === "seat_selected";
  const eventName = () => (S.event && (S.event.name || S.event.id)) || eventID;

  // ---- event list ----

  async function listEvents(after) {
    $("#view-events").hidden = false;
    let r;
    try {
      r = await api("GET", "/api/events?limit=20" + (after ? "&after=" + encodeURIComponent(after) : ""));
    } catch (e) { error(friendly(e)); return; }
    const ul = $("#events");
    if (!after) ul.replaceChildren();
    for (const ev of (r.events || [])) ul.appendChild(eventCard(ev));
    if (!ul.children.length) {
      const li = document.createElement("li");
      li.textContent = "No events on sale right now.";
      ul.appendChild(li);
    }
    const more = $("#more");
    more.hidden = !r.next;
    more.disabled = false;
    more.onclick = () => { more.disabled = true; listEvents(r.next); };
    if (!after) tickets($("#view-events"));
  }

  function eventCard(ev) {
    const c = ev.counts || {};
    const li = document.createElement("li");
    const info = document.createElement("div");
    const h = document.createElement("h2");
    h.className = "card-title";
    h.textContent = ev.name || ev.id;
    const meta = document.createElement("p");
    meta.className = "meta";
    meta.textContent = eventFacts(ev).concat(
      [`${c.available ?? "?"} of ${c.total ?? "?"} seats left`, `${c.waiting ?? 0} waiting`]).join(" · ");
    info.append(h, meta);
    li.appendChild(info);
    const soldOut = c.total > 0 && c.available === 0 && !c.held;
    if (ev.sales_ended || soldOut) {
      const b = document.createElement("button");
      b.type = "button";
      b.disabled = true;
      b.textContent = ev.sales_ended ? "Sale ended" : "Sold out";
      li.appendChild(b);
    } else {
      // Joining happens on the event page, after a confirm step.
      const a = document.createElement("a");
      a.className = "button";
      a.href = "/?event_id=" + encodeURIComponent(ev.id);
      a.dataset.event = ev.id;
      a.textContent = "Get tickets";
      const sr = document.createElement("span");
      sr.className = "sr-only";
      sr.textContent = " for " + (ev.name || ev.id);
      a.appendChild(sr);
      li.appendChild(a);
    }
    return li;
  }

  // eventFacts: date, venue and price where the API has them.
  function eventFacts(ev) {
    const out = [];
    if (ev.starts_at) out.push(new Date(ev.starts_at).toLocaleString([], { dateStyle: "medium", timeStyle: "short" }));
    if (ev.venue) out.push(ev.venue);
    if (ev.price_max_cents > ev.price_cents) out.push(`${money(ev.price_cents)} to ${money(ev.price_max_cents)} ${ev.currency || ""} per seat`);
    else if (ev.price_cents) out.push(money(ev.price_cents) + " per seat");
    const sale = saleWindow(ev);
    if (sale) out.push(sale);
    if (ev.paused) out.push("sales paused");
    return out;
  }

  // saleWindow: the sale's start and end in the fan's time zone, or
  // "Sale ended" once the server says the end passed (by its clock).
  const WHEN = new Intl.DateTimeFormat(undefined, { year: "numeric", month: "short", day: "numeric",
    hour: "2-digit", minute: "2-digit", timeZoneName: "short" });
  function saleWindow(ev) {
    const start = ev.sales_start ? Date.parse(ev.sales_start) : NaN;
    const end = ev.sales_end ? Date.parse(ev.sales_end) : NaN;
    if (ev.sales_ended) {
      return "Sale ended" + (isNaN(end) ? "" : " " + WHEN.format(end)) + (isNaN(start) ? "" : " (opened " + WHEN.format(start) + ")");
    }
    const span = [];
    if (!isNaN(start)) span.push("from " + WHEN.format(start));
    if (!isNaN(end)) span.push("until " + WHEN.format(end));
    return span.length ? "On sale " + span.join(" ") : "";
  }

  // ---- one event ----

  async function openEvent() {
    $("#view-event").hidden = false;
    try { await loadEvent(); } catch (e) { error(e.status === 404 ? "This event does not exist." : friendly(e)); return; }
    document.title = eventName() + " – boxoffice";
    S.title = document.title;
    $("#join").onclick = join;
    $("#rejoin").onclick = rejoin;
    $("#register").onclick = register;
    registration().catch(() => { /* no registration, or later */ });
    waitlistSetup();
    if (needsChallenge()) challengeWidget().catch(() => {}); // shown before the join
    $("#pay").onclick = pay;
    confirmStep("#leave", "#leave-confirm", "#leave-yes", "#leave-no", () => cancel("You left the queue."));
    confirmStep("#release", "#release-confirm", "#release-yes", "#release-no", () => cancel("You released your seat and left the room."));
    seatGridEvents();
    bestEvents();
    if ("Notification" in window) {
      $("#notify-row").hidden = false;
      $("#notify").onchange = (e) => {
        if (e.target.checked && Notification.permission === "default") Notification.requestPermission();
      };
    }
    document.addEventListener("visibilitychange", () => { if (!document.hidden) check("visible"); });
    setInterval(heartbeat, 1000);
    // State over HTTP at once; the socket in parallel.
    check("open");
    connect();
  }

  async function loadEvent() {
    S.event = await api("GET", "/api/events/" + encodeURIComponent(eventID));
    S.lastEventFetch = Date.now();
    $("#event-name").textContent = eventName();
    $("#event-meta").textContent = eventFacts(S.event).filter((f) => f !== "sales paused").join(" · ");
    $("#paused").hidden = !S.event.paused;
    providerState(!!S.event.provider_degraded, !!S.event.provider_outage_ended);
    phaseNote(S.event);
    scheduleList(S.event);
    if (S.event.sales_ended) { // nobody joins any more: no Join button
      $("#join").hidden = true;
      $("#join-note").textContent = "Sale ended. Sales for this event have ended.";
    }
  }

  // registration shows the event's registration before the sale, if it
  // has one: its window, the fan's state, and Register while it is open
  // (docs/http-api.md "Registration").
  async function registration() {
    const me = await api("GET", "/api/events/" + encodeURIComponent(eventID) + "/registration/me");
    if (me.state === "none" || !me.window) return;
    const w = me.window;
    const when = (t) => new Date(t).toLocaleString([], { dateStyle: "medium", timeStyle: "short" });
    const phase = (w.phase || "").replace(/[-_]/g, " ");
    $("#reg-window").textContent = `Registration for the ${phase} sale: ${when(w.opens_at)} to ${when(w.closes_at)}. Who may buy is decided after registration closes.`;
    showRegistration(me.state, w);
    $("#registration").hidden = false;
  }
  function showRegistration(state, w) {
    const open = Date.now() >= Date.parse(w.opens_at) && Date.now() < Date.parse(w.closes_at) && !w.drawn_at;
    const text = {
      not_registered: open ? "You are not registered yet." : "You did not register.",
      registered: "You are registered. The draw is after registration closes; this page will say whether you were selected.",
      selected: selectedText(w),
      not_selected: "You were not selected this time. You can still join the general sale.",
    }[state] || "";
    $("#reg-state").textContent = text;
    $("#register").hidden = !(open && state === "not_registered");
  }
  // selectedText tells a selected fan when their part of the sale opens:
  // the start of the scheduled phase the registration is for, in the
  // fan's time zone, when the event's schedule has it.
  function selectedText(w) {
    const p = ((S.event && S.event.schedule) || []).find((x) => x.id === w.phase);
    if (!p) return "You were selected: you can join when this part of the sale opens.";
    if (Date.now() < Date.parse(p.starts_at)) return `You were selected: your sale opens ${WHEN.format(Date.parse(p.starts_at))}.`;
    if (Date.now() < Date.parse(p.ends_at)) return "You were selected: your sale is open now.";
    return "You were selected, and your part of the sale has ended. You can still join the general sale.";
  }
  async function register() {
    error("");
    $("#register").disabled = true;
    try {
      await api("POST", "/api/events/" + encodeURIComponent(eventID) + "/registration");
      const me = await api("GET", "/api/events/" + encodeURIComponent(eventID) + "/registration/me");
      showRegistration(me.state, me.window); // the state is a live region: said aloud
    } catch (e) {
      error(e.code === "registration_closed" ? "Registration is closed." : friendly(e));
    } finally {
      $("#register").disabled = false;
    }
  }

  // phaseNote says which part of the sale is open and whether joining
  // needs an access code (PUT /api/admin/events/{id}/phase).
  function phaseNote(ev) {
    const n = $("#phase-note");
    const name = ev.phase ? ev.phase.replace(/[-_]/g, " ") : "";
    if (ev.audience === "code") {
      n.textContent = (name ? `Now on sale: ${name}, ` : "Now on sale: ") + "for access code holders. Enter your code to join.";
    } else if (ev.audience === "registered") {
      n.textContent = (name ? `Now on sale: ${name}, ` : "Now on sale: ") + "for the registered fans who were selected.";
    } else {
      n.textContent = name ? `Now on sale: ${name}, open to everyone.` : "";
    }
    n.hidden = !n.textContent;
  }

  // scheduleList shows the event's scheduled phases (its schedule), each
  // with its window in the fan's time zone and who may join, marking the
  // one on now (the event's current phase).
  function scheduleList(ev) {
    const list = $("#schedule-list");
    const phases = ev.schedule || [];
    list.textContent = "";
    const who = { code: "code required", registered: "selected registered fans", public: "open to everyone" };
    for (const p of phases) {
      const li = document.createElement("li");
      const now = p.id === ev.phase && ev.audience !== "closed";
      li.textContent = `${p.name}: ${WHEN.format(Date.parse(p.starts_at))}–${WHEN.format(Date.parse(p.ends_at))}, ${who[p.audience] || p.audience}` + (now ? " (on now)" : "");
      if (now) li.setAttribute("aria-current", "true");
      list.appendChild(li);
    }
    $("#schedule").hidden = phases.length === 0;
    phaseCountdown();
  }

  // phaseCountdown shows, under the schedule, the time to its next
  // boundary: the end of the phase on now, else the next phase's start
  // (by this device's clock; every second, every minute when an hour or
  // more away, as duration() words it). The text is not a live region:
  // the status region says the minutes under 10 as they change and the
  // boundary when it comes, like the other countdowns. At a boundary the
  // event is read again (every 2 s for 20 s, until it shows the phase the
  // schedule says: the gateways apply it within a second or so), which
  // updates the phase note, the join rules and the phase on now.
  function phaseCountdown() {
    const el = $("#schedule-countdown");
    const phases = (S.event && S.event.schedule) || [];
    const now = Date.now();
    const prev = S.phaseNext;
    let next = null;
    for (const p of phases) {
      const start = Date.parse(p.starts_at), end = Date.parse(p.ends_at);
      if (now < start) { next = { at: start, text: `${p.name} opens` }; break; }
      if (now < end) { next = { at: end, text: `${p.name} ends` }; break; }
    }
    if (prev && prev.at <= now) { // a boundary passed since the last tick
      const opened = phases.find((p) => Date.parse(p.starts_at) === prev.at);
      const ended = phases.find((p) => Date.parse(p.ends_at) === prev.at);
      if (opened) announce(`${opened.name} is open now.`);
      else if (ended) announce(`${ended.name} has ended.`);
      S.phaseReload = { want: opened ? opened.id : "", until: now + 20000, next: now };
    }
    S.phaseNext = next;
    const r = S.phaseReload;
    if (r && now >= r.next) {
      const ev = S.event || {};
      const shows = r.want ? ev.phase === r.want && ev.audience !== "closed" : ev.audience === "closed";
      if (shows || now > r.until) S.phaseReload = null;
      else {
        r.next = now + 2000;
        loadEvent().catch(() => { /* the next try */ });
      }
    }
    el.hidden = !next;
    if (!next) { S.phaseMin = 0; return; }
    const left = Math.max(0, Math.ceil((next.at - now) / 1000));
    el.textContent = `${next.text} in ${duration(left)}`;
    // The minutes under 10 are said as they change (not on the page's
    // first tick for this boundary).
    const min = Math.ceil(left / 60);
    if (prev && prev.at === next.at && min !== S.phaseMin && min <= 10) announce(`${next.text} in ${min} min.`);
    S.phaseMin = min;
  }

  // providerState shows what a payment provider outage means for this fan
  // (PUT /api/admin/provider): in the room the hold timer stands still,
  // the seats stay theirs; in the queue admissions are paused. The notice
  // is a polite live region; the change is also announced. On recovery
  // the exact position gives the moved deadline. ended (the event's
  // provider_outage_ended): the outage lasted longer than the maximum and
  // the timer runs again though the provider may still be down; in the
  // room the notice says so until the next change.
  function providerState(degraded, ended) {
    const was = !!S.providerDown;
    S.providerDown = degraded;
    const box = $("#provider");
    const gaveUp = !degraded && !!ended && inRoom(S.state);
    const text = gaveUp
      ? "The payment provider's problem lasted too long. Your timer runs again: if it ends before you pay, your seats are released."
      : inRoom(S.state)
        ? "The payment provider has a problem. Your seats are kept for you; the timer is paused."
        : "The payment provider has a problem: admissions paused. Your place in the queue is kept.";
    box.hidden = !degraded && !gaveUp;
    if ((degraded || gaveUp) && box.textContent !== text) box.textContent = text;
    if (degraded && !was) {
      S.pausedLeftMS = Math.max(0, S.expireAtMS - Date.now());
      announce(text, false);
    } else if (!degraded && was) {
      announce(gaveUp ? text : inRoom(S.state) ? "The payment provider is back. Your timer runs again." : "Admissions resumed.", false);
      if (inRoom(S.state)) check("provider");
    }
  }

  // confirmStep: the button opens an inline confirmation; yes runs action.
  function confirmStep(open, box, yes, no, action) {
    $(open).onclick = () => { $(box).hidden = false; $(yes).focus(); };
    $(no).onclick = () => { $(box).hidden = true; $(open).focus(); };
    $(yes).onclick = async () => { $(box).hidden = true; await action(); };
  }

  // ---- the join challenge (events with challenge "pow"; docs/web.md) ----
  // The ALTCHA widget (vendored, static/altcha-<version>/) solves the
  // gateway's proof-of-work challenge in web workers; its payload goes in
  // the join's Altcha header and admits one join. The widget's script and
  // style are loaded only on such events' pages.
  const ALTCHA = "/static/altcha-3.2.2/";
  let altchaLoading = null;
  function loadAltcha() {
    if (!altchaLoading) altchaLoading = new Promise((resolve, reject) => {
      const css = document.createElement("link");
      css.rel = "stylesheet"; css.href = ALTCHA + "altcha.css";
      document.head.appendChild(css);
      const s = document.createElement("script");
      s.type = "module"; s.src = ALTCHA + "altcha.min.js";
      s.onload = () => {
        // the external build has no bundled workers: SHA-256's is a file
        globalThis.$altcha.algorithms.set("SHA-256", () => new Worker(ALTCHA + "sha.js"));
        resolve();
      };
      s.onerror = () => { altchaLoading = null; const e = new Error("challenge script"); e.code = "network"; reject(e); };
      document.head.appendChild(s);
    });
    return altchaLoading;
  }
  function needsChallenge() { return !!S.event && S.event.challenge === "pow"; }
  // challengeWidget shows the widget (made once) and resolves when its
  // methods are ready.
  async function challengeWidget() {
    await loadAltcha();
    $("#challenge").hidden = false;
    let w = $("#altcha");
    if (w) { await w.ready; return w; }
    w = document.createElement("altcha-widget");
    w.id = "altcha";
    w.setAttribute("challenge", "/api/events/" + encodeURIComponent(eventID) + "/challenge");
    w.setAttribute("auto", "off");
    w.addEventListener("verified", (ev) => { S.altcha = ev.detail && ev.detail.payload; });
    w.addEventListener("statechange", (ev) => { if (ev.detail && ev.detail.state !== "verified") S.altcha = null; });
    w.ready = new Promise((resolve) => w.addEventListener("load", () => resolve(), { once: true }));
    $("#challenge").appendChild(w);
    await w.ready;
    return w;
  }
  // solvedChallenge is a payload for one join: the widget's, solving now
  // when the box was not ticked; null when it failed (the widget says why).
  async function solvedChallenge() {
    const w = await challengeWidget();
    if (!S.altcha) {
      const r = await w.verify();
      S.altcha = (r && r.payload) || S.altcha;
    }
    const p = S.altcha;
    S.altcha = null; // one join per solution
    return p;
  }
  function resetChallenge() {
    const w = $("#altcha");
    if (w && typeof w.reset === "function") w.reset();
    S.altcha = null;
  }

  // rejoin: after a finished hold; an event with a challenge shows the
  // join panel and its widget first.
  function rejoin() {
    if (!needsChallenge()) return join();
    $("#join-note").textContent = "You can join the queue again.";
    show("#panel-join");
    challengeWidget().catch(() => {});
    $("#join").focus();
  }

  async function join() {
    error("");
    $("#join").disabled = true;
    try {
      const opts = {};
      if (needsChallenge()) {
        const p = await solvedChallenge();
        if (!p) { error(MESSAGES.challenge_failed); return; }
        opts.headers = { Altcha: p };
      }
      const body = { event_id: eventID };
      const code = $("#code").value.trim();
      if (code) body.code = code;
      const r = await api("POST", "/api/booking/request", body, opts);
      codeError("");
      S.seq = r.sequence || S.seq;
      if (r.receipt) keepReceipt(r.receipt);
      S.firstAhead = null; S.exact = null; S.eta = null; S.lastLocal = Date.now(); S.chanceWords = "";
      // The join's answer has the position's fields; the open socket needs
      // no reconnect (the notifier sends to the user's connections
      // whatever their state).
      onMessage(fromPosition(r));
      check("join");
    } catch (e) {
      if (e.code === "challenge_required" && S.event) {
        // the event asks for a challenge since the page read it
        S.event.challenge = "pow";
        challengeWidget().catch(() => {});
      }
      if (e && e.code && (e.code === "invalid_code" || e.code.startsWith("code_"))) {
        // the code field says what is wrong with the code
        codeError(friendly(e));
        announce(friendly(e), true);
        $("#code").focus();
        return;
      }
      error(friendly(e));
    } finally {
      if (needsChallenge()) resetChallenge();
      $("#join").disabled = false;
    }
  }

  // codeError shows msg beside the access code field and marks the field
  // invalid ("" clears both).
  function codeError(msg) {
    const e = $("#code-error");
    e.textContent = msg || "";
    e.hidden = !msg;
    if (msg) $("#code").setAttribute("aria-invalid", "true");
    else $("#code").removeAttribute("aria-invalid");
  }

  async function cancel(said) {
    error("");
    try {
      await api("POST", "/api/booking/cancel", { event_id: eventID });
      S.lastLocal = Date.now();
      onMessage({ type: "state", state: "cancelled" });
      announce(said);
    } catch (e) { error(friendly(e)); check("cancel-failed"); }
  }

  // ---- the socket ----

  function connect() {
    clearTimeout(S.wsTimer);
    const url = notifierURL() + "?event_id=" + encodeURIComponent(eventID);
    let ws;
    try {
      // The token travels as a subprotocol, not in the URL (no logs).
      ws = new WebSocket(url, ["boxoffice.v1", "bearer." + S.token]);
    } catch (_) { wsDown(); return; }
    S.ws = ws;
    ws.onopen = () => {
      if (S.ws !== ws) return;
      S.wsOpen = true; S.wsBackoff = T.wsMinMS; S.lastWS = Date.now();
      heard();
      stopPolling();
    };
    ws.onmessage = (m) => {
      if (S.ws !== ws) return;
      S.lastWS = Date.now();
      heard();
      try { onMessage(JSON.parse(m.data)); } catch (e) { console.error(e); }
    };
    ws.onclose = () => {
      if (S.ws !== ws) return;
      S.ws = null; S.wsOpen = false;
      wsDown();
    };
  }

  // wsDown: the socket closed or never opened. A browser shows a refusal
  // before the upgrade (the notifier's 401 for a stale token) and a network
  // failure alike (close code 1006), so an HTTP check tells them apart: its
  // 401 renews the token (api), and the socket is then retried at once.
  // A waiting fan whose token the gateway accepted since it last changed
  // skips that check (the failure is the network's): its polls read the
  // progress document, not the exact position.
  function wsDown() {
    S.wsDownAt = Date.now();
    mode();
    startPolling();
    if (S.tokenOK !== S.token || !byProgress()) check("socket-closed");
    const wait = S.wsBackoff * (0.75 + Math.random() * 0.5);
    S.wsBackoff = Math.min(S.wsBackoff * 2, T.wsMaxMS);
    clearTimeout(S.wsTimer);
    S.wsTimer = setTimeout(connect, wait);
  }
  function reconnectNow() {
    S.wsDownAt = Date.now();
    const old = S.ws;
    S.ws = null; S.wsOpen = false;
    if (old) old.close();
    connect();
  }

  // ---- HTTP polling and the liveness check ----

  function startPolling() {
    if (S.pollTimer || S.wsOpen) return;
    S.pollDelay = T.pollMinMS;
    schedulePoll();
  }
  function stopPolling() { clearTimeout(S.pollTimer); S.pollTimer = null; }
  function schedulePoll() {
    clearTimeout(S.pollTimer);
    let d = S.pollDelay;
    if (inRoom(S.state)) d = Math.min(d, 5000); // the countdown and seat map matter now
    S.pollTimer = setTimeout(poll, d * (0.8 + Math.random() * 0.4));
  }
  async function poll() {
    S.pollTimer = null;
    if (S.wsOpen || S.state === "completed") return;
    const progress = byProgress();
    const changed = await (progress ? checkProgress() : check("poll"));
    if (S.wsOpen || S.state === "completed") return;
    if (S.checkFailed) S.pollDelay = Math.min(S.pollDelay * 2, T.pollErrorMaxMS);
    // Far back in a moving queue the place changes on every poll: poll at
    // a tenth of the ETA (2-15 s), not at once, so that a crowd of millions
    // asks at most every 15 s.
    else if (progress && S.state === "waiting") S.pollDelay = S.etaSecs == null ? T.pollMaxMS : Math.min(T.pollMaxMS, Math.max(T.pollMinMS, S.etaSecs * 100));
    else S.pollDelay = changed ? T.pollMinMS : Math.min(S.pollDelay * 1.5, T.pollMaxMS);
    if (inRoom(S.state)) loadSeats(); // no seats_changed without the socket
    schedulePoll();
  }

  // byProgress: a waiting fan with a known sequence and a drawn place
  // polls the progress document; the exact position is read at least every
  // exactEveryMS (10 min: a leave from another tab), or a third of the
  // event's abandon_seconds when abandonment is on (it is the sign of
  // presence abandonment looks for).
  function byProgress() {
    if (S.state !== "waiting" || !S.seq || S.drawAtMS || S.drawPending) return false;
    let every = T.exactEveryMS;
    if (S.event && S.event.abandon_seconds > 0) every = Math.min(every, S.event.abandon_seconds * 1000 / 3);
    return Date.now() - S.lastExact < every;
  }

  // checkProgress reads GET /api/events/{id}/progress (revalidated against
  // its ETag: a 304 while the queue stands still) and places the fan from
  // its sequence, as the socket's broadcast does. Once the sequence is
  // served (a turn, or the fan left) or the queue sold out, the exact
  // position says what happened. Returns true when the page changed.
  async function checkProgress() {
    if (S.checking) return false;
    S.checking = true;
    const asked = Date.now();
    let g;
    try {
      g = await api("GET", "/api/events/" + encodeURIComponent(eventID) + "/progress", undefined, { cache: "no-cache", anonymous: true });
      S.checkFailed = false;
      heard();
    } catch (_) {
      S.checkFailed = true;
      return false;
    } finally {
      S.checking = false;
      mode();
    }
    if (S.lastWS > asked || S.lastLocal > asked || S.state !== "waiting") return false;
    $("#paused").hidden = !g.paused;
    if (g.chance) { S.chance = g.chance; S.chanceAt = Date.now(); }
    providerState(!!g.provider_degraded);
    if (g.served >= S.seq || g.sold_out || g.sales_ended) return check("progress");
    const shown = $("#position").textContent;
    onMessage({ type: "position", served: g.served, waiting: g.waiting, rate_per_min: g.rate_per_min });
    return $("#position").textContent !== shown;
  }

  // check reads GET /api/booking/position and applies it. It returns true
  // when the page changed. A socket message that arrived, or an action of
  // the fan's that succeeded, while the request was in flight is newer, so
  // the answer is then dropped. When the socket is open but the answer
  // shows a state it never delivered, the socket is stalled: it is
  // replaced.
  async function check(reason) {
    if (S.checking) return false;
    S.checking = true;
    const asked = Date.now();
    try {
      const p = await api("GET", "/api/booking/position?event_id=" + encodeURIComponent(eventID));
      S.lastExact = Date.now();
      S.checkFailed = false;
      if (S.checkError) { S.checkError = false; error(""); }
      heard();
      if (S.lastWS > asked || S.lastLocal > asked) return false;
      const before = S.state + "|" + S.seat, shown = $("#position").textContent;
      onMessage(fromPosition(p));
      const stateChanged = S.state + "|" + S.seat !== before;
      if (stateChanged && S.wsOpen && reason === "liveness") reconnectNow();
      return stateChanged || $("#position").textContent !== shown;
    } catch (e) {
      S.checkFailed = true;
      if (S.state === null) { S.checkError = true; error(friendly(e)); }
      return false;
    } finally {
      S.checking = false;
      mode();
      if (S.tokenRenewed) { // the socket failed on the old token: retry now
        S.tokenRenewed = false;
        if (!S.wsOpen) reconnectNow();
      }
    }
  }

  // fromPosition turns GET /api/booking/position into the message the
  // socket sends for the same state (docs/notifier.md, first message).
  function fromPosition(p) {
    switch (p.status) {
      case "queued":
        return { type: "position", state: "waiting", sequence: p.sequence, position: p.position,
          served: p.served, waiting: p.waiting, eta_seconds: p.eta_seconds, chance: p.chance, exact: true };
      case "prequeued":
        return { type: "position", state: "waiting", sequence: p.sequence, prequeued: p.sales_start,
          served: p.served, waiting: p.waiting };
      case "sold_out": return { type: "sold_out" };
      case "sales_ended": return { type: "sales_ended" };
      case "active":
        return { type: "your_turn", state: p.state || "active", sequence: p.sequence, seat_id: p.seat_id,
          seat_ids: p.seat_ids, payment_id: p.payment_id, expire_time: p.expire_time };
      case "completed": return { type: "booking_completed", seat_id: p.seat_id, seat_ids: p.seat_ids, payment_id: p.payment_id };
      case "failed": return { type: "payment_failed", seat_id: p.seat_id };
      case "expired": return { type: "expired" };
      case "cancelled": case "abandoned": case "phase_ended": return { type: "state", state: p.status };
      default:
        if (p.sales_ended) return { type: "sales_ended" };
        return p.sold_out ? { type: "sold_out" } : { type: "state", state: "none" };
    }
  }

  function heard() { S.lastHeard = Date.now(); mode(); }

  // heartbeat runs every second: the mode line, the countdown and the
  // liveness check of a silent socket.
  function heartbeat() {
    mode();
    if (inRoom(S.state)) countdown();
    waitlistTick();
    phaseCountdown();
    if (S.state === "waiting" && S.drawAtMS) {
      if (S.drawAtMS > Date.now()) drawCountdown(false);
      else { S.drawAtMS = 0; check("draw"); } // the start: ask for the place
    }
    if (S.state !== "waiting") S.drawPending = 0;
    else if (S.drawPending && Date.now() >= S.drawPending) { S.drawPending = Date.now() + T.drawPendingMS; check("draw"); }
    const now = Date.now();
    if (S.wsOpen && S.state !== "completed" && now - S.lastWS > T.livenessMS && now - S.lastLiveness > T.livenessMS) {
      S.lastLiveness = now + Math.random() * T.livenessJitterMS;
      check("liveness");
    }
    // The socket says nothing about a pause: re-read the event now and then
    // (in the room often: a payment provider outage stops its timer).
    if ((S.state === "waiting" && now - S.lastEventFetch > T.eventRefreshMS) ||
        (inRoom(S.state) && now - S.lastEventFetch > T.roomEventRefreshMS)) {
      S.lastEventFetch = now;
      loadEvent().catch(() => { /* next time */ });
    }
  }

  // mode says which channel the page is on and when it last heard.
  function mode() {
    let m, txt;
    if (S.wsOpen) { m = "live"; txt = "Live updates"; }
    // A socket being replaced (a join, a stall) is not news for 5 s.
    else if (S.lastMode === "live" && Date.now() - S.wsDownAt < 5000) { m = "live"; txt = "Live updates (reconnecting…)"; }
    else if (S.checkFailed) { m = "offline"; txt = "Can't reach boxoffice; retrying"; }
    else if (S.lastHeard) { m = "polling"; txt = "Live connection unavailable; checking for updates every few seconds"; }
    else { m = "connecting"; txt = "Connecting…"; }
    let age = "";
    if (S.lastHeard) {
      const s = Math.max(0, Math.round((Date.now() - S.lastHeard) / 1000));
      age = s < 2 ? "· updated just now" : s < 120 ? `· updated ${s} s ago` : `· updated ${Math.round(s / 60)} min ago`;
    }
    // A change of channel is said once (not the ticking age).
    if (S.lastMode && m !== S.lastMode && S.state !== null) {
      if (m === "polling" && S.lastMode === "live") announce("Live updates are interrupted; the page keeps checking for news every few seconds.");
      else if (m === "offline") announce("boxoffice cannot be reached right now; the page keeps trying.");
      else if (m === "live" && S.lastMode !== "connecting") announce("Live updates are back.");
    }
    S.lastMode = m;
    $("#conn-mode").textContent = txt;
    $("#conn-age").textContent = age;
    $("#conn").dataset.mode = m;
    document.body.dataset.mode = m;
    document.body.dataset.live = S.wsOpen ? "1" : "0";
  }

  // ---- the state machine ----

  function onMessage(m) {
    if (waitlistHolds(m)) return;
    switch (m.type) {
      case "position":
        if (m.state === "waiting") { S.state = "waiting"; if (m.sequence) S.seq = m.sequence; }
        if (typeof m.paused === "boolean") { // the broadcast says whether the sale is paused
          if (S.event) S.event.paused = m.paused;
          $("#paused").hidden = !m.paused;
        }
        if (S.state === "waiting") waiting(m);
        seatCounts(m);
        break;
      case "your_turn":
        if (!staleTurn(m)) turn(m);
        break;
      case "booking_completed":
        done("You're going! 🎉", confirmation(m), "completed");
        break;
      case "payment_failed":
        done("Payment failed", "The payment was declined" + (m.reason ? ` (${m.reason})` : "") + ". Your seat was released; you can join the queue again.", "failed");
        break;
      case "expired":
        done("Time's up", "Your hold expired before the payment completed, so the seat went back on sale. You can join the queue again.", "expired");
        break;
      case "sold_out":
        if (S.state !== "completed") done("Sold out", "Every seat of this event is sold. Sorry!", "sold_out");
        break;
      case "sales_ended": // sent to the whole event: a fan in the room finishes by their hold's rules
        if (S.state === null || S.state === "waiting" || S.state === "none" || S.state === "cancelled" || S.state === "abandoned") {
          done("Sale ended", "Sales for this event have ended. Nobody else is let in from the queue.", "sales_ended");
        }
        break;
      case "seats_changed":
        refreshSeatsSoon();
        break;
      case "cancelled": // the fan cancelled elsewhere (another tab, the API), or their phase ended
        if (m.sequence && S.seq && m.sequence !== S.seq) break; // an earlier join's
        if (["waiting", "active", "seat_selected"].includes(S.state)) {
          onMessage({ type: "state", state: m.reason === "phase_ended" ? "phase_ended" : "cancelled" });
        }
        break;
      case "state":
        if (S.state === m.state && !$("#panel-join").hidden) break;
        S.state = m.state;
        $("#join-note").textContent = { none: "You are not in the queue for this event.", cancelled: "You left the queue.",
          abandoned: "You were away too long and lost your place.",
          phase_ended: "The part of the sale you were waiting in has ended. Join again if the next part is open to you." }[m.state] || "";
        show("#panel-join");
        restoreTitle();
        break;
    }
  }

  function waiting(m) {
    const arriving = $("#panel-waiting").hidden;
    show("#panel-waiting");
    $("#ref").textContent = `${eventID}-${S.seq}`;
    showReceipt();
    if (m.prequeued) S.drawAtMS = Date.parse(m.prequeued) || 0;
    if (S.drawAtMS > Date.now()) { drawCountdown(arriving); return; }
    S.drawAtMS = 0;
    // started, and no place yet: the draw is being made
    if (m.prequeued) { drawPending(arriving); return; }
    if (S.drawPending && !m.position) return; // a broadcast: the place is the draw's
    S.drawPending = 0;
    $("#draw-note").hidden = true;
    S.drawNoteAsked = false;
    // Users ahead: exact from the first message and from HTTP; from a
    // broadcast an upper bound (served = highest sequence admitted so far),
    // never above the last exact number.
    let pos;
    if (m.position) {
      pos = m.position;
      S.exact = { pos, served: m.served || 0 };
    } else {
      pos = Math.max(1, S.seq - m.served);
      if (S.exact) pos = Math.max(1, Math.min(pos, S.exact.pos));
    }
    if (S.firstAhead === null || pos > S.firstAhead) S.firstAhead = pos;
    $("#position").textContent = pos;
    // Share of the queue ahead of the user on arrival that has been let
    // in: never full while they are still waiting (position 1 is "next").
    const pct = Math.round(100 * (S.firstAhead - pos) / S.firstAhead);
    $("#progress").style.width = Math.max(3, pct) + "%";
    $(".bar").setAttribute("aria-valuenow", String(pct));
    let secs = null;
    if (m.eta_seconds != null) secs = m.eta_seconds;
    else if (m.rate_per_min > 0) secs = Math.ceil(pos * 60 / m.rate_per_min);
    S.etaSecs = secs;
    $("#eta").textContent = etaText(secs);
    const chanceChanged = showChance(m.chance != null ? m.chance : chanceOf(S.chance, pos - 1));
    const chance = $("#chance-row").hidden ? "" : ` Chance of a ticket: ${S.chanceWords}.`;
    const now = Date.now(), last = S.lastAnnounced;
    if (last.pos === null || (pos !== last.pos && now - last.at > 20000)) {
      S.lastAnnounced = { pos, at: now };
      announce(`You are number ${pos} in the queue. Estimated wait: ${$("#eta").textContent}.${chance}`);
    } else if (chanceChanged) announceChance(pos);
    if (arriving) restoreTitle();
  }

  // ---- the join receipt (docs/admission-pass.md, "The join receipt") ----

  // keepReceipt keeps the receipt of a join, for this page and a reload.
  function keepReceipt(r) {
    S.receipt = r;
    try { localStorage.setItem("bo_receipt_" + eventID, JSON.stringify(r)); } catch (_) { /* private mode */ }
  }
  // showReceipt shows the current join's receipt (one of an older join
  // of this event is not shown), with its copy and download.
  function showReceipt() {
    if (!S.receipt) {
      try { S.receipt = JSON.parse(localStorage.getItem("bo_receipt_" + eventID) || "null"); } catch (_) { /* none */ }
    }
    const r = S.receipt;
    const ok = !!(r && r.leaf && r.leaf.seq === S.seq && r.leaf.event_id === eventID);
    $("#receipt-row").hidden = !ok;
    if (!ok) return;
    const text = JSON.stringify(r, null, 2);
    if ($("#receipt-text").textContent === text) return;
    $("#receipt-text").textContent = text;
    $("#receipt-seq").textContent = String(r.leaf.seq);
    $("#receipt-status").textContent = "";
    if (S.receiptURL) URL.revokeObjectURL(S.receiptURL);
    S.receiptURL = URL.createObjectURL(new Blob([text + "\n"], { type: "application/json" }));
    const a = $("#receipt-download");
    a.href = S.receiptURL;
    a.download = `receipt-${eventID}-${r.leaf.seq}.json`;
    $("#receipt-copy").onclick = copyReceipt;
  }
  // copyReceipt copies the receipt; where the clipboard is refused, it
  // opens the receipt and selects it for the fan to copy.
  async function copyReceipt() {
    const text = $("#receipt-text").textContent;
    try {
      await navigator.clipboard.writeText(text);
      $("#receipt-status").textContent = "Receipt copied.";
    } catch (_) {
      $("#receipt-details").open = true;
      const range = document.createRange();
      range.selectNodeContents($("#receipt-text"));
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      $("#receipt-status").textContent = "Selected below: copy it with your keyboard or menu.";
    }
  }

  // ---- the waitlist (docs/web.md "The waitlist") ----
  // A sold-out event with a waitlist (offer_seconds > 0) offers to join
  // it. A waitlisted fan sees their place, read from GET
  // /api/events/{id}/waitlist every few seconds and at once on the
  // socket's offer message; an offer (a seat held for them) has its own
  // screen with a countdown: accepting leads to the usual seat panel with
  // the seat held and Pay, declining passes it on. While waitlisted or
  // offered, the queue's messages (sold out, not joined, your turn) do not
  // move the page: the waitlist's read says where the fan is.
  const hasWaitlist = () => !!S.event && S.event.offer_seconds > 0;
  function waitlistSetup() {
    $("#waitlist-join").onclick = joinWaitlist;
    $("#offer-accept").onclick = () => answerOffer(true);
    $("#offer-decline").onclick = () => answerOffer(false);
    if (hasWaitlist()) waitlistCheck();
  }
  // waitlistBox shows the invitation beside the join panel of an event
  // with no seat free, or the sold-out screen, and the place while
  // waitlisted.
  function waitlistBox(panel) {
    const none = S.event && S.event.counts && S.event.counts.available === 0;
    const on = S.state === "waitlisted" ||
      (hasWaitlist() && ((panel === "#panel-join" && none) || (panel === "#panel-done" && S.state === "sold_out")));
    $("#waitlist-box").hidden = !on;
    $("#waitlist-join").hidden = S.state === "waitlisted";
    $("#waitlist-status").hidden = S.state !== "waitlisted";
    $("#waitlist-eta").hidden = S.state !== "waitlisted";
  }
  function waitlistHolds(m) {
    if (m.type === "offer") { waitlistCheck(); return true; }
    if (S.state === "offered" && m.type === "expired") {
      done("Offer expired", "The offer ran out, so the seat went to the next fan on the waitlist.", "expired");
      return true;
    }
    return (S.state === "waitlisted" || S.state === "offered") &&
      ["your_turn", "sold_out", "state", "position", "cancelled"].includes(m.type);
  }
  function waitlistTick() {
    if (S.state === "offered") offerCountdown();
    if ((S.state === "waitlisted" || S.state === "offered") && Date.now() - (S.wlPolled || 0) > T.pollMinMS) waitlistCheck();
  }
  async function waitlistCheck() {
    S.wlPolled = Date.now();
    try {
      const w = await api("GET", "/api/events/" + encodeURIComponent(eventID) + "/waitlist");
      if (w.state === "offered") offered(w); else waitlisted(w);
    } catch (e) {
      if (e.status === 404 && (S.state === "waitlisted" || S.state === "offered")) {
        S.state = null; // the offer ended: the booking's state says how
        check("waitlist");
      }
    }
  }
  async function joinWaitlist() {
    error("");
    $("#waitlist-join").disabled = true;
    try {
      const w = await api("POST", "/api/events/" + encodeURIComponent(eventID) + "/waitlist");
      if (w.state === "offered") offered(w); else waitlisted(w);
    } catch (e) {
      error(friendly(e));
    } finally {
      $("#waitlist-join").disabled = false;
    }
  }
  function waitlisted(w) {
    const arriving = S.state !== "waitlisted", moved = S.wlPos !== w.position;
    S.state = "waitlisted"; S.wlPos = w.position;
    $("#waitlist-title").textContent = "You are on the waitlist";
    $("#waitlist-text").textContent = "When a seat comes back it is offered to the next fan in line. Keep this page open: your offer appears here.";
    $("#waitlist-status").textContent = `You are number ${w.position} on the waitlist.`;
    $("#waitlist-eta").textContent = waitlistETA(w);
    show("#panel-waitlist");
    if (arriving) $("#waitlist-title").focus();
    if (moved) announce(`You are number ${w.position} on the waitlist.`);
  }
  // waitlistETA is the honest estimate of a waitlisted fan's wait: their
  // position at the pace fans were offered seats lately, or unknown.
  function waitlistETA(w) {
    if (w.sales_ended) return "The sale has ended: no more seats will be offered.";
    if (w.eta_known) return `At the pace seats came back lately, your offer may come in about ${duration(w.eta_seconds)}. It is an estimate: seats come back when others give them up.`;
    return "How long it takes is unknown: it depends on when seats come back.";
  }
  function offered(w) {
    const arriving = S.state !== "offered";
    S.state = "offered"; S.offerSeq = w.sequence;
    S.offerEndMS = Date.parse(w.expire_at) || w.expire_time * 1000;
    const seats = w.offer_seats || [];
    $("#offer-title").textContent = seats.length > 1 ? "Seats are free for you" : "A seat is free for you";
    $("#offer-seats").textContent = seats.join(", ");
    show("#panel-offer");
    offerCountdown();
    if (arriving) {
      document.title = "🔔 A seat for you! – " + eventName();
      $("#offer-title").focus();
      const left = Math.max(0, Math.round((S.offerEndMS - Date.now()) / 1000));
      announce(`${$("#offer-title").textContent}: seat ${seats.join(", ")}. You have ${duration(left)} to accept it.`, true);
    }
  }
  function offerCountdown() {
    $("#offer-countdown").textContent = duration(Math.max(0, Math.round((S.offerEndMS - Date.now()) / 1000)));
  }
  async function answerOffer(accept) {
    error("");
    const path = "/api/events/" + encodeURIComponent(eventID) + "/waitlist/offers/" + S.offerSeq + (accept ? "/accept" : "/decline");
    try {
      await api("POST", path);
      S.lastLocal = Date.now();
      restoreTitle();
      if (accept) {
        S.state = "offer_accepted"; // the seat panel comes next, the seat held
        check("offer");
      } else {
        done("Offer declined", "You passed the seat on to the next fan on the waitlist.", "declined");
      }
    } catch (e) { error(friendly(e)); waitlistCheck(); }
  }

  // ---- the chance of a ticket (docs/http-api.md, "Chance of a ticket") ----

  // chanceOf is pkg/chance's Params.Chance in the browser: the chance that
  // seats are left when a fan with ahead users ahead gets its turn, from
  // the progress document's parameters (null: none yet).
  function chanceOf(p, ahead) {
    if (!p) return null;
    const n = Math.max(0, ahead);
    if (!(p.seats >= 1)) return 0;
    if (p.seats >= n * Math.max(1, p.max_per_place) + 1) return 1;
    const mean = n * p.per_place, sd = Math.sqrt(n * p.variance + (n * p.error) ** 2);
    if (!(sd > 0)) return p.seats - mean >= 1 ? 0.99 : 0.01;
    const z = (p.seats - 0.5 - mean) / sd;
    return Math.min(0.99, Math.max(0.01, Math.round(normalCDF(z) * 100) / 100));
  }
  // normalCDF: Φ(z) from erf (Abramowitz and Stegun 7.1.26, within 2e-7).
  function normalCDF(z) {
    const x = Math.abs(z) / Math.SQRT2, t = 1 / (1 + 0.3275911 * x);
    const erf = 1 - t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))) * Math.exp(-x * x);
    return z >= 0 ? (1 + erf) / 2 : (1 - erf) / 2;
  }
  // chanceWords: pkg/chance's Words.
  function chanceWords(c) {
    if (c >= 0.9) return "Good chance";
    if (c >= 0.5) return "Fair chance";
    if (c >= 0.1) return "Slim chance";
    return "Unlikely: most seats will be gone before your turn";
  }
  // showChance shows the chance in words (and roughly in numbers); a fan
  // unlikely to get a seat is told it may leave. It returns true when the
  // words changed since the last ones shown (the caller announces them).
  // The parameters come from the progress document, read here when the
  // page has none or they are older than 15 s (the socket's broadcasts
  // carry none).
  function showChance(c) {
    if (c == null || Date.now() - S.chanceAt > 15000) refreshChance();
    if (c == null) { $("#chance-row").hidden = true; return false; }
    const words = chanceWords(c);
    $("#chance-row").hidden = false;
    $("#chance").textContent = words;
    $("#chance-note").textContent = c >= 1 ? "(there are more seats than people ahead of you)"
      : c < 0.1 ? "You may stay in case seats come back, or leave the queue below."
        : `(about ${Math.max(1, Math.min(99, Math.round(c * 100)))} %)`;
    const changed = words !== S.chanceWords;
    S.chanceWords = words;
    return changed;
  }
  // announceChance says the new chance. Within a few seconds of the
  // position's announcement it says both again: the live region holds one
  // message, and the chance alone would replace the position before a
  // screen reader has read it.
  function announceChance(pos) {
    const chance = `Chance of a ticket: ${S.chanceWords}.`;
    if (Date.now() - S.lastAnnounced.at < 5000) {
      announce(`You are number ${pos} in the queue. Estimated wait: ${$("#eta").textContent}. ${chance}`);
    } else announce(chance);
  }
  async function refreshChance() {
    if (S.chanceFetching || S.state !== "waiting" || Date.now() - S.chanceAt < 2000) return;
    S.chanceFetching = true;
    try {
      const g = await api("GET", "/api/events/" + encodeURIComponent(eventID) + "/progress", undefined, { cache: "no-cache", anonymous: true });
      S.chanceAt = Date.now();
      if (!g || !g.chance || S.state !== "waiting") return;
      S.chance = g.chance;
      if (!S.drawAtMS) {
        const pos = parseInt($("#position").textContent, 10);
        if (pos > 0 && showChance(chanceOf(S.chance, pos - 1))) announceChance(pos);
      }
    } catch (_) { /* shown at the next update */ } finally { S.chanceFetching = false; }
  }

  // drawCountdown: a pre-queued user's place is drawn at the sales start
  // (docs/booking-engine.md, the pre-queue); until then no position.
  function drawCountdown(arriving) {
    const left = Math.max(0, Math.ceil((S.drawAtMS - Date.now()) / 1000));
    const h = Math.floor(left / 3600), mi = Math.floor(left / 60) % 60, se = left % 60;
    const pad = (n) => String(n).padStart(2, "0");
    $("#position").textContent = "drawn at the start";
    $("#chance-row").hidden = true;
    $("#eta").textContent = `the draw is in ${h ? h + ":" : ""}${pad(mi)}:${pad(se)} (at ` +
      new Date(S.drawAtMS).toLocaleTimeString([], { timeStyle: "short" }) + "); everyone who joined before it gets a random place";
    if (arriving) {
      announce("You are in the pre-queue. At the sales start everyone in it gets a random place in the queue, ahead of later arrivals.");
      restoreTitle();
    }
    drawNote();
  }

  // drawNote: how the pre-queue's random order is made, from the published
  // draw document (docs/fairness.md), fetched once while pre-queued: the
  // beacon round it waits for, if the draw is committed to one.
  async function drawNote() {
    if (S.drawNoteAsked) return;
    S.drawNoteAsked = true;
    let d;
    try {
      d = await api("GET", "/api/events/" + encodeURIComponent(eventID) + "/draw", undefined, { anonymous: true, cache: "no-cache" });
    } catch (_) { S.drawNoteAsked = false; return; } // asked again at the next update
    if (!d || S.state !== "waiting" || !(S.drawAtMS || S.drawPending)) return;
    const note = $("#draw-note");
    const round = `The random order also uses round ${d.beacon_round} of the public randomness beacon ${d.beacon_source}`;
    if (d.beacon_round && d.beacon_round_at) {
      note.textContent = round + ", published at " + new Date(d.beacon_round_at).toLocaleTimeString([], { timeStyle: "medium" }) +
        ", after the pre-queue closes: nobody, the organiser included, can know or choose a place before then. ";
    } else if (d.beacon_round) {
      note.textContent = round + ": a number nobody, the organiser included, can know before it is published. ";
    } else {
      note.textContent = "The random order comes from a secret fixed before anyone joined and the list of everyone in the pre-queue, so nobody can choose a place. ";
    }
    const a = document.createElement("a");
    a.href = "/api/events/" + encodeURIComponent(eventID) + "/draw";
    a.textContent = "The draw is published";
    note.append(a, " for anyone to check.");
    note.hidden = false;
  }

  // drawPending: the sales start has passed and the draw that places the
  // pre-queue is being made (it waits for the beacon round it is committed
  // to, if any): no place to show yet; the heartbeat asks again.
  function drawPending(arriving) {
    const first = !S.drawPending;
    // backing off: a draw that waits for its beacon may take minutes, and
    // every pre-queued fan asks
    S.drawPendingDelay = first ? T.drawPendingMS : Math.min(S.drawPendingDelay * 1.5, T.pollMaxMS);
    S.drawPending = Date.now() + S.drawPendingDelay * (1 + Math.random() / 2);
    $("#position").textContent = "being drawn";
    $("#chance-row").hidden = true;
    $("#eta").textContent = "known once the draw is made; everyone who joined before the start gets a random place";
    if (first) {
      announce("The sale has started and the draw is being made. Your place will be shown here when it is ready.");
      if (arriving) restoreTitle();
    }
    drawNote();
  }

  // etaText: a range and an arrival time, smoothed so that it does not jump
  // with every update (an exponential moving average of the arrival time).
  function etaText(secs) {
    if (secs == null) { S.eta = null; return "waiting for the first admissions…"; }
    const arrive = Date.now() + secs * 1000;
    S.eta = S.eta === null ? arrive : S.eta + 0.3 * (arrive - S.eta);
    const left = Math.max(0, (S.eta - Date.now()) / 1000);
    if (left < 60) return "less than a minute";
    const lo = Math.max(1, Math.floor(left * 0.8 / 60)), hi = Math.max(lo + 1, Math.ceil(left * 1.25 / 60));
    const range = hi < 90 ? `${lo}–${hi} min` : `${Math.round(lo / 60)}–${Math.round(hi / 60) || 1} h`;
    return `about ${range} (around ${clock(S.eta)})`;
  }

  // A your_turn is announced at least once: a repeat (re-announced after a
  // broker outage) or one of an older join must not take a user who is
  // already paying, or done, back to the seat panel. The notifier's
  // snapshot on connect carries the current state and always applies.
  function staleTurn(m) {
    if (m.state) return false;
    if (m.sequence && S.seq && m.sequence < S.seq) return true;
    return S.state === "payment_pending" || S.state === "completed";
  }

  function turn(m) {
    if (m.sequence) S.seq = m.sequence;
    S.expireAtMS = m.expire_at_ms || (m.expire_time || 0) * 1000;
    if (m.payment_id) S.paymentID = m.payment_id;
    if (m.state === "payment_pending") {
      S.state = "payment_pending";
      document.querySelectorAll(".seat-id").forEach((e) => (e.textContent = seatsIn(m).join(", ")));
      show("#panel-pending");
      return;
    }
    const first = !inRoom(S.state);
    const wasWaiting = S.state === "waiting";
    S.state = m.state || "active";
    if (seatsIn(m).length) { S.held = seatsIn(m); S.seat = S.held[0]; }
    else if (first) { S.held = []; S.seat = null; } // a new turn: nothing held yet
    show("#panel-turn");
    countdown();
    if (S.seat) seatHeld(); // e.g. after a reload with seats held
    else { $("#pay").disabled = true; $("#pay").textContent = "Pay"; $("#release").textContent = "Release my seat"; }
    if (first) {
      loadSeats();
      yourTurn(wasWaiting);
    }
  }

  // yourTurn tells the fan in every way they may be listening: the tab's
  // title, a screen reader, an optional browser notification, the focus.
  function yourTurn(live) {
    document.title = "🔔 Your turn! – " + eventName();
    const left = Math.max(0, Math.round((S.expireAtMS - Date.now()) / 1000));
    announce(`It's your turn! You have ${duration(left)} to pick a seat and pay.`, true);
    if (live) {
      $("#turn-title").focus();
      if ($("#notify").checked && "Notification" in window && Notification.permission === "granted" && document.hidden) {
        try { new Notification("It's your turn!", { body: `Pick a seat for ${eventName()} within ${duration(left)}.` }); } catch (_) { /* not allowed here */ }
      }
    }
  }
  function restoreTitle() { if (S.title) document.title = S.title; }

  function countdown() {
    if (S.providerDown) { // the timer stands still: the hold's clock is stopped
      $("#countdown").textContent = duration(Math.round((S.pausedLeftMS || 0) / 1000)) + " (paused)";
      return;
    }
    const left = Math.max(0, Math.round((S.expireAtMS - Date.now()) / 1000));
    $("#countdown").textContent = duration(left);
    // The last minute is announced: at 60, 30 and 10 seconds.
    for (const mark of [60, 30, 10]) {
      if (left <= mark && left > mark - 5 && !S.warned[mark]) {
        S.warned[mark] = true;
        announce(`${duration(mark)} left to pay.`, mark <= 10);
      }
    }
    if (left > 60) S.warned = {};
    if (left === 0 && !S.warned[0]) { S.warned[0] = true; check("hold-ended"); }
  }

  // ---- the seat map ----
  //
  // loadSeats fetches, renderSeats draws: the only two functions that know
  // the wire format of GET /api/seats/available.

  function seatCounts(m) {
    const k = `${m.available}/${m.held}/${m.sold}`;
    if (m.available !== undefined && k !== S.lastCounts) { S.lastCounts = k; refreshSeatsSoon(); }
  }
  function refreshSeatsSoon() {
    if (!inRoom(S.state)) return;
    clearTimeout(S.seatsTimer);
    S.seatsTimer = setTimeout(loadSeats, 150);
  }

  // The seat map comes in sections (docs/http-api.md): seat i of a section
  // is row + (first + i), or seats[i]; status[i] is 'a', 'h', 's', 'r',
  // 'k' (held back by the organiser, or never for sale) or 'c' (kept for a
  // sales channel). Each
  // gateway serves a snapshot up to a second old with an ETag, so the map
  // is revalidated (cache "no-cache": a 304 when nothing changed), and when
  // the counts the notifier announced are not yet in it, it is read again a
  // second later.
  async function loadSeats(retries = 3) {
    const gen = ++S.seatsGen;
    let r;
    try { r = await api("GET", "/api/seats/available?event_id=" + encodeURIComponent(eventID), undefined, { cache: "no-cache" }); }
    catch (e) { if (e.code !== "network") error(friendly(e)); return; }
    if (gen !== S.seatsGen) return; // a newer answer is coming
    if (S.lastCounts && `${r.available}/${r.held}/${r.sold}` !== S.lastCounts && retries > 0) {
      clearTimeout(S.seatsTimer);
      S.seatsTimer = setTimeout(() => loadSeats(retries - 1), 1000);
    }
    renderSeats(r);
  }

  // r and k: seats the organiser holds back or took off sale (never pickable);
  // c: seats kept for a sales channel (a box office, partner or presale),
  // which fans buying through it get from best available
  const SEAT_STATUS = { a: "available", h: "held", s: "sold", r: "reserved", k: "killed", c: "allocated" };
  const SEAT_LABEL = { available: "free", held: "held by another fan", sold: "sold", mine: "your seat",
    reserved: "not for sale, held back by the organiser", killed: "not for sale",
    allocated: "kept for a sales channel (box office, partner or presale)",
    accessible: "kept for fans who need it: tick the checkbox to pick it" };
  // the kinds of seats reserved for accessibility (the seat map's accessible)
  const ACCESS_LABEL = { wheelchair: "wheelchair space", companion: "companion seat" };
  // needAccess: the fan ticked "I need a wheelchair space or companion seat"
  // (no proof asked): such seats are theirs to pick, best available offers them first.
  function needAccess() { const c = $("#need-access"); return !!(c && c.checked); }
  // Rows kept in the DOM above and below the visible ones.
  const ROW_BUFFER = 15;

  // seatsOf decodes the sections into [{seat_id, status}].
  function seatsOf(data) {
    const out = [];
    for (const sec of (data.sections || [])) {
      const st = sec.status || "";
      for (let i = 0; i < st.length; i++) {
        const id = sec.seats ? sec.seats[i] : sec.row + (sec.first + i);
        out.push({ seat_id: id, status: SEAT_STATUS[st[i]] || "sold", section: sec.section || 0 });
      }
    }
    return out;
  }

  // renderSeats draws the snapshot {sections: [...]}; with loadSeats, the
  // only code that knows the wire format. The layout (rows, columns) is
  // computed once, and again only when the set of seats changes. Only the
  // rows in and near the visible part of the map are in the DOM
  // (renderWindow), so the largest section stays fast; a refresh updates
  // the rendered buttons in place (never innerHTML), so the focus and the
  // roving tab stop survive it.
  function renderSeats(data) {
    performance.mark("renderSeats-start");
    const seats = seatsOf(data);
    const ids = seats.map((s) => s.seat_id).join(",");
    if (ids !== S.seatIDs) { layoutSeats(seats); S.seatIDs = ids; }
    for (const s of seats) { S.status.set(s.seat_id, s.status); S.sec.set(s.seat_id, s.section); }
    // seats reserved for accessibility: seat id -> wheelchair | companion
    S.access = new Map();
    for (const [kind, list] of Object.entries(data.accessible || {})) for (const x of list) S.access.set(x, kind);
    if (data.price_sections && JSON.stringify(data.price_sections) !== JSON.stringify(S.prices)) {
      S.prices = data.price_sections; S.currency = data.currency || "";
      priceLegend();
    }
    renderWindow();
    for (const b of S.seatEls.values()) paintSeat(b);
    rove();
    bestForm();
    performance.measure("renderSeats", "renderSeats-start"); // read by the browser test
  }

  function layoutSeats(seats) {
    const map = $("#seatmap");
    const focused = map.contains(document.activeElement) ? document.activeElement.dataset.seat : null;
    // Rows are the seat ids' letters, numbers the columns (A1…A10, B1…).
    const rows = new Map();
    for (const s of seats) {
      const m = /^([A-Za-z]+)(\d+)$/.exec(s.seat_id);
      const row = m ? m[1] : "";
      if (!rows.has(row)) rows.set(row, []);
      rows.get(row).push(s.seat_id);
    }
    S.rows = [...rows].map(([name, ids]) => ({ name, ids }));
    S.status = new Map();
    // Every seat as wide as the longest id, so that the columns line up.
    const longest = seats.reduce((n, s) => Math.max(n, s.seat_id.length), 0);
    map.style.setProperty("--seat-w", Math.max(2.25, 0.5 * longest + 0.9) + "rem");
    map.setAttribute("aria-rowcount", String(S.rows.length));
    map.setAttribute("aria-colcount", String(1 + S.rows.reduce((n, r) => Math.max(n, r.ids.length), 0)));
    S.seatEls = new Map();
    S.rendered = new Map(); // row index -> row element
    S.win = null;
    // The rows go in an inner box whose padding stands in for the rows
    // that are not rendered (padding on the scrolling box itself would
    // not scroll).
    S.rowBox = document.createElement("div");
    S.rowBox.className = "seatrows";
    S.rowBox.setAttribute("role", "none");
    map.replaceChildren(S.rowBox);
    if (focused) {
      const r = S.rows.findIndex((row) => row.ids.includes(focused));
      if (r >= 0) showRow(r);
      renderWindow();
      const b = S.seatEls.get(focused);
      if (b) b.focus();
    }
  }

  // rowHeight: every row is 2.5rem high (style.css, .seatrow).
  function rowHeight() { return 2.5 * parseFloat(getComputedStyle(document.documentElement).fontSize); }

  // renderWindow puts the rows in and near the map's visible part in the
  // DOM and takes the others out; the rows above and below are stood in
  // for by padding, so the scrollbar is true. Rows that stay are not
  // touched.
  function renderWindow() {
    const map = $("#seatmap"), n = (S.rows || []).length, box = S.rowBox;
    if (!n || !box) return;
    const h = rowHeight(), view = map.clientHeight || window.innerHeight;
    const first = Math.max(0, Math.floor(map.scrollTop / h) - ROW_BUFFER);
    const last = Math.min(n - 1, Math.ceil((map.scrollTop + view) / h) + ROW_BUFFER);
    if (S.win && S.win[0] === first && S.win[1] === last) return;
    for (const [i, el] of S.rendered) if (i < first || i > last) unrenderRow(i, el);
    let next = null;
    for (let i = last; i >= first; i--) {
      let el = S.rendered.get(i);
      if (!el) {
        el = buildRow(i);
        box.insertBefore(el, next);
        S.rendered.set(i, el);
        el.querySelectorAll("button.seat").forEach(paintSeat);
      }
      next = el;
    }
    box.style.paddingTop = (first * h) + "px";
    box.style.paddingBottom = ((n - 1 - last) * h) + "px";
    S.win = [first, last];
  }

  function buildRow(i) {
    const row = S.rows[i];
    const r = document.createElement("div");
    r.className = "seatrow";
    r.setAttribute("role", "row");
    r.setAttribute("aria-rowindex", String(i + 1));
    const l = document.createElement("span");
    l.className = "rowlabel";
    l.setAttribute("role", "rowheader");
    l.textContent = row.name || "–";
    r.appendChild(l);
    row.ids.forEach((id, j) => {
      const cell = document.createElement("span");
      cell.setAttribute("role", "gridcell");
      const b = document.createElement("button");
      b.type = "button";
      b.className = "seat";
      b.textContent = id;
      b.dataset.seat = id;
      b.dataset.row = String(i);
      b.dataset.col = String(j);
      b.tabIndex = -1;
      cell.appendChild(b);
      r.appendChild(cell);
      S.seatEls.set(id, b);
    });
    return r;
  }

  function unrenderRow(i, el) {
    // A focused seat scrolled far away: the grid keeps the focus, and the
    // arrow keys bring the seat back (keydown below).
    if (el.contains(document.activeElement)) $("#seatmap").focus({ preventScroll: true });
    for (const id of S.rows[i].ids) S.seatEls.delete(id);
    el.remove();
    S.rendered.delete(i);
  }

  // showRow scrolls the map so that row r is rendered.
  function showRow(r) {
    if (S.rendered && S.rendered.has(r)) return;
    const map = $("#seatmap");
    map.scrollTop = Math.max(0, r * rowHeight() - map.clientHeight / 2);
    renderWindow();
  }

  // paintSeat: status as class, data-status, and in the accessible name;
  // seats that cannot be picked stay focusable (aria-disabled) so that the
  // arrow keys can walk over them.
  function paintSeat(b) {
    if (!b) return;
    const id = b.dataset.seat;
    const kind = S.access && S.access.get(id);
    let st = S.held.includes(id) ? "mine" : (S.status.get(id) || "sold");
    // an accessibility seat is free for a fan who ticked the checkbox
    if (st === "allocated" && kind) st = needAccess() ? "available" : "accessible";
    if (b.dataset.status === st && (b.dataset.access || "") === (kind || "")) return;
    b.dataset.status = st;
    if (kind) b.dataset.access = kind; else delete b.dataset.access;
    const k = S.sec.get(id) || 0;
    b.dataset.section = String(k);
    b.className = "seat " + st + (kind ? " access" : "") + (S.prices.length > 1 ? " sec-" + (k % 6) : "");
    // several priced sections: the section and price are in the name too
    const p = S.prices.length > 1 && S.prices[k];
    b.setAttribute("aria-label", (kind ? `${ACCESS_LABEL[kind]}, ` : "") + `${id}, ${SEAT_LABEL[st] || st}` +
      (p ? `, ${p.name} ${money(p.price_cents)}` : ""));
    b.setAttribute("aria-disabled", st === "available" || st === "mine" ? "false" : "true");
  }

  // rove keeps exactly one rendered seat in the tab order: the last
  // focused, else yours, else the first free one.
  function rove() {
    let t = S.focusID && S.seatEls.get(S.focusID);
    if (!t && S.seat) t = S.seatEls.get(S.seat);
    const map = $("#seatmap");
    if (!t) t = map.querySelector('button.seat[data-status="available"]') || map.querySelector("button.seat");
    for (const b of S.seatEls.values()) {
      const want = b === t ? 0 : -1;
      if (b.tabIndex !== want) b.tabIndex = want;
    }
  }

  function seatGridEvents() {
    const map = $("#seatmap");
    map.tabIndex = -1; // holds the focus while the focused seat is scrolled away
    map.addEventListener("click", (e) => {
      const b = e.target.closest("button.seat");
      if (b) pick(b);
    });
    map.addEventListener("focusin", (e) => {
      const b = e.target.closest("button.seat");
      if (b) { S.focusID = b.dataset.seat; rove(); }
    });
    let frame = 0;
    const onScroll = () => {
      if (!frame) frame = requestAnimationFrame(() => { frame = 0; renderWindow(); rove(); });
    };
    map.addEventListener("scroll", onScroll, { passive: true });
    window.addEventListener("resize", onScroll);
    map.addEventListener("keydown", (e) => {
      if (!S.rows || !S.rows.length) return;
      const b = e.target.closest("button.seat");
      let r, c;
      if (b) { r = +b.dataset.row; c = +b.dataset.col; }
      else { // the grid itself has the focus: back to the last seat
        const id = S.focusID || S.seat || S.rows[0].ids[0];
        r = Math.max(0, S.rows.findIndex((row) => row.ids.includes(id)));
        c = Math.max(0, S.rows[r].ids.indexOf(id));
      }
      switch (e.key) {
        case "ArrowRight": if (b) c++; break;
        case "ArrowLeft": if (b) c--; break;
        case "ArrowDown": if (b) r++; break;
        case "ArrowUp": if (b) r--; break;
        case "Home": c = 0; if (e.ctrlKey) r = 0; break;
        case "End": c = Infinity; if (e.ctrlKey) r = S.rows.length - 1; break;
        case "PageUp": r -= 5; break;
        case "PageDown": r += 5; break;
        default: return;
      }
      e.preventDefault();
      r = Math.max(0, Math.min(S.rows.length - 1, r));
      const line = S.rows[r].ids;
      const id = line[Math.max(0, Math.min(line.length - 1, c))];
      showRow(r);
      const t = S.seatEls.get(id);
      if (t) { t.focus({ preventScroll: true }); t.scrollIntoView({ block: "nearest", inline: "nearest" }); }
    });
  }

  function pick(b) {
    const id = b.dataset.seat;
    const max = (S.event && S.event.max_seats_per_order) || 4;
    switch (b.dataset.status) {
      case "available":
        if (S.held.length >= max) { error(`You can hold at most ${max} seats. Tap one of yours to give it back first.`); break; }
        selectSeats([...S.held, id]);
        break;
      case "mine":
        if (S.held.length > 1) { selectSeats(S.held.filter((x) => x !== id)); break; } // give this one back
        announce(`Seat ${id} is already yours. Press Tab to reach Pay.`);
        break;
      default: announce(`Seat ${id} is ${SEAT_LABEL[b.dataset.status] || "not free"}. Pick a free seat.`);
    }
  }

  // selectSeats asks for the whole selection: the server holds
  // all of it or none, replacing what was held.
  async function selectSeats(ids) {
    error("");
    $("#suggest").hidden = true;
    try {
      await api("POST", "/api/booking/select-seat", { event_id: eventID, seat_ids: ids, accessible: needAccess() || undefined });
      const old = S.held;
      S.held = ids; S.seat = ids[0]; S.state = "seat_selected"; S.lastLocal = Date.now();
      for (const x of old.concat(ids)) paintSeat(S.seatEls.get(x));
      seatHeld();
      announce(`${ids.length === 1 ? "Seat " + ids[0] + " is" : "Seats " + ids.join(", ") + " are"} held for you. ${totalText()} Press Tab to reach Pay.`);
    } catch (e) {
      const taken = e.seatIDs && e.seatIDs.length ? e.seatIDs : [ids[ids.length - 1]];
      const still = S.held.length ? ` Your seats ${S.held.join(", ")} are still held.` : "";
      if (e.code === "orphan_seat") { suggest(taken, e.body.suggested_seat_ids || [], still); loadSeats(); return; }
      error(e.code === "seat_unavailable"
        ? (taken.length === 1 ? `Seat ${taken[0]} was just taken. Please pick another.` : `Seats ${taken.join(", ")} were just taken. Please pick others.`) + still
        : e.code === "seat_not_for_sale"
          ? (taken.length === 1 ? `Seat ${taken[0]} is not for sale. Please pick another.` : `Seats ${taken.join(", ")} are not for sale. Please pick others.`) + still
          : friendly(e));
      if (e.code === "hold_expired" || e.code === "invalid_state" || e.code === "booking_not_found") check("select-failed");
    }
    loadSeats();
  }

  // ---- best available (POST /api/booking/select-best) ----

  // bestForm offers 1 to the event's seats per order, and the priced
  // sections in the event's order (the best first).
  function bestForm() {
    const max = (S.event && S.event.max_seats_per_order) || 4;
    const names = S.prices.length > 1 ? S.prices.map((p) => p.name) : [];
    const key = max + "|" + names.join("|");
    if (S.bestKey === key) return;
    S.bestKey = key;
    const count = $("#best-count"), section = $("#best-section");
    const keep = count.value;
    const option = (text, value) => {
      const o = document.createElement("option");
      o.textContent = text;
      o.value = value;
      return o;
    };
    count.replaceChildren(...Array.from({ length: max }, (_, i) => option(String(i + 1), String(i + 1))));
    count.value = keep && +keep <= max ? keep : String(Math.min(2, max));
    section.replaceChildren(option("the best section", ""), ...names.map((n) => option(n, n)));
    $("label[for=best-section]").hidden = section.hidden = names.length === 0;
  }

  function bestEvents() {
    $("#best-form").addEventListener("submit", (e) => { e.preventDefault(); selectBest(); });
    const acc = $("#need-access");
    if (acc) acc.addEventListener("change", () => { for (const b of S.seatEls.values()) paintSeat(b); });
    $("#suggest-take").onclick = () => {
      const ids = S.suggested || [];
      $("#suggest").hidden = true;
      if (ids.length) selectSeats(ids);
    };
  }

  async function selectBest() {
    error("");
    $("#suggest").hidden = true;
    const count = +$("#best-count").value, section = $("#best-section").value;
    $("#best-go").disabled = true;
    try {
      const r = await api("POST", "/api/booking/select-best", { event_id: eventID, count, section: section || undefined,
        accessible: needAccess() || undefined });
      const ids = r.seat_ids || [];
      const old = S.held;
      S.held = ids; S.seat = ids[0]; S.state = "seat_selected"; S.lastLocal = Date.now();
      for (const x of old.concat(ids)) paintSeat(S.seatEls.get(x));
      seatHeld();
      const b = S.seatEls.get(ids[0]);
      if (b) { S.focusID = ids[0]; rove(); b.scrollIntoView({ block: "nearest", inline: "nearest" }); }
      announce(`Best available: ${ids.length === 1 ? "seat " + ids[0] + " is" : "seats " + ids.join(", ") + " are"} held for you. ${totalText()} Press Tab to reach Pay.`);
    } catch (e) {
      if (e.code === "no_adjacent_seats") {
        const n = e.body.largest_together || 0;
        error(n > 0 ? `No ${count} seats together are left${section ? " in " + section : ""}; at most ${n} together. Try fewer seats${section ? " or another section" : ""}.`
          : `No seats are left together${section ? " in " + section : ""}.`);
      } else error(friendly(e));
      if (e.code === "hold_expired" || e.code === "invalid_state" || e.code === "booking_not_found") check("select-failed");
    } finally {
      $("#best-go").disabled = false;
    }
    loadSeats();
  }

  // suggest shows the no-orphan rule's refusal: the seats the choice would
  // have left single and the seats offered instead, with a button to take
  // them (the focus goes to it).
  function suggest(orphans, ids, still) {
    S.suggested = ids;
    const alone = orphans.length === 1 ? `seat ${orphans[0]} on its own` : `seats ${orphans.join(", ")} on their own`;
    const msg = `That choice would leave ${alone}, and nobody could buy ${orphans.length === 1 ? "it" : "them"}.` +
      (ids.length ? ` Try ${ids.length === 1 ? "seat " + ids[0] : "seats " + ids.join(", ")} instead.` : "") + still;
    if (!ids.length) { error(msg); return; }
    announce(msg, true);
    $("#suggest-text").textContent = msg;
    $("#suggest-take").textContent = ids.length === 1 ? `Take seat ${ids[0]}` : `Take seats ${ids.join(", ")}`;
    $("#suggest").hidden = !ids.length;
    if (ids.length) $("#suggest-take").focus();
  }

  function seatHeld() {
    const ids = S.held.length ? S.held : [S.seat];
    $("#seat-note").textContent = ids.length === 1 ? `Seat ${ids[0]} is held for you.` : `Seats ${ids.join(", ")} are held for you.`;
    $("#seat-total").textContent = totalText();
    $("#pay").disabled = false;
    $("#pay").textContent = ids.length === 1 ? `Pay for seat ${ids[0]}` : `Pay for ${ids.length} seats`;
    $("#release").textContent = ids.length === 1 ? "Release my seat" : "Release my seats";
  }

  // seatsIn: the seats of a message ({seat_ids} or a ','-joined seat_id).
  function seatsIn(m) {
    if (m && Array.isArray(m.seat_ids) && m.seat_ids.length) return m.seat_ids;
    return m && m.seat_id ? String(m.seat_id).split(",") : [];
  }

  // priceOf: a seat's price from its priced section (undefined: unknown).
  function priceOf(id) {
    const p = S.prices[S.sec.get(id) || 0];
    return p ? p.price_cents : undefined;
  }

  // totalText: the running total of the seats held.
  function totalText() {
    if (!S.held.length) return "";
    let sum = 0;
    for (const id of S.held) { const c = priceOf(id); if (typeof c !== "number") return ""; sum += c; }
    return `Total ${money(sum)} ${S.currency}`.trim() + ".";
  }

  function confirmation(m) {
    const ids = seatsIn(m);
    if (!ids.length) return "Booking confirmed.";
    if (ids.length === 1) return `Booking confirmed: seat ${ids[0]}.`;
    // the total: the amount kept when paying (back from the provider), or
    // the seat map's prices
    let paid = {};
    try { paid = JSON.parse(sessionStorage.getItem("bo_pay_" + (m.payment_id || returned.id)) || "{}"); } catch (_) { /* none */ }
    let sum = paid.amount, cur = paid.currency || S.currency;
    if (typeof sum !== "number" && S.prices.length) {
      sum = 0;
      for (const id of ids) { const c = priceOf(id); if (typeof c === "number") sum += c; else { sum = undefined; break; } }
    }
    return `Booking confirmed: ${ids.length} seats, ${ids.join(", ")}` + (typeof sum === "number" ? ` (total ${money(sum)} ${cur || ""}`.trimEnd() + ")." : ".");
  }

  // priceLegend lists the priced sections with their colour and price.
  function priceLegend() {
    const ul = $("#price-legend");
    ul.replaceChildren();
    if (S.prices.length < 2) { ul.hidden = true; return; }
    S.prices.forEach((p, k) => {
      const li = document.createElement("li");
      const sw = document.createElement("span");
      sw.className = "seat available sec-" + (k % 6);
      sw.setAttribute("aria-hidden", "true");
      sw.textContent = "\u00a0";
      li.append(sw, `${p.name}: ${money(p.price_cents)} ${S.currency}`);
      li.dataset.section = String(k);
      ul.appendChild(li);
    });
    ul.hidden = false;
  }

  async function pay() {
    error("");
    $("#pay").disabled = true;
    try {
      const r = await api("POST", "/api/booking/payment/initiate", { event_id: eventID });
      // Kept for the return: what to say if the payment comes too late.
      const amount = typeof r.amount === "number" ? r.amount : (S.event && S.event.price_cents);
      try { sessionStorage.setItem("bo_pay_" + r.payment_id, JSON.stringify({ amount, currency: r.currency, seat_id: r.seat_id })); } catch (_) { /* private mode */ }
      location.href = r.payment_url; // the provider's hosted checkout, which returns here
    } catch (e) {
      error(friendly(e));
      $("#pay").disabled = false;
      if (e.code === "hold_expired" || e.code === "invalid_state") check("pay-failed");
    }
  }

  function done(title, text, state) {
    if (S.state === state && !$("#panel-done").hidden) return;
    S.state = state;
    $("#done-title").textContent = title;
    $("#done-text").textContent = text;
    $("#refund").hidden = true;
    // Back from the provider with the payment taken, but the booking did
    // not complete: the payment was classified late and is refunded.
    if (returned.status === "paid" && state !== "completed") {
      let amount;
      try { amount = JSON.parse(sessionStorage.getItem("bo_pay_" + returned.id) || "{}").amount; } catch (_) { /* none */ }
      if (typeof amount !== "number") amount = S.event && S.event.price_cents;
      const sum = typeof amount === "number" ? " of " + money(amount) : "";
      $("#refund").textContent = `Your payment${sum} was not used and will be refunded` +
        ` (payment reference ${returned.id}).`;
      $("#refund").hidden = false;
    }
    $("#rejoin").hidden = !(state === "expired" || state === "failed");
    document.body.dataset.result = state;
    show("#panel-done");
    restoreTitle();
    announce(`${title}. ${text} ${$("#refund").hidden ? "" : $("#refund").textContent}`, state === "expired");
    if (state === "completed") stopPolling();
    // The ticket, or the refund due of a payment that came too late, as
    // the ledger has it. Back from the provider, its webhook may still be
    // on the way: look again until the payment is there.
    tickets($("#view-event"), eventID, returned.status === "paid" ? returned.id : "");
  }

  // The user's tickets, from the ledger (GET /api/orders): shown after a
  // payment and on the event list; a refund due or made is listed too, and
  // a cancelled order, or its cancelled seats, with each refund: made, or
  // pending with the provider's reason.
  // Text only, never HTML from the server. With wantPayment, the list is
  // read again (every 2 s, up to 5 times) until that payment's order is in it.
  async function tickets(view, onlyEvent, wantPayment, tries = 0) {
    let orders = [];
    try { orders = (await api("GET", "/api/orders")).orders || []; } catch (_) { return; }
    if (onlyEvent) orders = orders.filter((o) => o.event_id === onlyEvent);
    if (wantPayment && tries < 5 && !orders.some((o) => o.payment_id === wantPayment)) {
      setTimeout(() => tickets(view, onlyEvent, wantPayment, tries + 1), 2000);
    }
    const ul = view.querySelector(".tickets");
    ul.replaceChildren();
    for (const o of orders) {
      const li = document.createElement("li");
      li.dataset.order = o.order_id;
      li.dataset.status = o.status;
      const seats = o.seat_ids && o.seat_ids.length > 1 ? `seats ${o.seat_ids.join(", ")}` : `seat ${o.seat_id}`;
      const cancelled = o.cancelled_seat_ids || [];
      const left = (o.seat_ids || [o.seat_id]).filter((id) => !cancelled.includes(id));
      let what;
      if (o.status === "cancelled") what = `Cancelled (${seats})`;
      else if (o.status === "completed" && cancelled.length) {
        what = `${left.length > 1 ? "Seats" : "Seat"} ${left.join(", ")} (cancelled: ${cancelled.join(", ")})`;
      } else if (o.status === "completed") what = seats[0].toUpperCase() + seats.slice(1);
      else what = `Refund ${o.status === "refunded" ? "made" : "due"} (${seats})`;
      let text = `${o.event_id} · ${what} · ${money(o.amount)} ${o.currency} · order ${o.order_id}`;
      for (const c of o.cancellations || []) {
        text += c.refund_status === "refunded"
          ? ` · Refund made: ${money(c.amount)} ${c.currency}`
          : ` · Refund pending: ${money(c.amount)} ${c.currency}${c.refund_error ? ` (${c.refund_error})` : ""}`;
      }
      li.textContent = text;
      if (o.status === "completed") cancelButton(li, o, view, onlyEvent);
      ul.appendChild(li);
    }
    ul.hidden = view.querySelector(".tickets-title").hidden = !orders.length;
  }

  // refundableUntil: each event's refundable_until (ms; 0: none), read once.
  const refundable = {};
  async function refundableUntil(id) {
    if (!(id in refundable)) {
      refundable[id] = api("GET", "/api/events/" + encodeURIComponent(id), undefined, { anonymous: true })
        .then((ev) => (ev.refundable_until ? Date.parse(ev.refundable_until) : 0), () => 0);
    }
    return refundable[id];
  }

  // cancelButton offers a fan the cancellation of their own order while
  // the event allows it (refundable_until; the server decides, by its
  // clock): a button, then an inline confirmation; the list is read again
  // afterwards, with the refund.
  async function cancelButton(li, o, view, onlyEvent) {
    const until = await refundableUntil(o.event_id);
    if (!until || until < Date.now()) return;
    const b = document.createElement("button");
    b.type = "button";
    b.className = "secondary";
    b.textContent = "Cancel order";
    b.setAttribute("aria-label", `Cancel order ${o.order_id} (refundable until ${WHEN.format(until)})`);
    const box = document.createElement("div");
    box.className = "confirm";
    box.hidden = true;
    const q = document.createElement("p");
    q.textContent = `Cancel this order? Your seats go back on sale and ${money(o.amount)} ${o.currency} is refunded.`;
    const yes = document.createElement("button");
    yes.type = "button";
    yes.textContent = "Yes, cancel and refund";
    const no = document.createElement("button");
    no.type = "button";
    no.className = "secondary";
    no.textContent = "Keep my tickets";
    box.append(q, yes, no);
    b.onclick = () => { box.hidden = false; yes.focus(); };
    no.onclick = () => { box.hidden = true; b.focus(); };
    yes.onclick = async () => {
      yes.disabled = true;
      try {
        await api("POST", "/api/orders/" + encodeURIComponent(o.order_id) + "/cancel", {});
        announce(`Order ${o.order_id} cancelled. The refund is on its way.`, false);
      } catch (e) {
        error(friendly(e));
      }
      tickets(view, onlyEvent);
    };
    li.append(" ", b, box);
  }

  (async () => {
    try {
      await identity();
      if (eventID) await openEvent(); else await listEvents();
    } catch (e) {
      error(friendly(e));
    }
  })();
})();
