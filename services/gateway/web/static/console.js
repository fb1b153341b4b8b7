// The operator console (console.html at /admin/, docs/operators.md): one
// page with views chosen by the URL's fragment — #/events (the list),
// #/new and #/edit/<id> (the event form), #/live/<id> (the live view and
// its controls), #/orders and #/audit. It calls the admin API in the
// operator's session (the cookie of /admin/sign-in.html, where an
// operator who is not signed in is sent) and shows the API's own error
// messages. The live view reads GET /api/admin/events/{id}/live as
// Server-Sent Events and keeps the last hour of it in the page for the
// chart (an SVG drawn with DOM APIs, with a text summary) and for the
// estimated time to sell out (sellOut); the document's own admissions
// per minute of the last hour are a second chart (drawMinutes), and its
// counts of what went wrong the errors panel (renderErrors). The seats
// operators hold back or killed are listed under the controls
// (loadMarks) and changed there (POST /api/admin/events/{id}/seat-marks),
// and the box office sells there (submitBox: POST .../box-office/sales);
// the payment provider is declared degraded or recovered there too (PUT
// /api/admin/provider). Under them: the sale's phase and its history
// (PUT .../phase, GET .../phases), access codes (POST .../codes?format=csv,
// offered as a file at once since they are never shown again; GET
// .../codes) and registration (PUT .../registration, POST
// .../registration/draw, GET /api/events/{id}/registration). The event
// form also sets the sale rules and the waitlist (PUT .../waitlist). A
// viewer sees everything with every control disabled (the API answers 403
// anyway).
(() => {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const { int, money, toMinor, toUTC, fromUTC, el, svg, toSignIn, call, api } = window.operatorKit;
  const HOUR = 3600;
  const ETA_WINDOW = 300; // the sale rate of the sell-out estimate: over the last 5 minutes
  const ETA_MIN_SPAN = 60; // ... and over at least a minute, however recently the view opened

  let me = null; // GET /api/admin/me
  let live = null; // the EventSource of the live view
  let liveID = ""; // its event
  let doc = null; // the latest live document
  let samples = []; // [{t, waiting, in_room, rate, sold, failed}] of liveID, the last hour
  let liveProblem = ""; // the stream's last "problem" ("" once a document came after it)
  let marksShown = ""; // reserved/killed counts the marks list was loaded for
  let auditCursor = "";
  let editing = null; // the event being edited (GET /api/admin/events/{id})
  let formNote = ""; // an error the next form shows (a new event's refused waitlist settings)

  const canAct = () => !!me && me.role !== "viewer";

  // --- DOM helpers ---

  const announce = (msg) => {
    $("announce").textContent = "";
    setTimeout(() => { $("announce").textContent = msg; }, 50);
  };
  const showError = (id, msg) => {
    $(id).textContent = msg || "";
    $(id).hidden = !msg;
  };

  // --- API ---

  async function whoami() {
    const res = await fetch("/api/admin/me", { credentials: "same-origin" });
    if (res.status === 401) {
      toSignIn();
      return false;
    }
    if (!res.ok) {
      showError("events-error", "Could not check your session (" + res.status + ").");
      return false;
    }
    me = await res.json();
    $("whoami").textContent = "Signed in as " + me.account + " (" + me.role + ")";
    $("sign-out").hidden = me.via !== "session";
    $("viewer-note").hidden = canAct();
    document.body.dataset.account = me.account;
    document.body.dataset.role = me.role;
    for (const e of document.querySelectorAll("[data-acts]")) e.disabled = !canAct();
    return true;
  }

  async function signOut() {
    stopLive();
    await fetch("/api/admin/sign-out", { method: "POST", credentials: "same-origin" });
    location.assign("/admin/sign-in.html?signed_out=1");
  }

  // disableControls disables every control a viewer may not use (the
  // page's buttons that change something).
  function disableControls(root) {
    if (canAct()) return;
    for (const e of root.querySelectorAll("input, select, button[type=submit], button.act")) e.disabled = true;
  }

  // --- events ---

  async function allEvents() {
    const out = [];
    let after = "";
    for (let i = 0; i < 20; i++) {
      const res = await fetch("/api/events?limit=100" + (after ? "&after=" + encodeURIComponent(after) : ""));
      if (!res.ok) throw new Error("The event list could not be loaded (" + res.status + ").");
      const body = await res.json();
      out.push(...(body.events || []));
      if (!body.next) break;
      after = body.next;
    }
    return out;
  }

  async function showEvents() {
    showError("events-error", "");
    $("new-event").hidden = !canAct();
    try {
      const list = await allEvents();
      $("event-ids").replaceChildren(...list.map((e) => el("option", { value: e.id }, e.name || e.id)));
      $("events").tBodies[0].replaceChildren(...list.map((e) => {
        const c = e.counts || {};
        const state = e.paused ? "Paused" : c.total > 0 && c.sold >= c.total ? "Sold out" : "On sale";
        const open = el("td", { class: "links" }, el("a", { href: "#/live/" + encodeURIComponent(e.id), "data-live-link": e.id }, "Live"));
        if (canAct()) open.append(" ", el("a", { href: "#/edit/" + encodeURIComponent(e.id) }, "Edit"));
        return el("tr", { "data-event": e.id },
          el("th", { scope: "row" }, el("span", { class: "ev-name" }, e.name || e.id), el("br"), el("span", { class: "muted" }, e.id)),
          el("td", {}, state),
          el("td", { class: "num" }, int(c.sold || 0) + " / " + int(c.total || 0)),
          el("td", { class: "num" }, int(c.waiting || 0)),
          open);
      }));
      $("events").hidden = list.length === 0;
      $("events-none").hidden = list.length > 0;
      document.body.dataset.events = String(list.length);
    } catch (e) {
      showError("events-error", e.message);
    }
  }

  // --- the event form ---

  function sectionRow(s, i, locked) {
    const id = (k) => "s" + i + "-" + k;
    const field = (k, label, attrs, value) => el("div", { class: "field" }, el("label", { for: id(k) }, label),
      Object.assign(el("input", Object.assign({ id: id(k), "data-k": k, autocomplete: "off" }, attrs)), { value: value ?? "" }));
    const row = el("div", { class: "section-row", "data-section": String(i) },
      field("name", "Section " + (i + 1) + " name", { spellcheck: "false" }, s.name),
      field("rows", "Rows", { type: "number", min: "1", inputmode: "numeric" }, s.rows),
      field("seats_per_row", "Seats per row", { type: "number", min: "1", inputmode: "numeric" }, s.seats_per_row),
      field("price", "Price", { inputmode: "decimal" }, s.price));
    if (!locked) {
      const rm = el("button", { type: "button", class: "secondary small", "aria-label": "Remove section " + (i + 1) }, "Remove");
      rm.addEventListener("click", () => { row.remove(); renumber(); });
      row.append(rm);
    }
    return row;
  }
  function renumber() {
    [...$("section-rows").children].forEach((r, i) => {
      r.dataset.section = String(i);
      r.querySelector("label").textContent = "Section " + (i + 1) + " name";
      const b = r.querySelector("button");
      if (b) b.setAttribute("aria-label", "Remove section " + (i + 1));
    });
  }
  let sectionSeq = 0;
  function addSection(s, locked) {
    $("section-rows").append(sectionRow(s || {}, sectionSeq++, locked));
    renumber();
  }

  async function showForm(id) {
    showError("form-error", "");
    const f = $("event-form");
    f.reset();
    $("section-rows").replaceChildren();
    sectionSeq = 0;
    editing = null;
    if (!id) {
      $("form-title").textContent = "New event";
      $("f-submit").textContent = "Create the event";
      $("f-id").disabled = false;
      $("f-sections").disabled = false;
      $("add-section").hidden = false;
      addSection({ name: "Stalls", rows: 10, seats_per_row: 20, price: "40.00" });
      $("f-hold").value = "300";
      $("f-challenge").value = "none";
      $("f-finish").checked = true;
      $("f-orphan").checked = true;
      $("f-offer").value = "0";
    } else {
      $("form-title").textContent = "Edit " + id;
      $("f-submit").textContent = "Save the changes";
      try {
        editing = await api("GET", "/api/admin/events/" + encodeURIComponent(id));
      } catch (e) {
        showError("form-error", e.message);
        return;
      }
      const e = editing;
      $("f-id").value = e.id;
      $("f-id").disabled = true;
      $("f-name").value = e.name || "";
      $("f-currency").value = e.currency || "";
      for (const s of e.sections || []) addSection({ name: s.name, price: money(s.price_cents, e.currency).split(" ")[0].replace(/,/g, "") }, true);
      for (const r of $("section-rows").querySelectorAll("[data-k=rows],[data-k=seats_per_row]")) r.closest(".field").hidden = true;
      $("f-sections").disabled = true; // the seat map and prices stay
      $("add-section").hidden = true;
      $("f-capacity").value = e.capacity;
      $("f-rate").value = e.admit_per_minute || 0;
      $("f-hold").value = e.hold_seconds;
      $("f-max").value = e.max_seats_per_order || "";
      $("f-start").value = fromUTC(e.sales_start);
      $("f-end").value = fromUTC(e.sales_end);
      $("f-challenge").value = e.challenge || "none";
      $("f-finish").checked = e.finish_after_end !== false;
      $("f-orphan").checked = !!e.no_orphan_rule;
      $("f-refundable").value = fromUTC(e.refundable_until);
      $("f-offer").value = e.offer_seconds || 0;
      $("f-wl-early").checked = !!e.waitlist_early;
    }
    disableControls(f);
    if (formNote) {
      showError("form-error", formNote);
      formNote = "";
    }
  }

  // waitlistBody is the form's PUT .../waitlist body, or null when it
  // asks for no change (a new event: no waitlist).
  function waitlistBody() {
    const v = $("f-offer").value.trim();
    const body = { offer_seconds: v === "" ? 0 : Number(v), early: $("f-wl-early").checked };
    const was = editing ? { offer_seconds: editing.offer_seconds || 0, early: !!editing.waitlist_early } : { offer_seconds: 0, early: false };
    return body.offer_seconds === was.offer_seconds && body.early === was.early ? null : body;
  }

  // invalidField marks the field an API error names (its message starts
  // with the JSON field: "offer_seconds must be …") and focuses it.
  const formFields = { capacity: "f-capacity", admit_per_minute: "f-rate", hold_seconds: "f-hold", max_seats_per_order: "f-max",
    sales_start: "f-start", sales_end: "f-end", name: "f-name", id: "f-id", currency: "f-currency", refundable_until: "f-refundable",
    offer_seconds: "f-offer", challenge: "f-challenge" };
  function invalidField(msg) {
    for (const e of document.querySelectorAll("#event-form [aria-invalid]")) e.removeAttribute("aria-invalid");
    const k = Object.keys(formFields).find((f) => new RegExp("^" + f.replace(/_/g, "[_ ]") + "\\b", "i").test(msg || ""));
    if (!k || $(formFields[k]).disabled) return;
    $(formFields[k]).setAttribute("aria-invalid", "true");
    $(formFields[k]).setAttribute("aria-errormessage", "form-error");
    $(formFields[k]).focus();
  }

  // formBody reads the form: the creation's body, or the PATCH's (only
  // what changed). It throws for what the page can tell at once; the API
  // checks everything else and its message is shown.
  function formBody() {
    const num = (id) => ($(id).value.trim() === "" ? undefined : Number($(id).value));
    const body = {};
    const name = $("f-name").value.trim();
    const cap = num("f-capacity"), rate = num("f-rate"), hold = num("f-hold"), max = num("f-max");
    const start = toUTC($("f-start").value), end = toUTC($("f-end").value);
    const challenge = $("f-challenge").value;
    const finish = $("f-finish").checked, orphan = $("f-orphan").checked, refundable = toUTC($("f-refundable").value);
    if (!editing) {
      body.id = $("f-id").value.trim();
      if (!body.id) throw new Error("Enter an event id.");
      if (name) body.name = name;
      const cur = $("f-currency").value.trim().toUpperCase();
      if (cur) body.currency = cur;
      body.sections = [...$("section-rows").children].map((r, i) => {
        const v = (k) => r.querySelector("[data-k=" + k + "]").value.trim();
        const price = toMinor(v("price"), cur);
        if (Number.isNaN(price)) throw new Error("Section " + (i + 1) + ": the price must be a number such as 40.00.");
        return { name: v("name"), rows: Number(v("rows")), seats_per_row: Number(v("seats_per_row")), price_cents: price };
      });
      if (body.sections.length === 0) throw new Error("Add at least one section.");
      if (cap !== undefined) body.capacity = cap;
      if (rate !== undefined) body.admit_per_minute = rate;
      if (hold !== undefined) body.hold_seconds = hold;
      if (max !== undefined) body.max_seats_per_order = max;
      if (start) body.sales_start = start;
      if (end) body.sales_end = end;
      body.challenge = challenge;
      body.finish_after_end = finish;
      body.no_orphan_rule = orphan;
      if (refundable) body.refundable_until = refundable;
      return body;
    }
    const e = editing;
    if (name !== (e.name || "")) body.name = name;
    if (cap !== undefined && cap !== e.capacity) body.capacity = cap;
    if (rate !== undefined && rate !== (e.admit_per_minute || 0)) body.admit_per_minute = rate;
    if (hold !== undefined && hold !== e.hold_seconds) body.hold_seconds = hold;
    if (max !== undefined && max !== e.max_seats_per_order) body.max_seats_per_order = max;
    if (start !== (e.sales_start ? toUTC(fromUTC(e.sales_start)) : "")) body.sales_start = start;
    if (end !== (e.sales_end ? toUTC(fromUTC(e.sales_end)) : "")) body.sales_end = end;
    if (challenge !== (e.challenge || "none")) body.challenge = challenge;
    if (finish !== (e.finish_after_end !== false)) body.finish_after_end = finish;
    if (orphan !== !!e.no_orphan_rule) body.no_orphan_rule = orphan;
    if (refundable !== (e.refundable_until ? toUTC(fromUTC(e.refundable_until)) : "")) body.refundable_until = refundable;
    return body;
  }

  async function submitForm(ev) {
    ev.preventDefault();
    showError("form-error", "");
    let body;
    try {
      body = formBody();
    } catch (e) {
      showError("form-error", e.message);
      return;
    }
    const wl = waitlistBody();
    if (editing && Object.keys(body).length === 0 && !wl) {
      showError("form-error", "Nothing changed.");
      return;
    }
    invalidField("");
    $("f-submit").disabled = true;
    try {
      if (editing) {
        const path = "/api/admin/events/" + encodeURIComponent(editing.id);
        // the waitlist first: a refusal there leaves the event as it was
        if (wl) await api("PUT", path + "/waitlist", wl);
        if (Object.keys(body).length > 0) await api("PATCH", path, body);
        announce("Event " + editing.id + " saved.");
        location.hash = "#/live/" + encodeURIComponent(editing.id);
      } else {
        const e = await api("POST", "/api/admin/events", body);
        if (wl) {
          try {
            await api("PUT", "/api/admin/events/" + encodeURIComponent(e.id) + "/waitlist", wl);
          } catch (err) {
            // the event exists: its edit form says what was refused
            formNote = "Event " + e.id + " created, but its waitlist settings were refused: " + err.message;
            location.hash = "#/edit/" + encodeURIComponent(e.id);
            return;
          }
        }
        announce("Event " + e.id + " created.");
        location.hash = "#/live/" + encodeURIComponent(e.id);
      }
    } catch (e) {
      showError("form-error", e.message);
      invalidField(e.body && e.body.message);
    } finally {
      $("f-submit").disabled = !canAct();
    }
  }

  // --- the live view ---

  function stopLive() {
    if (live) live.close();
    live = null;
  }

  function setConn(mode, text) {
    $("live-conn").dataset.mode = mode;
    $("live-conn").textContent = text;
  }

  function showLive(id) {
    showError("live-error", "");
    showError("control-error", "");
    if (id !== liveID) {
      samples = [];
      doc = null;
      liveID = id;
      for (const e of document.querySelectorAll("[data-live]")) e.textContent = "–";
      $("live-money").tBodies[0].replaceChildren();
      $("live-errors").tBodies[0].replaceChildren();
      $("errors-summary").textContent = "–";
      $("live-provider").textContent = "Payment provider: –";
      $("live-provider").dataset.provider = "unknown";
      liveProblem = "";
      marksShown = "";
      showError("marks-error", "");
      $("marks-result").hidden = true;
      boxKey = "";
      showError("box-error", "");
      $("box-result").hidden = true;
      drawMinutes();
      $("live-eta").textContent = "—";
      $("live-eta-note").textContent = "Not selling";
      $("c-capacity").value = $("c-rate").value = $("c-hold").value = "";
      drawChart();
      for (const k of ["phase-error", "codes-error", "reg-error"]) showError(k, "");
      $("codes-result").hidden = true;
      $("ph-phase").value = $("k-phase").value = $("r-phase").value = $("r-opens").value = $("r-closes").value = $("d-count").value = "";
      $("phases").tBodies[0].replaceChildren();
      $("batches").tBodies[0].replaceChildren();
      delete $("phase-form").dataset.dirty;
      delete $("reg-form").dataset.dirty;
    }
    $("live-title").textContent = "Live: " + id;
    $("live-edit").href = "#/edit/" + encodeURIComponent(id);
    $("live-edit").hidden = !canAct();
    $("live-orders").href = "#/orders?event_id=" + encodeURIComponent(id);
    $("live-report").href = "/admin/report.html?event_id=" + encodeURIComponent(id);
    stopLive();
    setConn("connecting", "Connecting…");
    live = new EventSource("/api/admin/events/" + encodeURIComponent(id) + "/live");
    live.onopen = () => setConn("live", "Live");
    live.onmessage = (m) => {
      try {
        liveProblem = "";
        render(JSON.parse(m.data));
      } catch (e) {
        showError("live-error", "A live update could not be read.");
      }
    };
    live.addEventListener("problem", (m) => {
      let msg = "";
      try { msg = JSON.parse(m.data).message; } catch (e) { /* none */ }
      setConn("offline", "Not updating: " + msg);
      liveProblem = msg || "the figures could not be read";
      if (doc) renderErrors(doc);
    });
    live.addEventListener("signed_out", () => {
      stopLive();
      toSignIn();
    });
    live.onerror = async () => {
      if (live && live.readyState === EventSource.CLOSED) {
        // refused (401, 403, 404): say why, or go to sign in
        stopLive();
        setConn("offline", "Stopped");
        try {
          await api("GET", "/api/admin/events/" + encodeURIComponent(id));
          showError("live-error", "The live view stopped. Reload the page to start it again.");
        } catch (e) {
          showError("live-error", e.message);
        }
        return;
      }
      setConn("offline", "Reconnecting…");
    };
    disableControls($("view-live"));
    loadSale();
  }

  function render(d) {
    if (d.event_id !== liveID) return;
    // a gateway of the previous version (during a rolling deploy) sends
    // the document without these
    d.provider = d.provider || { degraded: false };
    d.cancellations = d.cancellations || { cancelled: 0, refunded: 0 };
    d.admissions_per_minute = d.admissions_per_minute || [];
    d.seats.reserved = d.seats.reserved || 0;
    d.seats.killed = d.seats.killed || 0;
    d.webhooks = d.webhooks || { total: 0, by_outcome: {} };
    const first = !doc;
    doc = d;
    $("live-title").textContent = "Live: " + (d.name || d.event_id);
    document.title = "Live: " + (d.name || d.event_id) + " · boxoffice console";
    const state = d.paused ? "Paused" : d.sold_out ? "Sold out" : "On sale";
    $("live-state").textContent = state;
    $("live-state").dataset.state = state.toLowerCase().replace(" ", "-");
    $("live-at").textContent = "Figures of " + d.at.slice(11, 19) + " UTC";
    const set = (k, v) => { document.querySelector('[data-live="' + k + '"]').textContent = int(v); };
    set("waiting", d.waiting);
    set("prequeued", d.prequeued);
    document.querySelector('[data-live="prequeued"]').parentElement.hidden = !d.prequeued;
    set("in_room", d.in_room);
    set("admitted_last_minute", d.admitted_last_minute);
    set("sold", d.seats.sold);
    set("held", d.seats.held);
    set("available", d.seats.available);
    set("reserved", d.seats.reserved);
    set("killed", d.seats.killed);
    const prov = d.provider.degraded ? "degraded" : "working";
    $("live-provider").textContent = "Payment provider: " + (d.provider.degraded ? "degraded since " + hms(d.provider.since) + " UTC" : "working");
    $("live-provider").dataset.provider = prov;
    document.body.dataset.liveProvider = prov;
    document.body.dataset.liveReserved = String(d.seats.reserved);
    document.body.dataset.liveKilled = String(d.seats.killed);
    document.body.dataset.liveWaiting = String(d.waiting);
    document.body.dataset.liveInRoom = String(d.in_room);
    document.body.dataset.liveSold = String(d.seats.sold);
    document.body.dataset.livePaused = String(d.paused);
    document.body.dataset.liveRate = String(d.admit_per_minute);
    document.body.dataset.liveAt = d.at;

    const rows = [];
    const curs = [...new Set(Object.keys(d.revenue).concat(Object.keys(d.refunds)))].sort();
    for (const c of curs) {
      rows.push(["Revenue " + c, money(d.revenue[c] || 0, c), "revenue:" + c]);
      if (d.refunds[c]) rows.push(["Refunds " + c, money(d.refunds[c], c), "refunds:" + c]);
    }
    if (curs.length === 0) rows.push(["Revenue", "none yet", "revenue"]);
    rows.push(["Payments started", int(d.payments.started), "payments.started"],
      ["Payments completed", int(d.payments.completed), "payments.completed"],
      ["Payments failed", int(d.payments.failed), "payments.failed"],
      ["Late payments (refunded)", int(d.payments.late), "payments.late"]);
    $("live-money").tBodies[0].replaceChildren(...rows.map(([k, v, key]) =>
      el("tr", {}, el("th", { scope: "row" }, k), el("td", { class: "num", "data-money": key }, v))));

    // the controls show the current settings, unless the operator is typing
    $("c-pause").textContent = d.paused ? "Resume the sale" : "Pause the sale";
    $("c-pause").classList.toggle("danger", !d.paused);
    $("c-provider").textContent = d.provider.degraded ? "Declare it recovered" : "Declare it degraded";
    $("c-provider").classList.toggle("danger", !d.provider.degraded);
    for (const [id, v] of [["c-capacity", d.capacity], ["c-rate", d.admit_per_minute], ["c-hold", d.hold_seconds]]) {
      if (document.activeElement !== $(id) && ($(id).dataset.shown !== String(v) || first)) {
        $(id).value = v;
        $(id).dataset.shown = String(v);
      }
    }

    const t = Date.parse(d.at) / 1000;
    if (!samples.length || samples[samples.length - 1].t < t) {
      samples.push({ t, waiting: d.waiting, in_room: d.in_room, rate: d.admitted_last_minute, sold: d.seats.sold, failed: d.payments.failed });
    }
    while (samples.length && samples[0].t < t - HOUR) samples.shift();
    const eta = sellOut(d, samples);
    $("live-eta").textContent = eta.text;
    $("live-eta-note").textContent = eta.note;
    document.body.dataset.liveEta = eta.text;
    drawChart();
    drawMinutes();
    renderErrors(d);
    // registrations while the window is open: counted again every 5 s
    if (regWindow && !regWindow.drawn_at && Date.now() - regLoaded > 5000) loadRegistration();
    // the codes' redemptions: every 15 s while the event has batches
    if ($("batches").tBodies[0].rows.length > 0 && Date.now() - batchesLoaded > 15000) loadBatches();
    // another operator's hold or release: the list follows the counts
    const marks = d.seats.reserved + "/" + d.seats.killed;
    if (marks !== marksShown) {
      marksShown = marks;
      loadMarks();
    }
  }

  const hms = (iso) => (iso ? iso.slice(11, 19) : "–");

  // renderErrors fills the errors panel from the live document: the
  // provider's state, payments failed (and over the last 5 minutes, from
  // the page's samples), late payments, refunds of cancellations still
  // pending, the payment webhooks refused (recent: in the last 5 min), and
  // whether the figures are up to date. Each row says its
  // state in words ("OK" or "Check"), not only in colour.
  function renderErrors(d) {
    const last = samples[samples.length - 1];
    let from = samples[0];
    for (const x of samples) if (last && x.t <= last.t - ETA_WINDOW) from = x;
    const recent = last && from ? last.failed - from.failed : 0;
    const pending = Math.max(0, d.cancellations.cancelled - d.cancellations.refunded);
    const recentWebhook = !!d.webhooks.last_at && Date.parse(d.at) - Date.parse(d.webhooks.last_at) < ETA_WINDOW * 1000;
    const rows = [
      ["provider", "Payment provider", d.provider.degraded, d.provider.degraded ? "degraded" : "working",
        d.provider.degraded
          ? "Declared degraded at " + hms(d.provider.since) + " UTC: hold clocks stopped, nobody more let in. Declare it recovered when payments work again."
          : "Working: hold clocks run and the queue moves."],
      ["payments-failed", "Payments failed", recent > 0, int(d.payments.failed),
        recent > 0 ? int(recent) + " in the last 5 min: the provider may be in trouble." : "None in the last 5 min."],
      ["payments-late", "Late payments", d.payments.late > 0, int(d.payments.late),
        "Paid after the hold ended: refund due (Orders shows each and its refund)."],
      ["refunds-pending", "Refunds pending", pending > 0, int(pending),
        "Cancellations whose refund the provider has not confirmed yet (" + int(d.cancellations.cancelled) + " cancelled, " + int(d.cancellations.refunded) + " refunded); the gateway retries them."],
      ["webhooks", "Payment webhooks refused", recentWebhook, int(d.webhooks.total), webhooksNote(d.webhooks, recentWebhook)],
      ["live", "Live figures", !!liveProblem, liveProblem ? "stale" : "up to date",
        liveProblem ? "Not updating: " + liveProblem + "." : "Figures of " + hms(d.at) + " UTC."],
    ];
    const bad = rows.filter((r) => r[2]).length;
    $("live-errors").tBodies[0].replaceChildren(...rows.map(([key, label, warn, value, note]) =>
      el("tr", { "data-error": key, "data-level": warn ? "warn" : "ok" },
        el("th", { scope: "row" }, label),
        el("td", {}, el("span", { class: "flag " + (warn ? "flag-warn" : "flag-ok") }, warn ? "Check" : "OK"), " ",
          el("span", { class: "error-value", "data-error-value": key }, value),
          el("span", { class: "error-note muted", "data-error-note": key }, note)))));
    $("errors-summary").textContent = bad === 0 ? "Nothing needs attention." : bad + (bad === 1 ? " thing needs" : " things need") + " attention.";
    $("errors-summary").dataset.level = bad === 0 ? "ok" : "warn";
    document.body.dataset.liveErrors = String(bad);
  }

  // webhooksNote says what payment-webhook refused or failed (every
  // event's): the counts by outcome and the last one.
  function webhooksNote(w, recent) {
    if (!w.total) return "None refused: the provider's webhooks are accepted.";
    const by = Object.entries(w.by_outcome || {}).sort().map(([k, n]) => k.replace(/_/g, " ") + " " + int(n)).join(", ");
    return (recent ? "One in the last 5 min" : "None in the last 5 min") + " (every event: " + by + "). The last at " + hms(w.last_at) +
      " UTC, a " + (w.last_kind || "") + " webhook: " + (w.last_status || "") + " " + (w.last_outcome || "").replace(/_/g, " ") +
      (w.last_error ? " (" + w.last_error + ")" : "") + "." + (w.by_outcome && w.by_outcome.bad_signature ? " Bad signatures: check the webhook secret." : "");
  }

  // drawMinutes draws the live document's admissions per minute over the
  // last hour as bars (a minute without admissions has none), with an
  // aria-label that says the same in words.
  function drawMinutes() {
    const box = $("live-minutes");
    const ms = (doc && doc.admissions_per_minute) || [];
    if (!doc || ms.length === 0) {
      box.replaceChildren(el("p", { class: "muted" }, "No admissions in the last hour."));
      return;
    }
    const W = Math.round(Math.min(960, Math.max(300, box.clientWidth - 18))), H = 160, left = 48, right = 12, top = 12, bottom = 30;
    const pw = W - left - right, ph = H - top - bottom;
    const now = Math.floor(Date.parse(doc.at) / 60000), first = now - 59; // minutes since the epoch
    const max = Math.max(1, ...ms.map((m) => m.admissions));
    const bw = pw / 60;
    const total = ms.reduce((a, m) => a + m.admissions, 0);
    const peak = ms.reduce((a, m) => (m.admissions > a.admissions ? m : a), ms[0]);
    const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", id: "live-minutes-svg" });
    s.setAttribute("aria-label", `Admissions per minute over the last hour: ${total} in all, at most ${peak.admissions} ` +
      `(the minute of ${peak.minute.slice(11, 16)} UTC).`);
    const y = (v) => top + ph - (ph * v) / max;
    for (const v of new Set([0, Math.ceil(max / 2), max])) {
      s.append(svg("line", { class: v ? "grid" : "axis", x1: left, x2: W - right, y1: y(v), y2: y(v) }));
      s.append(svg("text", { x: left - 6, y: y(v) + 4, "text-anchor": "end" }, int(v)));
    }
    for (const m of ms) {
      const i = Math.floor(Date.parse(m.minute) / 60000) - first;
      if (i < 0 || i > 59) continue;
      s.append(svg("rect", { class: "chart-bar", x: (left + i * bw + 1).toFixed(1), y: y(m.admissions).toFixed(1),
        width: Math.max(1, bw - 2).toFixed(1), height: (top + ph - y(m.admissions)).toFixed(1), "data-minute": m.minute }));
    }
    const hm = (min) => new Date(min * 60000).toISOString().slice(11, 16);
    s.append(svg("text", { x: left, y: H - 8, "text-anchor": "start" }, hm(first)));
    s.append(svg("text", { x: W - right, y: H - 8, "text-anchor": "end" }, hm(now + 1) + " UTC"));
    box.replaceChildren(s);
  }

  // --- seats held back and killed ---

  // marksBody reads the seats as the API names them: seat_ids ("A1, A2"),
  // a row ("row B") or a range ("A1-A10", "A1 to A10").
  function marksBody(text) {
    const t = text.trim();
    let m = /^row\s+([A-Za-z]+)$/i.exec(t);
    if (m) return { row: m[1].toUpperCase() };
    m = /^([^\s,]+)\s*(?:-|–|\bto\b)\s*([^\s,]+)$/i.exec(t);
    if (m) return { range: { from: m[1], to: m[2] } };
    const ids = t.split(/[\s,]+/).filter(Boolean);
    if (ids.length === 0) throw new Error("Name the seats: seat ids (A1, A2), a row (row B) or a range (A1-A10).");
    return { seat_ids: [...new Set(ids)] };
  }
  const seatsText = (b) => (b.row ? "row " + b.row : b.range ? b.range.from + " to " + b.range.to : b.seat_ids.join(", "));

  // loadMarks lists the seats operators hold or killed, one row per
  // purpose (or kill), from the ledger.
  async function loadMarks() {
    const id = liveID;
    try {
      const body = await api("GET", "/api/admin/events/" + encodeURIComponent(id) + "/seat-marks");
      if (id !== liveID) return;
      const groups = new Map();
      for (const m of body.seat_marks || []) {
        const k = m.mark + ":" + (m.purpose || "");
        if (!groups.has(k)) groups.set(k, { mark: m.mark, purpose: m.purpose || "", seats: [], by: new Set(), at: m.marked_at });
        const g = groups.get(k);
        g.seats.push(m.seat_id);
        g.by.add(m.actor);
        if (m.marked_at > g.at) g.at = m.marked_at;
      }
      $("marks").tBodies[0].replaceChildren(...[...groups.values()].map((g) => {
        const what = g.mark === "hold" ? "held: " + g.purpose : "killed";
        const b = el("button", { type: "button", class: "secondary small act", "data-release": g.mark + ":" + g.purpose,
          "aria-label": "Release " + g.seats.join(", ") + " (" + what + ")" }, "Release");
        b.disabled = !canAct();
        b.addEventListener("click", () => markSeats("release", { seat_ids: g.seats }, "", what));
        return el("tr", { "data-mark": g.mark, "data-purpose": g.purpose },
          el("th", { scope: "row", class: "seats" }, g.seats.join(", ")), el("td", {}, what),
          el("td", {}, [...g.by].join(", ") + ", " + g.at.slice(0, 16).replace("T", " ")), el("td", {}, b));
      }));
      $("marks").hidden = groups.size === 0;
      $("marks-none").hidden = groups.size > 0;
      document.body.dataset.marks = String(groups.size);
    } catch (e) {
      showError("marks-error", e.message);
    }
  }

  // markSeats holds, kills or releases seats after a confirmation, and
  // says what changed (or why nothing did).
  async function markSeats(action, seats, purpose, was) {
    showError("marks-error", "");
    $("marks-result").hidden = true;
    if (!canAct() || !liveID) return false;
    const which = seatsText(seats);
    const [title, text, yes] = {
      hold: ["Hold these seats?", `Hold ${which} for ${purpose}: they go off sale at once and fans cannot pick them until released.`, "Hold"],
      kill: ["Kill these seats?", `Take ${which} off sale at once: fans cannot pick them until released.`, "Kill"],
      release: ["Release these seats?", `Put ${which}${was ? " (" + was + ")" : ""} back on sale at once: the next fan in line can pick them.`, "Release"],
    }[action];
    if (!(await confirmAction(title, text, yes))) return false;
    const body = Object.assign({ action }, seats);
    if (action === "hold") body.purpose = purpose;
    try {
      const res = await api("POST", "/api/admin/events/" + encodeURIComponent(liveID) + "/seat-marks", body);
      const done = { hold: "Held", kill: "Killed", release: "Released" }[action];
      const msg = res.changed ? done + " " + res.seat_ids.join(", ") + (action === "hold" ? " (" + purpose + ")" : "") + "."
        : "Nothing changed: " + which + " " + (action === "release" ? "were on sale already." : "were " + done.toLowerCase() + " already.");
      $("marks-result").textContent = msg;
      $("marks-result").hidden = false;
      $("marks-result").dataset.changed = String(res.changed);
      document.body.dataset.lastMarks = JSON.stringify(body);
      await loadMarks();
      return true;
    } catch (e) {
      const refused = (e.body && e.body.refused) || [];
      const unknown = (e.body && e.body.code === "seat_not_found" && e.body.seat_ids) || [];
      showError("marks-error", e.message + (refused.length ? " " + refused.map((r) => r.seat_id + " (" + r.status + ")").join(", ") + "." : "") +
        (unknown.length && !e.message.includes(unknown[0]) ? " " + unknown.join(", ") + "." : ""));
      return false;
    }
  }

  // --- the box office (POST /api/admin/events/{id}/box-office/sales) ---

  // boxKey is the sale id of the sale being made: kept until it is
  // answered (so a retry after no answer or a 503 sells nothing twice),
  // a new one for the next sale.
  let boxKey = "";
  const newBoxKey = () => "c-" + [...crypto.getRandomValues(new Uint8Array(12))].map((b) => b.toString(16).padStart(2, "0")).join("");

  async function submitBox(ev) {
    ev.preventDefault();
    showError("box-error", "");
    $("box-result").hidden = true;
    if (!canAct() || !liveID) return;
    const t = $("b-seats").value.trim(), section = $("b-section").value.trim(), customer = $("b-customer").value.trim();
    const channel = $("b-channel").value.trim();
    const body = {};
    if (/^\d+$/.test(t)) {
      body.count = Number(t);
      if (section) body.section = section;
    } else {
      const ids = t.split(/[\s,]+/).filter(Boolean);
      if (ids.length === 0) {
        showError("box-error", "Name the seats (A1, A2), or how many for the best seats together (2).");
        $("b-seats").focus();
        return;
      }
      body.seat_ids = [...new Set(ids)];
    }
    if (customer) body.customer_ref = customer;
    if (channel) body.channel = channel;
    const which = body.seat_ids ? body.seat_ids.join(", ") : "the best " + body.count + " seats together" + (section ? " in " + section : "");
    if (!(await confirmAction("Sell these seats?", `Sell ${which} at the box office${channel ? " through " + channel : ""}${customer ? " to " + customer : ""}: paid at the counter.`, "Sell"))) return;
    if (!boxKey) boxKey = newBoxKey();
    body.sale_id = boxKey;
    try {
      const res = await api("POST", "/api/admin/events/" + encodeURIComponent(liveID) + "/box-office/sales", body);
      boxKey = "";
      const o = res.order;
      $("box-result").textContent = (res.replayed ? "Sold before: " : "Sold ") + o.seat_ids.join(", ") + " for " + money(o.amount, o.currency) +
        " (order " + o.order_id + ").";
      $("box-result").hidden = false;
      document.body.dataset.lastSale = o.order_id;
      $("b-seats").value = "";
      $("b-customer").value = "";
    } catch (e) {
      // refused (4xx): nothing was sold, the next try is a new sale;
      // no answer or 503: the same sale again
      if (e.body && e.body.statusCode >= 400 && e.body.statusCode < 500) boxKey = "";
      const seats = (e.body && e.body.seat_ids) || [];
      showError("box-error", e.message + (seats.length && !e.message.includes(seats[0]) ? " " + seats.join(", ") + "." : ""));
    }
  }

  async function submitMarks(ev) {
    ev.preventDefault();
    showError("marks-error", "");
    const action = $("m-action").value, purpose = $("m-purpose").value.trim();
    let seats;
    try {
      seats = marksBody($("m-seats").value);
    } catch (e) {
      showError("marks-error", e.message);
      $("m-seats").focus();
      return;
    }
    if (action === "hold" && !purpose) {
      showError("marks-error", "A hold needs its purpose, e.g. sponsor.");
      $("m-purpose").focus();
      return;
    }
    if (await markSeats(action, seats, action === "hold" ? purpose : "", "")) $("m-seats").value = "";
  }

  // duration: minutes as words ("under a minute", "about 12 min",
  // "about 3 h 20 min", "more than 2 days").
  const duration = (min) => {
    if (min < 1) return "under a minute";
    if (min < 90) return "about " + Math.round(min) + " min";
    if (min > 48 * 60) return "more than 2 days";
    const r = Math.round(min / 10) * 10; // to ten minutes
    const h = Math.floor(r / 60), m = r % 60;
    return "about " + h + " h" + (m ? " " + m + " min" : "");
  };

  // sellOut estimates when the seats left (available, or held in a
  // fan's cart; not the ones operators hold back or took off sale) are sold at the rate of the samples' last ETA_WINDOW
  // seconds: the seats sold over that time (at least ETA_MIN_SPAN, so
  // that one sale just after the view opened does not read as a rush),
  // from the live documents the page has received since it opened. "—"
  // when paused, or when nothing sold in the window (or cancellations
  // outnumbered the sales).
  function sellOut(d, ss) {
    const left = d.seats.available + d.seats.held;
    if (d.sold_out || (d.seats.total > 0 && left <= 0)) return { text: "Sold out", note: "No seats left" };
    if (d.paused) return { text: "—", note: "The sale is paused" };
    const last = ss[ss.length - 1];
    let from = ss[0];
    for (const x of ss) if (x.t <= last.t - ETA_WINDOW) from = x;
    const span = last.t - from.t;
    const over = from === ss[0] && span < ETA_WINDOW - 1 ? "since the view opened" : "over the last 5 min";
    const sold = last.sold - from.sold;
    if (span < 1) return { text: "—", note: "Not selling yet" };
    if (sold <= 0) return { text: "—", note: "Not selling: no sales " + over };
    const perMin = (sold * 60) / Math.max(span, ETA_MIN_SPAN);
    const rate = perMin >= 10 ? String(Math.round(perMin)) : perMin.toFixed(1);
    return { text: "Sells out in " + duration(left / perMin), note: int(left) + " seats left; " + rate + " sold a minute " + over };
  }

  // drawChart draws the samples of the last hour: waiting, in the room and
  // admitted per minute as three lines on one scale, with an aria-label
  // that says the same in words.
  function drawChart() {
    const box = $("live-chart");
    if (samples.length === 0) {
      box.replaceChildren(el("p", { class: "muted" }, "The chart starts with the first figures."));
      return;
    }
    const W = Math.round(Math.min(960, Math.max(300, box.clientWidth - 18))), H = 220, left = 48, right = 12, top = 12, bottom = 30;
    const pw = W - left - right, ph = H - top - bottom;
    // from the first sample, at least a minute wide: the lines grow from
    // the left until they span the hour, which then slides
    const t0 = samples[0].t, t1 = Math.max(samples[samples.length - 1].t, t0 + 60);
    const max = Math.max(1, ...samples.map((s) => Math.max(s.waiting, s.in_room, s.rate)));
    const x = (t) => left + (pw * (t - t0)) / Math.max(1, t1 - t0);
    const y = (v) => top + ph - (ph * v) / max;
    const last = samples[samples.length - 1];
    const mins = Math.max(1, Math.round((last.t - t0) / 60));
    const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", id: "live-chart-svg" });
    s.setAttribute("aria-label", `The last ${mins} minute${mins === 1 ? "" : "s"}: now ${last.waiting} waiting, ${last.in_room} in the room, ` +
      `${last.rate} admitted in the last minute; at most ${max} on the chart.`);
    for (const v of new Set([0, Math.ceil(max / 2), max])) {
      s.append(svg("line", { class: v ? "grid" : "axis", x1: left, x2: W - right, y1: y(v), y2: y(v) }));
      s.append(svg("text", { x: left - 6, y: y(v) + 4, "text-anchor": "end" }, int(v)));
    }
    for (const [k, cls] of [["waiting", "l-waiting"], ["in_room", "l-room"], ["rate", "l-rate"]]) {
      const pts = samples.map((p) => x(p.t).toFixed(1) + "," + y(p[k]).toFixed(1)).join(" ");
      s.append(svg("polyline", { class: "line " + cls, points: pts, "data-series": k }));
    }
    const hm = (t) => new Date(t * 1000).toISOString().slice(11, 16);
    s.append(svg("text", { x: left, y: H - 8, "text-anchor": "start" }, hm(t0)));
    s.append(svg("text", { x: W - right, y: H - 8, "text-anchor": "end" }, hm(t1) + " UTC"));
    box.replaceChildren(s);
  }

  // confirm asks in a modal dialog; true when confirmed.
  function confirmAction(title, text, yes) {
    const d = $("confirm");
    $("confirm-title").textContent = title;
    $("confirm-text").textContent = text;
    $("confirm-yes").textContent = yes;
    return new Promise((resolve) => {
      d.addEventListener("close", () => resolve(d.returnValue === "yes"), { once: true });
      d.returnValue = "";
      d.showModal();
      $("confirm-no").focus();
    });
  }

  async function change(body, title, text, yes, done) {
    showError("control-error", "");
    if (!doc || !canAct()) return;
    if (!(await confirmAction(title, text, yes))) return;
    try {
      await api("PATCH", "/api/admin/events/" + encodeURIComponent(liveID), body);
      announce(done);
      document.body.dataset.lastChange = JSON.stringify(body);
    } catch (e) {
      showError("control-error", e.message);
    }
  }

  function wireControls() {
    $("c-pause").addEventListener("click", () => {
      if (!doc) return;
      const name = doc.name || doc.event_id;
      if (doc.paused) {
        change({ paused: false }, "Resume the sale?", `Users waiting for ${name} are let in again at once.`, "Resume", "The sale is resumed.");
      } else {
        change({ paused: true }, "Pause the sale?", `Nobody more is let in to ${name} until you resume; users in the room keep their turn.`, "Pause", "The sale is paused.");
      }
    });
    const numberControl = (form, input, key, label, unit, min) => {
      $(form).addEventListener("submit", (e) => {
        e.preventDefault();
        const v = Number($(input).value);
        if ($(input).value.trim() === "" || !Number.isFinite(v) || v < min) {
          showError("control-error", label + " must be a number of at least " + min + ".");
          $(input).focus();
          return;
        }
        const now = key === "hold_seconds" ? doc.hold_seconds : doc[key];
        change({ [key]: v }, "Change " + label.toLowerCase() + "?", `${label}: from ${now} to ${v}${unit}. It applies at once.`, "Change",
          label + " is now " + v + unit + ".");
      });
    };
    numberControl("c-capacity-form", "c-capacity", "capacity", "Capacity", " users", 0);
    numberControl("c-rate-form", "c-rate", "admit_per_minute", "Admit per minute", "", 0);
    numberControl("c-hold-form", "c-hold", "hold_seconds", "Hold time", " s", 1);
    $("c-provider").addEventListener("click", async () => {
      showError("control-error", "");
      if (!doc || !canAct()) return;
      const degraded = !doc.provider.degraded;
      const [title, text, yes] = degraded
        ? ["Declare the payment provider degraded?", "For every event: the hold clocks stop (nobody in the room loses their turn while payments fail) " +
          "and nobody more is let in; joins keep queueing. Declare it recovered when payments work again.", "Declare degraded"]
        : ["Declare the payment provider recovered?", "For every event: each hold's clock runs again with the time it had left, and the queue moves again at once.",
          "Declare recovered"];
      if (!(await confirmAction(title, text, yes))) return;
      try {
        const res = await api("PUT", "/api/admin/provider", { degraded });
        announce("The payment provider is declared " + (degraded ? "degraded" : "recovered") + " (" + res.changed + " event" + (res.changed === 1 ? "" : "s") + " changed).");
        document.body.dataset.lastChange = JSON.stringify({ degraded });
      } catch (e) {
        showError("control-error", e.message);
      }
    });
    $("marks-form").addEventListener("submit", submitMarks);
    $("box-form").addEventListener("submit", submitBox);
    $("phase-form").addEventListener("submit", submitPhase);
    // what the operator typed is not overwritten by a reload of the
    // current values (the forms are filled from them until then)
    for (const f of ["phase-form", "reg-form"]) {
      for (const t of ["input", "change"]) $(f).addEventListener(t, () => { $(f).dataset.dirty = "1"; });
    }
    $("codes-form").addEventListener("submit", submitCodes);
    $("reg-form").addEventListener("submit", submitRegistration);
    $("draw-form").addEventListener("submit", submitDraw);
    const purposeShown = () => { $("m-purpose").closest(".field").hidden = $("m-action").value !== "hold"; };
    $("m-action").addEventListener("change", purposeShown);
    purposeShown();
  }

  // --- the phase, access codes and registration (under the controls) ---

  const when = (iso) => (iso ? iso.slice(0, 16).replace("T", " ") : "–");
  const audienceText = { public: "everybody", code: "access code holders", registered: "selected registrants" };
  const evPath = (id) => "/api/admin/events/" + encodeURIComponent(id);

  // loadPhase shows the sale's current phase (GET /api/admin/events/{id})
  // and its history (GET .../phases, oldest first: shown newest first).
  async function loadPhase() {
    const id = liveID;
    try {
      const [e, h] = await Promise.all([api("GET", evPath(id)), api("GET", evPath(id) + "/phases")]);
      if (id !== liveID) return;
      const aud = e.audience || "public";
      $("phase-now").textContent = e.phase ? "Phase " + e.phase + ": " + audienceText[aud] + " may join." : "No phase: " + audienceText[aud] + " may join.";
      document.body.dataset.phase = (e.phase || "") + "/" + aud;
      if (!$("phase-form").dataset.dirty) {
        $("ph-phase").value = e.phase || "";
        $("ph-audience").value = aud;
      }
      const cs = (h.changes || []).slice().reverse();
      $("phases").tBodies[0].replaceChildren(...cs.map((c) => el("tr", { "data-change": String(c.change_id) },
        el("td", { class: "nowrap" }, when(c.at)), el("th", { scope: "row" }, c.phase || "(none)"),
        el("td", {}, audienceText[c.audience] || c.audience), el("td", {}, c.previous_phase || "(none)"), el("td", {}, c.actor))));
      $("phases").hidden = cs.length === 0;
      $("phases-none").hidden = cs.length > 0;
      document.body.dataset.phases = String(cs.length);
    } catch (err) {
      showError("phase-error", err.message);
    }
  }

  async function submitPhase(ev) {
    ev.preventDefault();
    showError("phase-error", "");
    if (!canAct() || !liveID) return;
    const phase = $("ph-phase").value.trim(), audience = $("ph-audience").value;
    const what = (phase ? "phase " + phase : "no phase") + ", " + audienceText[audience] + " may join";
    if (!(await confirmAction("Switch the phase?", `From now on: ${what}. Users waiting or in the room keep their place.`, "Switch"))) return;
    try {
      const res = await api("PUT", evPath(liveID) + "/phase", { phase, audience });
      announce(res.changed ? "Switched to " + what + "." : "Nothing changed: " + what + " already.");
      delete $("phase-form").dataset.dirty;
      document.body.dataset.lastPhase = JSON.stringify(res);
      await loadPhase();
    } catch (err) {
      showError("phase-error", err.message);
    }
  }

  // loadBatches lists the event's batches of access codes and their use
  // (never the codes).
  let batchesLoaded = 0;
  async function loadBatches() {
    const id = liveID;
    batchesLoaded = Date.now();
    try {
      const body = await api("GET", evPath(id) + "/codes");
      if (id !== liveID) return;
      const bs = body.batches || [];
      $("batches").tBodies[0].replaceChildren(...bs.map((b) => el("tr", { "data-batch": String(b.batch_id) },
        el("th", { scope: "row" }, String(b.batch_id)), el("td", {}, b.phase || "every phase"), el("td", { class: "num" }, int(b.count)),
        el("td", { class: "num" }, int(b.uses)), el("td", { class: "num" }, b.seats ? String(b.seats) : "the event's"),
        el("td", { class: "num", "data-used": String(b.batch_id) }, int(b.used)), el("td", {}, b.expires_at ? when(b.expires_at) : "never"),
        el("td", {}, b.actor + ", " + when(b.created_at)))));
      $("batches").hidden = bs.length === 0;
      $("batches-none").hidden = bs.length > 0;
      document.body.dataset.batches = String(bs.length);
    } catch (err) {
      showError("codes-error", err.message);
    }
  }

  // submitCodes generates a batch as CSV (POST .../codes?format=csv): the
  // only time the codes are shown, so the page offers the file at once.
  let codesURL = "";
  async function submitCodes(ev) {
    ev.preventDefault();
    showError("codes-error", "");
    $("codes-result").hidden = true;
    if (!canAct() || !liveID) return;
    const n = (id) => ($(id).value.trim() === "" ? 0 : Number($(id).value));
    const body = { count: n("k-count"), uses: n("k-uses"), seats: n("k-seats"), phase: $("k-phase").value.trim() };
    if ($("k-expires").value) body.expires_at = toUTC($("k-expires").value);
    $("k-apply").disabled = true;
    try {
      const res = await call("POST", evPath(liveID) + "/codes?format=csv", body, "text/csv");
      const text = await res.text();
      const rows = text.trim().split("\n").length - 1;
      const name = (/filename="([^"]+)"/.exec(res.headers.get("Content-Disposition") || "") || [])[1] || "codes-" + liveID + ".csv";
      if (codesURL) URL.revokeObjectURL(codesURL);
      codesURL = URL.createObjectURL(new Blob([text], { type: "text/csv" }));
      const a = $("codes-download");
      a.href = codesURL;
      a.download = name;
      a.textContent = "Download " + name;
      a.hidden = false;
      $("codes-result-text").textContent = "Generated " + int(rows) + " code" + (rows === 1 ? "" : "s") +
        (body.phase ? " for phase " + body.phase : "") + ". They are not shown again: download them now. ";
      $("codes-result").hidden = false;
      document.body.dataset.codesFile = name;
      a.focus();
      await loadBatches();
    } catch (err) {
      showError("codes-error", err.message);
    } finally {
      $("k-apply").disabled = !canAct();
    }
  }

  // loadRegistration shows the event's registration window, its counts
  // and, once drawn, the selection (GET /api/events/{id}/registration).
  let regWindow = null, regLoaded = 0;
  async function loadRegistration() {
    const id = liveID;
    regLoaded = Date.now();
    let w = null;
    try {
      w = await api("GET", "/api/events/" + encodeURIComponent(id) + "/registration");
    } catch (err) {
      if (!(err.body && err.body.code === "registration_not_found")) {
        showError("reg-error", err.message);
        return;
      }
    }
    if (id !== liveID) return;
    regWindow = w;
    const now = doc ? doc.at : new Date().toISOString();
    let state = "No registration window yet.";
    if (w) {
      const opens = Date.parse(w.opens_at), closes = Date.parse(w.closes_at), t = Date.parse(now);
      state = w.drawn_at
        ? `Drawn at ${when(w.drawn_at)} UTC (${w.method === "first_come" ? "first come" : "draw"}): ${int(w.selected)} of ${int(w.registered)} selected for phase ${w.phase}.` +
          (w.seed ? ` Seed ${w.seed}, committed to as ${w.commit}.` : "")
        : t < opens ? `Opens at ${when(w.opens_at)} UTC, closes at ${when(w.closes_at)} UTC, for phase ${w.phase}.`
          : t < closes ? `Open until ${when(w.closes_at)} UTC for phase ${w.phase}.`
            : `Closed at ${when(w.closes_at)} UTC: run the selection.`;
      if (!$("reg-form").dataset.dirty) {
        $("r-phase").value = w.phase;
        $("r-opens").value = fromUTC(w.opens_at);
        $("r-closes").value = fromUTC(w.closes_at);
      }
      $("reg-registered").textContent = int(w.registered);
      $("reg-selected").textContent = w.drawn_at ? int(w.selected) : "not drawn yet";
      if (!$("d-count").value) $("d-count").value = String(Math.max(1, w.registered));
    }
    $("reg-state").textContent = state;
    $("reg-counts").hidden = !w;
    const drawn = !!(w && w.drawn_at);
    for (const e of $("reg-form").querySelectorAll("input, button")) e.disabled = !canAct() || drawn;
    for (const e of $("draw-form").querySelectorAll("input, select, button")) e.disabled = !canAct() || !w || drawn;
    document.body.dataset.registration = w ? (drawn ? "drawn" : "window") : "none";
    document.body.dataset.registered = w ? String(w.registered) : "";
    document.body.dataset.selected = w && drawn ? String(w.selected) : "";
  }

  async function submitRegistration(ev) {
    ev.preventDefault();
    showError("reg-error", "");
    if (!canAct() || !liveID) return;
    const body = { phase: $("r-phase").value.trim(), opens_at: toUTC($("r-opens").value), closes_at: toUTC($("r-closes").value) };
    const text = `Fans register for phase ${body.phase || "–"} from ${when(body.opens_at)} to ${when(body.closes_at)} UTC.`;
    if (!(await confirmAction(regWindow ? "Change the registration window?" : "Open registration?", text, "Save"))) return;
    try {
      await api("PUT", evPath(liveID) + "/registration", body);
      announce("Registration window saved.");
      delete $("reg-form").dataset.dirty;
      await loadRegistration();
    } catch (err) {
      showError("reg-error", err.message);
    }
  }

  async function submitDraw(ev) {
    ev.preventDefault();
    showError("reg-error", "");
    if (!canAct() || !liveID || !regWindow) return;
    const method = $("d-method").value, count = Number($("d-count").value);
    const how = method === "draw" ? "by the draw (its seed is revealed)" : "first come";
    if (!(await confirmAction("Run the selection?", `Select ${count} of ${int(regWindow.registered)} registrants ${how}. ` +
      `This is done once: the selected may join phase ${regWindow.phase}.`, "Select"))) return;
    try {
      const w = await api("POST", evPath(liveID) + "/registration/draw", { method, count });
      announce(`${w.selected} of ${w.registered} selected.`);
      await loadRegistration();
    } catch (err) {
      showError("reg-error", err.message);
    }
  }

  // loadSale fills the phase, codes and registration of the live view.
  function loadSale() {
    loadPhase();
    loadBatches();
    loadRegistration();
  }

  // --- orders ---

  let orders = [];
  let ordersEvent = ""; // the event of the orders shown ("": found in every event)
  async function searchOrders(e) {
    if (e) e.preventDefault();
    showError("orders-error", "");
    $("cancel-result").hidden = true;
    const id = $("o-event").value.trim(), q = $("o-query").value.trim();
    if (!id && !q) {
      showError("orders-error", "Enter an event id, or a user or payment id.");
      $("o-event").focus();
      return;
    }
    $("o-search").disabled = true;
    try {
      if (id) {
        const body = await api("GET", "/api/admin/events/" + encodeURIComponent(id) + "/orders");
        orders = body.orders || [];
        ordersEvent = id;
        $("o-csv").href = "/api/admin/events/" + encodeURIComponent(id) + "/orders?format=csv";
        history.replaceState(null, "", "#/orders?event_id=" + encodeURIComponent(id));
      } else {
        // every event: the user's orders and the payment's order
        const [byUser, byPayment] = await Promise.all([
          api("GET", "/api/admin/orders?user_id=" + encodeURIComponent(q)),
          api("GET", "/api/admin/orders?payment_id=" + encodeURIComponent(q))]);
        const seen = new Set();
        orders = (byUser.orders || []).concat(byPayment.orders || []).filter((o) => !seen.has(o.order_id) && seen.add(o.order_id));
        ordersEvent = "";
        history.replaceState(null, "", "#/orders");
      }
      $("o-csv").hidden = !id;
      renderOrders();
    } catch (err) {
      showError("orders-error", err.message);
    } finally {
      $("o-search").disabled = false;
    }
  }

  function renderOrders() {
    const q = $("o-query").value.trim();
    const shown = q && ordersEvent ? orders.filter((o) => o.user_id === q || o.payment_id === q || o.order_id === q) : orders;
    $("orders").tBodies[0].replaceChildren(...shown.map((o) => {
      const act = el("td", {});
      if (o.status === "refund_due") {
        const b = el("button", { type: "button", class: "secondary small act" }, "Refund");
        b.disabled = !canAct();
        b.addEventListener("click", () => refund(o));
        act.append(b);
      }
      if (o.status === "completed" && seatsLeft(o).length > 0) {
        const b = el("button", { type: "button", class: "secondary small act", "data-cancel": o.order_id,
          "aria-label": "Cancel order " + o.order_id }, "Cancel");
        b.disabled = !canAct();
        b.addEventListener("click", () => openCancel(o, b));
        act.append(b);
      }
      const pending = (o.cancellations || []).find((x) => x.refund_status !== "refunded");
      if (pending) {
        const b = el("button", { type: "button", class: "secondary small act", "data-retry": o.order_id,
          "aria-label": "Retry the refund of order " + o.order_id }, "Retry the refund");
        b.disabled = !canAct();
        b.addEventListener("click", () => retryRefund(o, pending));
        act.append(b);
      }
      return el("tr", { "data-order": o.order_id },
        el("th", { scope: "row" }, o.order_id), el("td", {}, o.event_id), el("td", {}, o.user_id), el("td", {}, o.payment_id), el("td", {}, o.seat_id),
        el("td", { class: "num" }, money(o.amount, o.currency)), el("td", { "data-status": o.status }, orderStatus(o)), act);
    }));
    $("orders").hidden = shown.length === 0;
    $("orders-summary").textContent = ordersEvent
      ? shown.length + " of " + orders.length + " order" + (orders.length === 1 ? "" : "s") + " of " + ordersEvent + (q ? " match " + q : "") + "."
      : orders.length + " order" + (orders.length === 1 ? "" : "s") + " in every event match " + q + ".";
  }

  // seatsLeft: the order's seats not cancelled yet.
  const seatsLeft = (o) => {
    const gone = new Set(o.cancelled_seat_ids || []);
    return (o.seat_ids && o.seat_ids.length ? o.seat_ids : String(o.seat_id || "").split(",").filter(Boolean)).filter((s) => !gone.has(s));
  };
  // refundText: a cancellation's refund in words.
  const refundText = (x) => x.refund_status === "refunded"
    ? money(x.amount, x.currency) + " refunded"
    : "refund of " + money(x.amount, x.currency) + " pending" + (x.refund_error ? " (" + x.refund_error + ")" : "") + ", retried by the gateway";
  // orderStatus: the status column, with the cancellations' seats and
  // refunds ("cancelled: A1, A2, 80.00 EUR refunded").
  const orderStatus = (o) => {
    const st = o.status.replace("_", " ");
    const xs = o.cancellations || [];
    if (!xs.length) return st;
    return st + ": " + xs.map((x) => (o.status === "cancelled" && xs.length === 1 ? "" : x.seat_ids.join(", ") + " cancelled, ") + refundText(x)).join("; ");
  };

  // openCancel opens the cancellation dialog for a sold order: a reason
  // (required) and the seats (every seat left, or some of them).
  let cancelling = null, cancelOpener = null, cancelDone = false;
  function openCancel(o, opener) {
    if (!canAct()) return;
    cancelling = o;
    cancelOpener = opener;
    cancelDone = false;
    const left = seatsLeft(o);
    showError("cancel-error", "");
    $("cancel-title").textContent = "Cancel order " + o.order_id + "?";
    $("cancel-text").textContent = `${o.user_id} bought ${o.seat_id} of ${o.event_id} for ${money(o.amount, o.currency)} (payment ${o.payment_id}). ` +
      "The seats cancelled go back on sale at once and their price is refunded with the payment provider.";
    $("cancel-reason").value = "";
    $("cancel-all").checked = true;
    $("cancel-some").disabled = left.length < 2;
    $("cancel-seat-list").replaceChildren(...left.map((s, i) => el("div", { class: "check" },
      Object.assign(el("input", { type: "checkbox", id: "cancel-seat-" + i, value: s, "data-seat": s }), { checked: true, disabled: true }),
      el("label", { for: "cancel-seat-" + i }, s))));
    $("cancel-yes").disabled = false;
    $("cancel-dialog").showModal();
    $("cancel-reason").focus();
  }

  function cancelWhich() {
    const some = $("cancel-some").checked;
    for (const c of $("cancel-seat-list").querySelectorAll("input")) {
      c.disabled = !some;
      if (!some) c.checked = true;
    }
  }

  // showCancelled says what a cancellation (or its repeat) left, and
  // shows the order as it is now.
  function showCancelled(res, retried) {
    const o = res.order, x = res.cancellation;
    const what = res.changed ? "Order " + o.order_id + ": " + x.seat_ids.join(", ") + " cancelled; "
      : retried ? "Order " + o.order_id + ", " + x.seat_ids.join(", ") + ": "
        : "Nothing changed: order " + o.order_id + " was cancelled already (" + x.seat_ids.join(", ") + "); ";
    const r = $("cancel-result");
    r.textContent = what + refundText(x) + ".";
    r.hidden = false;
    r.dataset.refund = x.refund_status;
    r.dataset.changed = String(res.changed);
    orders = orders.map((y) => (y.order_id === o.order_id ? o : y));
    renderOrders();
    r.focus();
  }

  // retryRefund asks for a cancellation's pending refund again: the
  // cancellation repeated, which changes nothing else.
  async function retryRefund(o, x) {
    showError("orders-error", "");
    if (!canAct()) return;
    if (!(await confirmAction("Retry the refund?", `Ask the payment provider again to refund ${money(x.amount, x.currency)} to ${o.user_id} ` +
      `for ${x.seat_ids.join(", ")} (${x.refund_error || "not confirmed yet"}).`, "Retry"))) return;
    try {
      showCancelled(await api("POST", "/api/admin/orders/" + encodeURIComponent(o.order_id) + "/cancel",
        { reason: x.reason, seat_ids: x.seat_ids }), true);
    } catch (e) {
      showError("orders-error", e.message);
    }
  }

  async function submitCancel(ev) {
    ev.preventDefault();
    const o = cancelling;
    if (!o) return;
    showError("cancel-error", "");
    const reason = $("cancel-reason").value.trim();
    if (!reason) {
      showError("cancel-error", "Enter the reason for the cancellation.");
      $("cancel-reason").focus();
      return;
    }
    const body = { reason };
    if ($("cancel-some").checked) {
      const seats = [...$("cancel-seat-list").querySelectorAll("input:checked")].map((c) => c.value);
      if (seats.length === 0) {
        showError("cancel-error", "Choose at least one seat, or every seat left.");
        return;
      }
      if (seats.length < seatsLeft(o).length) body.seat_ids = seats;
    }
    $("cancel-yes").disabled = true;
    let res;
    try {
      res = await api("POST", "/api/admin/orders/" + encodeURIComponent(o.order_id) + "/cancel", body);
    } catch (e) {
      showError("cancel-error", e.message);
      $("cancel-yes").disabled = false;
      return;
    }
    cancelling = null;
    cancelDone = true;
    $("cancel-dialog").close();
    showCancelled(res, false);
  }

  async function refund(o) {
    if (!(await confirmAction("Refund this order?", `Refund ${money(o.amount, o.currency)} to ${o.user_id} (payment ${o.payment_id}) with the payment provider.`, "Refund"))) return;
    try {
      await api("POST", "/api/admin/refunds/" + encodeURIComponent(o.order_id));
      announce("Order " + o.order_id + " refunded.");
      await searchOrders();
    } catch (e) {
      showError("orders-error", e.message);
    }
  }

  // --- the audit trail ---

  const change2text = (b, a) => {
    const keys = [...new Set(Object.keys(b || {}).concat(Object.keys(a || {})))].sort();
    return keys.map((k) => {
      const v = (x) => (x === undefined ? "–" : JSON.stringify(x));
      return b ? `${k}: ${v(b[k])} → ${v((a || {})[k])}` : `${k}: ${v((a || {})[k])}`;
    }).join("; ");
  };

  async function loadAudit(more) {
    showError("audit-error", "");
    const p = new URLSearchParams();
    if ($("a-actor").value.trim()) p.set("actor", $("a-actor").value.trim());
    if ($("a-event").value.trim()) p.set("event_id", $("a-event").value.trim());
    if ($("a-action").value) p.set("action", $("a-action").value);
    p.set("limit", "50");
    if (more && auditCursor) p.set("cursor", auditCursor);
    try {
      const body = await api("GET", "/api/admin/audit?" + p);
      const rows = (body.actions || []).map((a) => el("tr", { "data-audit": String(a.id) },
        el("td", { class: "nowrap" }, a.at.slice(0, 19).replace("T", " ")),
        el("td", {}, a.actor + " (" + a.role + ", " + a.via + ")"),
        el("td", {}, a.action),
        el("td", {}, a.event_id || "–"),
        el("td", { class: "change" }, (a.target ? a.target + ": " : "") + change2text(a.before, a.after))));
      if (more) $("audit").tBodies[0].append(...rows);
      else $("audit").tBodies[0].replaceChildren(...rows);
      auditCursor = body.next_cursor || "";
      $("audit-more").hidden = !auditCursor;
      document.body.dataset.audit = String($("audit").tBodies[0].rows.length);
    } catch (e) {
      showError("audit-error", e.message);
    }
  }

  // --- routing ---

  async function route() {
    const h = location.hash || "#/events";
    const [path, query] = h.slice(1).split("?");
    const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
    const view = parts[0] || "events";
    if (view !== "live") stopLive();
    for (const s of document.querySelectorAll(".view")) s.hidden = true;
    for (const a of document.querySelectorAll("[data-nav]")) {
      if (a.dataset.nav === (view === "new" || view === "edit" || view === "live" ? "events" : view)) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    let shown = "view-events", title = "Events";
    document.body.dataset.view = "";
    if (view === "new" || view === "edit") {
      shown = "view-form";
      title = view === "new" ? "New event" : "Edit " + parts[1];
      await showForm(view === "edit" ? parts[1] : "");
    } else if (view === "live" && parts[1]) {
      shown = "view-live";
      title = "Live: " + parts[1];
      showLive(parts[1]);
    } else if (view === "orders") {
      shown = "view-orders";
      title = "Orders";
      const id = new URLSearchParams(query || "").get("event_id");
      if (id && id !== $("o-event").value) {
        $("o-event").value = id;
        $("o-query").value = ""; // a link names an event's every order
        searchOrders();
      }
      disableControls($("view-orders"));
      $("o-event").disabled = $("o-query").disabled = false;
    } else if (view === "audit") {
      shown = "view-audit";
      title = "Audit trail";
      if (me.role === "viewer") {
        showError("audit-error", "The audit trail is for operators and admins.");
        $("audit-form").hidden = true;
      } else {
        loadAudit(false);
      }
    } else {
      await showEvents();
    }
    $(shown).hidden = false;
    document.title = title + " · boxoffice console";
    document.body.dataset.view = shown.slice(5);
  }

  document.addEventListener("DOMContentLoaded", async () => {
    $("sign-out").addEventListener("click", signOut);
    $("events-refresh").addEventListener("click", showEvents);
    $("add-section").addEventListener("click", () => addSection({}, false));
    $("event-form").addEventListener("submit", submitForm);
    $("orders-form").addEventListener("submit", searchOrders);
    $("o-query").addEventListener("input", () => { if (ordersEvent) renderOrders(); });
    $("audit-form").addEventListener("submit", (e) => { e.preventDefault(); loadAudit(false); });
    $("audit-more").addEventListener("click", () => loadAudit(true));
    $("cancel-form").addEventListener("submit", submitCancel);
    $("cancel-no").addEventListener("click", () => $("cancel-dialog").close());
    $("cancel-all").addEventListener("change", cancelWhich);
    $("cancel-some").addEventListener("change", cancelWhich);
    $("cancel-dialog").addEventListener("close", () => {
      cancelling = null;
      if (!cancelDone && cancelOpener && cancelOpener.isConnected) cancelOpener.focus();
    });
    wireControls();
    let lastWidth = window.innerWidth;
    window.addEventListener("resize", () => {
      if (window.innerWidth === lastWidth) return;
      lastWidth = window.innerWidth;
      drawChart();
      drawMinutes();
    });
    window.addEventListener("hashchange", async () => {
      await route();
      const h1 = document.querySelector(".view:not([hidden]) h1");
      if (h1) h1.focus();
    });
    const back = new URLSearchParams(location.search).get("view");
    if (back !== null) history.replaceState(null, "", "/admin/" + (back.startsWith("/") ? "#" + back : ""));
    if (!(await whoami())) return;
    await route();
    document.body.dataset.ready = "1";
  });
})();
