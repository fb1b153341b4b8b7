// What the operators' pages share (console.html, report.html, loaded
// before their own scripts): numbers and money as they show them, the
// forms' UTC times, DOM building without HTML strings, and the admin API
// client, which sends an operator whose session ended to sign in (and
// back to the same view after) and words the API's refusals.
window.operatorKit = (() => {
  "use strict";
  const SVG = "http://www.w3.org/2000/svg";

  // int: 1234567 as "1,234,567".
  const int = (n) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  // minorDigits: the currency's minor units (2 when unknown).
  const minorDigits = (cur) => {
    try {
      return new Intl.NumberFormat("en", { style: "currency", currency: cur }).resolvedOptions().maximumFractionDigits;
    } catch (e) {
      return 2;
    }
  };
  // money: minor units as "1,234.50 EUR", in integers (no rounding).
  const money = (minor, cur) => {
    const d = minorDigits(cur);
    const s = String(Math.abs(minor)).padStart(d + 1, "0");
    const whole = d > 0 ? s.slice(0, -d) : s;
    return (minor < 0 ? "-" : "") + int(whole) + (d > 0 ? "." + s.slice(-d) : "") + " " + cur;
  };
  // major: minor units as a form's "12.50" in cur.
  const major = (minor, cur) => {
    const d = minorDigits(cur);
    return (minor / 10 ** d).toFixed(d);
  };
  // toMinor: a form's "12.50" in cur as minor units (NaN when not a price).
  const toMinor = (text, cur) => {
    const d = minorDigits(cur || "EUR");
    const m = /^\s*(\d+)(?:\.(\d+))?\s*$/.exec(text);
    if (!m || (m[2] || "").length > d) return NaN;
    return Number(m[1]) * 10 ** d + Number((m[2] || "").padEnd(d, "0") || 0);
  };
  // The forms' datetime-local values are UTC (the forms say so).
  const toUTC = (v) => (v ? v + (v.length === 16 ? ":00" : "") + "Z" : "");
  const fromUTC = (iso) => (iso ? new Date(iso).toISOString().slice(0, 16) : "");

  const el = (tag, attrs, ...kids) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    for (const k of kids) e.append(k);
    return e;
  };
  const svg = (tag, attrs, text) => {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = text;
    return e;
  };

  // toSignIn sends the browser to sign in, and back to this page after;
  // the sign-in page follows a path and query, not a fragment, so the
  // console's view (its fragment) travels as ?view=.
  const toSignIn = () => {
    const view = location.hash.slice(1);
    const next = location.pathname + (view ? "?view=" + encodeURIComponent(view) : location.search);
    location.assign("/admin/sign-in.html?next=" + encodeURIComponent(next));
  };

  // call calls the admin API and answers its response when it is 2xx;
  // otherwise it throws an Error with the API's message (and its JSON
  // error as .body, and the status as .status).
  async function call(method, path, body, accept) {
    const opts = { method, credentials: "same-origin", headers: { Accept: accept || "application/json" } };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(path, opts);
    } catch (e) {
      throw new Error("The server could not be reached. Try again.");
    }
    if (res.ok) return res;
    let out = null;
    try { out = await res.json(); } catch (e) { /* no body */ }
    if (res.status === 401) {
      toSignIn();
      throw new Error("Your session has ended. Sign in again.");
    }
    const msg = (out && out.message) || res.statusText;
    const err = new Error(res.status === 403 ? "Refused: " + msg + "." : msg.charAt(0).toUpperCase() + msg.slice(1) + (/[.!]$/.test(msg) ? "" : "."));
    err.body = out; // the API's error, with its details (a seat-marks refusal's seats)
    err.status = res.status;
    throw err;
  }

  // api calls the admin API and answers its JSON body.
  async function api(method, path, body) {
    const res = await call(method, path, body);
    try { return await res.json(); } catch (e) { return null; }
  }

  return Object.freeze({ int, minorDigits, money, major, toMinor, toUTC, fromUTC, el, svg, toSignIn, call, api });
})();
