// The schedule of an event's phases in the operator console's live view
// (#/live/<id>; docs/operators.md "Phases of a sale"): the phases as
// saved (GET /api/admin/events/{id}/phases), edited as one list and saved
// with PUT /api/admin/events/{id}/phases; the API checks every rule and
// its refusal is shown as it words it, with nothing changed. The current
// phase and the changes made so far (by operators or by the schedule) are
// listed under it. A viewer sees the schedule with every control
// disabled. It reads the page's fragment itself and shares only
// operator_kit.js with console.js.
(() => {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const kit = window.operatorKit;
  const { el, api, toUTC, fromUTC } = kit;
  const AUDIENCES = [["public", "Everyone"], ["code", "Access code holders"], ["registered", "Selected registered fans"]];
  const SETTINGS = [["admit_per_minute", "Admit per minute", 0], ["hold_seconds", "Hold time (s)", 1],
    ["order_limit", "Seats per order", 1], ["early_join_seconds", "Pre-queue opens (s before the phase)", 0]];

  let eventID = "";
  let currency = "EUR";
  let sections = []; // the event's section names
  let canAct = false;
  let rows = 0; // numbers the rows' field ids

  const option = (value, label, selected) => {
    const o = document.createElement("option");
    o.value = value;
    o.textContent = label;
    if (selected) o.selected = true;
    return o;
  };
  const major = (minor) => kit.major(minor, currency);
  const toMinor = (text) => kit.toMinor(text, currency);

  const showError = (msg) => {
    $("sch-error").textContent = msg;
    $("sch-error").hidden = !msg;
  };
  const showResult = (msg) => {
    $("sch-result").textContent = msg;
    $("sch-result").hidden = !msg;
  };

  // field is one labelled input of a phase's row.
  function field(n, key, label, input, help) {
    input.id = "sch-" + key + "-" + n;
    input.dataset.key = key;
    const f = el("div", { class: "field" }, el("label", { for: input.id }, label), input);
    if (help) {
      const h = el("p", { id: input.id + "-help", class: "muted" }, help);
      input.setAttribute("aria-describedby", h.id);
      f.append(h);
    }
    return f;
  }

  // addRow appends a phase (p: as saved, or {} for a new one).
  function addRow(p) {
    const n = ++rows;
    const row = el("fieldset", { class: "phase-row", "data-row": String(n) });
    const legend = el("legend", {}, p.name || p.id || "New phase");
    row.append(legend);
    const text = (key, value, attrs) => {
      const i = el("input", Object.assign({ autocomplete: "off", spellcheck: "false" }, attrs || {}));
      i.value = value || "";
      return i;
    };
    const audience = el("select", {});
    for (const [v, label] of AUDIENCES) audience.append(option(v, label, v === (p.audience || "public")));
    const prices = text("prices", Object.entries(p.prices || {}).map(([s, c]) => s + "=" + major(c)).join(", "));
    const grid = el("div", { class: "grid3" },
      field(n, "id", "Id", text("id", p.id, { required: "", maxlength: "128" }), "Codes and the registration name it, e.g. fanclub."),
      field(n, "name", "Name", text("name", p.name, { maxlength: "200" })),
      field(n, "audience", "Who may join", audience),
      field(n, "starts_at", "Starts (UTC)", text("starts_at", fromUTC(p.starts_at), { type: "datetime-local", required: "" })),
      field(n, "ends_at", "Ends (UTC)", text("ends_at", fromUTC(p.ends_at), { type: "datetime-local", required: "" })),
      field(n, "prices", "Prices (" + currency + ")", prices,
        "Section=price, comma separated (" + (sections.join(", ") || "the event's sections") + "); empty: the event's prices."));
    for (const [key, label, min] of SETTINGS) {
      const i = text(key, p[key] === undefined ? "" : String(p[key]), { type: "number", min: String(min), inputmode: "numeric" });
      grid.append(field(n, key, label, i, "Empty: the event's."));
    }
    row.append(grid);
    const remove = el("button", { type: "button", class: "secondary" }, "Remove this phase");
    remove.addEventListener("click", () => {
      row.remove();
      $("sch-announce").textContent = "Phase removed; save to apply.";
    });
    row.append(el("p", {}, remove));
    row.querySelector('[data-key="name"]').addEventListener("input", (e) => {
      legend.textContent = e.target.value || row.querySelector('[data-key="id"]').value || "New phase";
    });
    $("sch-rows").append(row);
    if (!canAct) for (const c of row.querySelectorAll("input, select, button")) c.disabled = true;
    return row;
  }

  // read turns the form into the API's schedule; a string says what is wrong.
  function read() {
    const phases = [];
    for (const row of $("sch-rows").querySelectorAll(".phase-row")) {
      const v = (key) => row.querySelector('[data-key="' + key + '"]').value.trim();
      const p = { id: v("id"), name: v("name"), audience: v("audience"), starts_at: toUTC(v("starts_at")), ends_at: toUTC(v("ends_at")) };
      const where = "Phase " + (phases.length + 1) + (p.id ? " (" + p.id + ")" : "");
      if (!p.id || !p.starts_at || !p.ends_at) return where + ": the id, start and end are required.";
      if (v("prices")) {
        p.prices = {};
        for (const part of v("prices").split(",")) {
          const m = /^\s*([^=]+?)\s*=\s*(.+)$/.exec(part);
          const minor = m ? toMinor(m[2]) : NaN;
          if (!m || Number.isNaN(minor)) return where + ": write prices as section=price, e.g. floor=40.00.";
          p.prices[m[1]] = minor;
        }
      }
      for (const [key] of SETTINGS) {
        if (v(key) === "") continue;
        const n = Number(v(key));
        if (!Number.isInteger(n)) return where + ": " + key.replace(/_/g, " ") + " must be a whole number.";
        p[key] = n;
      }
      phases.push(p);
    }
    return { on_phase_change: $("sch-change").value, phases };
  }

  function renderChanges(changes) {
    const list = $("sch-changes");
    list.replaceChildren();
    const last = changes[changes.length - 1];
    $("sch-current").textContent = last && last.phase
      ? "Current phase: " + last.phase + " (" + last.audience + "), since " + last.at.slice(0, 19).replace("T", " ") + " UTC by " + last.actor + "."
      : last && last.audience === "closed" ? "Between phases: joins are closed." : "No phase: the sale is open to everyone.";
    for (const c of changes.slice(-10).reverse()) {
      list.append(el("li", {}, c.at.slice(0, 19).replace("T", " ") + " UTC — " + (c.phase || "no phase") + " (" + c.audience + ") by " + c.actor +
        (c.previous_phase ? ", after " + c.previous_phase : "")));
    }
  }

  async function load(id) {
    eventID = id;
    showError("");
    showResult("");
    try {
      const [meRes, ev, ph] = await Promise.all([api("GET", "/api/admin/me"), api("GET", "/api/admin/events/" + encodeURIComponent(id)),
        api("GET", "/api/admin/events/" + encodeURIComponent(id) + "/phases")]);
      if (id !== eventID) return; // another view since
      canAct = !!meRes && meRes.role !== "viewer";
      currency = ev.currency || "EUR";
      sections = (ev.sections || []).map((s) => s.name);
      $("sch-rows").replaceChildren();
      const sch = ph.schedule || { phases: [] };
      $("sch-change").value = sch.on_phase_change || "keep";
      for (const p of sch.phases || []) addRow(p);
      $("sch-none").hidden = (sch.phases || []).length > 0;
      renderChanges(ph.changes || []);
      for (const c of $("phases-editor").querySelectorAll("#sch-change, #sch-add, #sch-save")) c.disabled = !canAct;
    } catch (e) {
      showError(e.message);
    }
  }

  async function save(ev) {
    ev.preventDefault();
    showError("");
    showResult("");
    const body = read();
    if (typeof body === "string") {
      showError(body);
      return;
    }
    $("sch-save").disabled = true;
    try {
      const out = await api("PUT", "/api/admin/events/" + encodeURIComponent(eventID) + "/phases", body);
      const n = out.schedule.phases.length;
      showResult(n ? "Schedule saved: " + n + " phase" + (n === 1 ? "" : "s") + ". Each starts on its own at its time." : "Schedule removed.");
      await load(eventID);
    } catch (e) {
      showError(e.message + " Nothing was changed.");
    } finally {
      $("sch-save").disabled = !canAct;
    }
  }

  function route() {
    const m = /^#\/live\/([^/?]+)/.exec(location.hash || "");
    if (!m || !$("phases-editor")) {
      eventID = ""; // back to the live view: read it again
      return;
    }
    const id = decodeURIComponent(m[1]);
    if (id !== eventID) load(id);
  }

  document.addEventListener("DOMContentLoaded", () => {
    if (!$("phases-editor")) return;
    $("sch-add").addEventListener("click", () => {
      $("sch-none").hidden = true;
      const row = addRow({});
      row.querySelector('[data-key="id"]').focus();
    });
    $("sch-form").addEventListener("submit", save);
    window.addEventListener("hashchange", route);
    route();
  });
})();
