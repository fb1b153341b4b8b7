// boxoffice web pages: plain JavaScript, no build step.
"use strict";
(() => {
  const $ = (s) => document.querySelector(s);
  const cfg = window.BOXOFFICE_CONFIG || {};
  const params = new URLSearchParams(location.search);
  const eventID = params.get("event_id");
  const S = { token: null, user: null, event: null, state: null, seq: 0, firstAhead: null,
    expireAtMS: 0, seat: null, ws: null, backoff: 1000, seatsTimer: null, lastCounts: "" };

  function notifierURL() {
    if (cfg.notifierURL) return cfg.notifierURL;
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    return `${proto}//${location.hostname}:8082/ws`;
  }

  async function api(method, path, body) {
    const headers = { "Content-Type": "application/json" };
    if (S.token) headers.Authorization = "Bearer " + S.token;
    const r = await fetch(path, { method, headers, body: body ? JSON.stringify(body) : undefined });
    let data = null;
    try { data = await r.json(); } catch (_) { /* empty body */ }
    if (r.status === 401 && path !== "/api/auth/dev-token") {
      localStorage.removeItem("bo_token"); // expired: get a new one
      await identity();
      return api(method, path, body);
    }
    if (!r.ok) { const e = new Error((data && data.message) || r.statusText); e.status = r.status; e.code = data && data.code; throw e; }
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

  function show(panel) {
    for (const p of ["#panel-join", "#panel-waiting", "#panel-turn", "#panel-pending", "#panel-done"]) $(p).hidden = p !== panel;
    document.body.dataset.view = panel.slice(7);
  }
  function error(msg) { const e = $("#error"); e.textContent = msg || ""; e.hidden = !msg; }

  // ---- event list ----
  async function listEvents() {
    $("#view-events").hidden = false;
    const evs = await api("GET", "/api/events");
    const ul = $("#events");
    ul.innerHTML = "";
    for (const ev of (evs.events || evs)) {
      const li = document.createElement("li");
      const c = ev.counts || {};
      li.innerHTML = `<div><strong></strong><div class="meta">${c.available ?? "?"} of ${c.total ?? "?"} seats left · ${c.waiting ?? 0} waiting</div></div>`;
      li.querySelector("strong").textContent = ev.name || ev.id;
      const b = document.createElement("button");
      b.textContent = "Get tickets";
      b.dataset.event = ev.id;
      b.onclick = async () => {
        b.disabled = true;
        try { await api("POST", "/api/booking/request", { event_id: ev.id }); } catch (e) { if (e.status !== 409) { alert(e.message); b.disabled = false; return; } }
        location.href = "/?event_id=" + encodeURIComponent(ev.id);
      };
      li.appendChild(b);
      ul.appendChild(li);
    }
    if (!ul.children.length) ul.innerHTML = "<li>No events on sale.</li>";
    tickets($("#view-events"));
  }

  // ---- one event ----
  async function openEvent() {
    $("#view-event").hidden = false;
    try { S.event = await api("GET", "/api/events/" + encodeURIComponent(eventID)); }
    catch (e) { error(e.status === 404 ? "This event does not exist." : e.message); return; }
    $("#event-name").textContent = S.event.name || S.event.id;
    $("#join").onclick = join;
    $("#pay").onclick = pay;
    connect();
  }

  async function join() {
    error("");
    try {
      const r = await api("POST", "/api/booking/request", { event_id: eventID });
      S.seq = r.sequence;
      reconnectNow();
    } catch (e) { error(e.message); }
  }

  function connect() {
    const url = notifierURL() + "?event_id=" + encodeURIComponent(eventID);
    // The token travels as a subprotocol, not in the URL (no logs).
    const ws = new WebSocket(url, ["boxoffice.v1", "bearer." + S.token]);
    S.ws = ws;
    ws.onopen = () => { S.backoff = 1000; $("#conn").textContent = "live"; document.body.dataset.live = "1"; };
    ws.onmessage = (m) => { try { onMessage(JSON.parse(m.data)); } catch (e) { console.error(e); } };
    ws.onclose = () => {
      document.body.dataset.live = "0";
      if (S.ws !== ws) return;
      $("#conn").textContent = "reconnecting…";
      const wait = S.backoff + Math.random() * 500;
      S.backoff = Math.min(S.backoff * 2, 15000);
      setTimeout(connect, wait);
    };
  }
  function reconnectNow() { const old = S.ws; S.ws = null; if (old) old.close(); connect(); }

  function onMessage(m) {
    switch (m.type) {
      case "position":
        if (m.state === "waiting") { S.state = "waiting"; S.seq = m.sequence; }
        if (S.state === "waiting") waiting(m);
        seatCounts(m);
        break;
      case "your_turn":
        if (!staleTurn(m)) turn(m);
        break;
      case "booking_completed":
        done("You're going! 🎉", `Booking confirmed${m.seat_id ? ": seat " + m.seat_id : ""}.`, "completed");
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
      case "seats_changed":
        refreshSeatsSoon();
        break;
      case "state":
        S.state = m.state;
        $("#join-note").textContent = { none: "You are not in the queue for this event.", cancelled: "You left the queue.",
          abandoned: "You were away too long and lost your place." }[m.state] || "";
        show("#panel-join");
        break;
    }
  }

  function waiting(m) {
    show("#panel-waiting");
    // Users ahead: exact in the first message, an upper bound from the
    // broadcast (served = highest sequence admitted so far).
    let pos = m.position || Math.max(1, S.seq - m.served);
    if (S.firstAhead === null || pos > S.firstAhead) S.firstAhead = pos;
    $("#position").textContent = pos;
    // Share of the queue ahead of the user on arrival that has been let
    // in: never full while they are still waiting (position 1 is "next").
    const pct = Math.round(100 * (S.firstAhead - pos) / S.firstAhead);
    $("#progress").style.width = Math.max(3, pct) + "%";
    const rate = m.rate_per_min;
    $("#eta").textContent = rate > 0 ? duration(Math.ceil(pos * 60 / rate)) : "waiting for the first admissions…";
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
    if (m.state === "payment_pending") {
      S.state = "payment_pending";
      document.querySelectorAll(".seat-id").forEach((e) => (e.textContent = m.seat_id || ""));
      show("#panel-pending");
      return;
    }
    const first = S.state !== "active" && S.state !== "seat_selected";
    S.state = m.state || "active";
    if (m.seat_id) S.seat = m.seat_id;
    show("#panel-turn");
    $("#pay").disabled = !S.seat;
    if (S.seat) seatHeld(S.seat); // e.g. after a reload with a seat held
    if (first) { tick(); loadSeats(); }
  }

  function tick() {
    if (S.state !== "active" && S.state !== "seat_selected") return;
    const left = Math.max(0, Math.round((S.expireAtMS - Date.now()) / 1000));
    $("#countdown").textContent = duration(left);
    if (left > 0) setTimeout(tick, 1000);
  }

  function seatCounts(m) {
    const k = `${m.available}/${m.held}/${m.sold}`;
    if (m.available !== undefined && k !== S.lastCounts) { S.lastCounts = k; refreshSeatsSoon(); }
  }
  function refreshSeatsSoon() {
    if (S.state !== "active" && S.state !== "seat_selected") return;
    clearTimeout(S.seatsTimer);
    S.seatsTimer = setTimeout(loadSeats, 150);
  }

  // The seat map comes in sections (docs/http-api.md): seat i of a section
  // is row + (first + i), or seats[i]; status[i] is 'a', 'h' or 's'. Each
  // gateway serves a snapshot up to a second old, so when the counts the
  // notifier announced are not yet in it, look again a second later.
  const SEAT_STATUS = { a: "available", h: "held", s: "sold" };
  async function loadSeats(retries = 3) {
    const r = await api("GET", "/api/seats/available?event_id=" + encodeURIComponent(eventID));
    if (S.lastCounts && `${r.available}/${r.held}/${r.sold}` !== S.lastCounts && retries > 0) {
      clearTimeout(S.seatsTimer);
      S.seatsTimer = setTimeout(() => loadSeats(retries - 1), 1000);
    }
    const map = $("#seatmap");
    // Rows are the seat ids' letters, numbers the columns (A1…A10, B1…).
    const rows = new Map();
    let cols = 0;
    for (const sec of r.sections) {
      for (let i = 0; i < sec.status.length; i++) {
        const id = sec.seats ? sec.seats[i] : sec.row + (sec.first + i);
        const s = { seat_id: id, status: SEAT_STATUS[sec.status[i]] || "sold" };
        const m = /^([A-Z]+)(\d+)$/.exec(id) || [null, "", id];
        if (!rows.has(m[1])) rows.set(m[1], []);
        rows.get(m[1]).push(s);
        cols = Math.max(cols, rows.get(m[1]).length);
      }
    }
    map.style.gridTemplateColumns = `1.5rem repeat(${cols}, minmax(1.6rem, 1fr))`;
    map.innerHTML = "";
    for (const [row, seats] of rows) {
      const l = document.createElement("span");
      l.className = "rowlabel"; l.textContent = row;
      map.appendChild(l);
      for (const s of seats) {
        const b = document.createElement("button");
        const mine = s.seat_id === S.seat;
        b.className = "seat " + (mine ? "mine" : s.status);
        b.textContent = s.seat_id;
        b.dataset.seat = s.seat_id;
        b.dataset.status = mine ? "mine" : s.status;
        b.disabled = !mine && s.status !== "available";
        b.onclick = () => selectSeat(s.seat_id);
        map.appendChild(b);
      }
      for (let i = seats.length; i < cols; i++) map.appendChild(document.createElement("span"));
    }
  }

  async function selectSeat(id) {
    error("");
    try {
      await api("POST", "/api/booking/select-seat", { event_id: eventID, seat_id: id });
      S.seat = id; S.state = "seat_selected";
      seatHeld(id);
    } catch (e) { error(e.code === "seat_unavailable" ? `Seat ${id} was just taken; pick another.` : e.message); }
    loadSeats();
  }

  function seatHeld(id) {
    $("#seat-note").textContent = `Seat ${id} is held for you.`;
    $("#pay").disabled = false;
    $("#pay").textContent = `Pay for seat ${id}`;
  }

  async function pay() {
    error("");
    $("#pay").disabled = true;
    try {
      const r = await api("POST", "/api/booking/payment/initiate", { event_id: eventID });
      location.href = r.payment_url; // the provider's hosted checkout, which returns here
    } catch (e) { error(e.message); $("#pay").disabled = false; }
  }

  function done(title, text, state) {
    S.state = state;
    $("#done-title").textContent = title;
    $("#done-text").textContent = text;
    document.body.dataset.result = state;
    show("#panel-done");
    if (state === "completed") tickets($("#view-event"), eventID);
  }

  // The user's tickets, from the ledger (GET /api/orders): shown after a
  // payment and on the event list. Text only, never HTML from the server.
  async function tickets(view, onlyEvent) {
    let orders = [];
    try { orders = (await api("GET", "/api/orders")).orders || []; } catch (_) { return; }
    if (onlyEvent) orders = orders.filter((o) => o.event_id === onlyEvent);
    const ul = view.querySelector(".tickets");
    ul.innerHTML = "";
    for (const o of orders) {
      const li = document.createElement("li");
      li.dataset.order = o.order_id;
      const what = o.status === "completed" ? `Seat ${o.seat_id}` : `Refund ${o.status === "refunded" ? "made" : "due"} (seat ${o.seat_id})`;
      li.textContent = `${o.event_id} · ${what} · ${(o.amount / 100).toFixed(2)} ${o.currency} · order ${o.order_id}`;
      ul.appendChild(li);
    }
    ul.hidden = view.querySelector(".tickets-title").hidden = !orders.length;
  }

  function duration(s) {
    if (s < 60) return s + " s";
    const m = Math.floor(s / 60);
    return m < 60 ? `${m} min ${s % 60} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
  }

  (async () => {
    try {
      await identity();
      if (eventID) await openEvent(); else await listEvents();
    } catch (e) {
      const p = document.createElement("p"); // the message may come from the server: text, never HTML
      p.className = "error"; p.textContent = e.message;
      document.querySelector("main").appendChild(p);
    }
  })();
})();
