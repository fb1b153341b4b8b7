// The operators' sale report page (report.html, docs/web.md "The sale
// report"): reads GET /api/admin/events/{id}/report with the operator's
// session (the cookie of the sign-in page, /admin/sign-in.html, where an
// operator who is not signed in is sent) and shows the figures, a
// conversion funnel and the admissions per minute as SVG charts built with
// DOM APIs (no HTML strings), each with a text alternative. The CSV is
// fetched in the session and offered as a Blob URL.
(() => {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const { int, money, el, svg, toSignIn } = window.operatorKit;

  // The funnel's facts first, then the other sale facts, in this order;
  // any other type of the report follows under its own name.
  const FACTS = [
    ["booking_request", "Joins"],
    ["user_promoted", "Admissions"],
    ["payment_initiated", "Payments started"],
    ["booking_completed", "Completions"],
    ["payment_failed", "Failed payments"],
    ["booking_cancelled", "Cancellations"],
    ["booking_expired", "Expiries"],
    ["payment_late", "Late payments (refunded)"],
  ];
  const STEPS = [
    ["admitted_per_joined", "Let in, per join"],
    ["paying_per_admitted", "Started paying, per admission"],
    ["completed_per_paying", "Completed, per payment started"],
    ["completed_per_joined", "Completed, per join (overall)"],
  ];

  let current = ""; // the event whose report is shown
  let csvURL = ""; // its CSV's Blob URL, revoked when replaced
  let shownReport = null; // the report drawn, redrawn when the width changes

  // --- formatting (the browser test formats the JSON the same way) ---

  // percent: a ratio as a percentage with one decimal (0.6667 -> 66.7%).
  const percent = (v) => {
    const pm = Math.round(v * 1000);
    return Math.floor(pm / 10) + "." + (pm % 10) + "%";
  };

  // duration: milliseconds as "850 ms", "12.3 s" or "4 min 05 s".
  const duration = (ms) => {
    if (ms < 1000) return ms + " ms";
    if (ms < 60000) {
      const t = Math.round(ms / 100);
      return Math.floor(t / 10) + "." + (t % 10) + " s";
    }
    const s = Math.round(ms / 1000);
    return Math.floor(s / 60) + " min " + String(s % 60).padStart(2, "0") + " s";
  };

  const hhmm = (iso) => iso.slice(11, 16);

  // chartWidth: a chart's viewBox width, the width of its box, so that its
  // text keeps its size on a phone instead of being scaled down.
  const chartWidth = (box) => Math.round(Math.min(960, Math.max(300, box.clientWidth - 18)));

  // --- DOM helpers ---

  const row = (head, cells) => {
    const tr = el("tr", {}, el("th", { scope: "row" }, head));
    for (const [text, attrs] of cells) tr.append(el("td", Object.assign({ class: "num" }, attrs), text));
    return tr;
  };
  const fill = (tbody, rows) => tbody.replaceChildren(...rows);

  const announce = (msg) => {
    $("announce").textContent = "";
    setTimeout(() => { $("announce").textContent = msg; }, 50);
  };
  const showError = (msg) => {
    $("error").textContent = msg;
    $("error").hidden = !msg;
  };

  // --- API ---

  async function api(path, accept) {
    const res = await fetch(path, { credentials: "same-origin", headers: { Accept: accept || "application/json" } });
    if (res.ok) return res;
    let msg = "";
    try { msg = (await res.json()).message || ""; } catch (e) { /* not JSON */ }
    if (res.status === 401) {
      toSignIn();
      throw new Error("Your session has ended. Sign in again.");
    }
    if (res.status === 403) throw new Error("Your account may not read reports.");
    if (res.status === 404) throw new Error("No event with the id " + JSON.stringify(current) + ".");
    throw new Error("The report could not be loaded (" + res.status + (msg ? ": " + msg : "") + ").");
  }

  // whoami shows who is signed in, or sends the browser to sign in.
  async function whoami() {
    const res = await fetch("/api/admin/me", { credentials: "same-origin" });
    if (res.status === 401) {
      toSignIn();
      return false;
    }
    if (!res.ok) {
      showError("Could not check your session (" + res.status + ").");
      return false;
    }
    const me = await res.json();
    $("whoami").textContent = "Signed in as " + me.account + " (" + me.role + ")";
    $("sign-out").hidden = me.via !== "session";
    document.body.dataset.account = me.account;
    return true;
  }

  async function signOut() {
    await fetch("/api/admin/sign-out", { method: "POST", credentials: "same-origin" });
    location.assign("/admin/sign-in.html?signed_out=1");
  }

  async function loadEvents() {
    try {
      const res = await fetch("/api/events");
      if (!res.ok) return;
      const body = await res.json();
      $("event-list").replaceChildren(...(body.events || []).map((ev) => el("option", { value: ev.id }, ev.name || ev.id)));
    } catch (e) {
      // the list is a convenience: the id can be typed
    }
  }

  async function load() {
    const id = $("event-id").value.trim();
    showError("");
    if (!id) {
      showError("Enter an event id.");
      $("event-id").focus();
      return;
    }
    current = id;
    $("show").disabled = true;
    $("refresh").disabled = true;
    try {
      const path = "/api/admin/events/" + encodeURIComponent(id) + "/report";
      const r = await (await api(path)).json();
      render(r);
      const csv = await (await api(path + "?format=csv", "text/csv")).blob();
      if (csvURL) URL.revokeObjectURL(csvURL);
      csvURL = URL.createObjectURL(new Blob([csv], { type: "text/csv" }));
      $("csv").href = csvURL;
      $("csv").download = "report-" + id + ".csv";
      $("csv").hidden = false;
      const url = new URL(location.href);
      url.searchParams.set("event_id", id);
      history.replaceState(null, "", url);
      document.body.dataset.loaded = id;
    } catch (e) {
      showError(e.message);
    } finally {
      $("show").disabled = false;
      $("refresh").disabled = false;
    }
  }

  // --- rendering ---

  function render(r) {
    shownReport = r;
    $("report").hidden = false;
    $("report-title").textContent = "Report of " + r.event_id;
    $("loaded-at").textContent = "Loaded at " + new Date().toISOString().slice(11, 19) + " UTC.";
    document.title = "Sale report: " + r.event_id + " · boxoffice";

    const counts = r.counts || {};
    const known = new Set(FACTS.map(([k]) => k));
    const facts = FACTS.concat(Object.keys(counts).filter((k) => !known.has(k)).sort().map((k) => [k, "Event fact " + k]));
    fill($("counts").tBodies[0], facts.map(([k, label]) => row(label, [[int(counts[k] || 0), { "data-count": k }]])));

    const revenue = r.revenue || {}, refunds = r.refunds || {};
    const curs = [...new Set(Object.keys(revenue).concat(Object.keys(refunds)))].sort();
    fill($("money").tBodies[0], curs.map((c) => row(c, [
      [money(revenue[c] || 0, c), { "data-revenue": c }],
      [money(refunds[c] || 0, c), { "data-refunds": c }],
    ])));
    $("money").hidden = curs.length === 0;
    $("money-none").hidden = curs.length > 0;

    // what each phase and each channel sold (the ledger's orders; absent
    // without a ledger): a row per name and currency
    const sales = (id, list, key, none) => {
      fill($(id).tBodies[0], (list || []).map((x) => {
        const at = key + ":" + x[key] + ":" + x.currency;
        return row(x[key] || none, [[int(x.orders), { "data-sales": at + ":orders" }], [int(x.seats), { "data-sales": at + ":seats" }],
          [money(x.revenue, x.currency), { "data-sales": at + ":revenue" }]]);
      }));
      $(id).hidden = !(list || []).length;
    };
    sales("by-phase", r.by_phase, "phase", "No phase");
    sales("by-channel", r.by_channel, "channel", "Fans, through the queue");
    $("sales-none").hidden = !!((r.by_phase || []).length || (r.by_channel || []).length);

    const conv = r.conversion || {};
    fill($("conversion").tBodies[0], STEPS.map(([k, label]) => row(label, [[percent(conv[k] || 0), { "data-conversion": k }]])));
    funnel(counts);

    const dists = [["time_in_queue", "Time in queue"], ["time_to_purchase", "Time to purchase"]];
    fill($("times").tBodies[0], dists.map(([k, label]) => {
      const d = r[k] || {};
      return row(label, [
        [int(d.count || 0), { "data-dist": k + ".count" }],
        [d.count ? duration(d.p50_ms) : "–", { "data-dist": k + ".p50_ms" }],
        [d.count ? duration(d.p90_ms) : "–", { "data-dist": k + ".p90_ms" }],
        [d.count ? duration(d.p99_ms) : "–", { "data-dist": k + ".p99_ms" }],
      ]);
    }));

    minutes(r.admissions_per_minute || []);
  }

  // funnel draws joins, admissions, payments started and completions as
  // horizontal bars; the aria-label says the same in words.
  function funnel(counts) {
    const steps = FACTS.slice(0, 4).map(([k, label]) => [label, counts[k] || 0]);
    const max = Math.max(1, ...steps.map(([, n]) => n));
    const W = chartWidth($("funnel")), rowH = 34, left = 140, right = 44;
    const s = svg("svg", { viewBox: `0 0 ${W} ${steps.length * rowH + 8}`, role: "img", id: "funnel-chart" });
    s.setAttribute("aria-label", "Funnel: " + steps.map(([label, n]) => `${label.toLowerCase()} ${n}`).join(", ") + ".");
    steps.forEach(([label, n], i) => {
      const y = 4 + i * rowH, w = Math.round(((W - left - right) * n) / max);
      s.append(svg("text", { x: left - 8, y: y + rowH / 2 + 4, "text-anchor": "end" }, label));
      const bar = svg("rect", { class: "chart-bar", x: left, y: y + 4, width: Math.max(w, n > 0 ? 2 : 0), height: rowH - 10, "data-value": n });
      s.append(bar);
      s.append(svg("text", { class: "value", x: left + w + 6, y: y + rowH / 2 + 4 }, int(n)));
    });
    $("funnel").replaceChildren(s);
  }

  // minutes draws admissions per minute as vertical bars, one per minute
  // from the first to the last (minutes with none included), with the
  // summary as the aria-label and every minute in the table.
  function minutes(list) {
    const box = $("minutes-chart");
    fill($("minutes").tBodies[0], list.map((m) => row(hhmm(m.minute), [[int(m.admissions), { "data-minute": m.minute }]])));
    if (list.length === 0) {
      box.replaceChildren(el("p", { class: "muted" }, "No admissions yet."));
      return;
    }
    const byMinute = new Map(list.map((m) => [Date.parse(m.minute), m.admissions]));
    const first = Date.parse(list[0].minute), last = Date.parse(list[list.length - 1].minute);
    const span = [];
    for (let t = first; t <= last && span.length < 24 * 60; t += 60000) span.push([t, byMinute.get(t) || 0]);
    const total = list.reduce((a, m) => a + m.admissions, 0);
    const peak = list.reduce((a, m) => (m.admissions > a.admissions ? m : a), list[0]);
    const max = Math.max(1, peak.admissions);

    const W = chartWidth(box), H = 240, left = 48, right = 12, top = 16, bottom = 36;
    const plotW = W - left - right, plotH = H - top - bottom;
    const slot = plotW / span.length, barW = Math.max(1, Math.min(40, slot * 0.8));
    const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", id: "admissions-chart" });
    s.setAttribute("aria-label", `Admissions per minute from ${hhmm(list[0].minute)} to ${hhmm(list[list.length - 1].minute)} UTC: ` +
      `${int(total)} admissions in ${span.length} minute${span.length === 1 ? "" : "s"}, at most ${int(peak.admissions)} ` +
      `in a minute (${hhmm(peak.minute)}). The table below lists every minute.`);
    for (const v of [0, Math.ceil(max / 2), max]) {
      const y = top + plotH - (plotH * v) / max;
      s.append(svg("line", { class: v ? "grid" : "axis", x1: left, x2: W - right, y1: y, y2: y }));
      s.append(svg("text", { x: left - 6, y: y + 4, "text-anchor": "end" }, int(v)));
    }
    span.forEach(([t, n], i) => {
      if (n === 0) return;
      const h = Math.max(1, (plotH * n) / max);
      const bar = svg("rect", { class: "chart-bar", x: left + i * slot + (slot - barW) / 2, y: top + plotH - h, width: barW, height: h,
        "data-minute": new Date(t).toISOString().replace(".000Z", "Z"), "data-value": n });
      bar.append(svg("title", {}, `${hhmm(new Date(t).toISOString())} UTC: ${n} admission${n === 1 ? "" : "s"}`));
      s.append(bar);
    });
    const ticks = span.length === 1 ? [0] : [0, span.length - 1];
    for (const i of ticks) {
      s.append(svg("text", { x: left + i * slot + slot / 2, y: H - bottom + 18, "text-anchor": "middle" }, hhmm(new Date(span[i][0]).toISOString())));
    }
    s.append(svg("text", { x: left + plotW / 2, y: H - 4, "text-anchor": "middle" }, "minute (UTC)"));
    box.replaceChildren(s);
  }

  // --- wiring ---

  document.addEventListener("DOMContentLoaded", async () => {
    const id = new URLSearchParams(location.search).get("event_id") || "";
    $("event-id").value = id;
    $("sign-out").addEventListener("click", signOut);
    $("load").addEventListener("submit", async (e) => {
      e.preventDefault();
      await load();
      if (!$("report").hidden && $("error").hidden) {
        $("report-title").focus();
        announce("Report of " + current + " loaded.");
      }
    });
    $("refresh").addEventListener("click", async () => {
      $("event-id").value = current;
      await load();
      if ($("error").hidden) announce("Report of " + current + " refreshed.");
    });
    let lastWidth = window.innerWidth;
    window.addEventListener("resize", () => {
      if (!shownReport || window.innerWidth === lastWidth) return;
      lastWidth = window.innerWidth;
      funnel(shownReport.counts || {});
      minutes(shownReport.admissions_per_minute || []);
    });
    if (!(await whoami())) return;
    loadEvents();
    if (id) load();
    document.body.dataset.ready = "1";
  });
})();
