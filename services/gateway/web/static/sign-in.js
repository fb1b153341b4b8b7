// The operators' sign-in page (sign-in.html, docs/operators.md): posts
// the account and password to POST /api/admin/sign-in as JSON (the
// gateway sets the session cookie: HttpOnly, SameSite=Strict, so this
// script never sees it) and goes on to the page that sent the operator
// here (?next=, a path of the operator pages only) or the console.
(() => {
  "use strict";
  const $ = (id) => document.getElementById(id);

  // next is where to go once signed in: an /admin/ path of this site,
  // never another site (an open redirect would help a phishing page).
  const next = () => {
    const n = new URLSearchParams(location.search).get("next") || "";
    return /^\/admin\/[A-Za-z0-9._\-\/]*(\?[^#\s]*)?$/.test(n) && !n.startsWith("//") ? n : "/admin/";
  };

  const showError = (msg) => {
    $("error").textContent = msg;
    $("error").hidden = !msg;
  };

  async function signIn(e) {
    e.preventDefault();
    showError("");
    const account = $("account").value.trim(), password = $("password").value;
    if (!account || !password) {
      showError("Enter your account and password.");
      (account ? $("password") : $("account")).focus();
      return;
    }
    $("submit").disabled = true;
    try {
      const res = await fetch("/api/admin/sign-in", {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ account, password }),
      });
      if (res.ok) {
        location.assign(next());
        return;
      }
      $("password").value = "";
      if (res.status === 401) {
        showError("Wrong account or password.");
      } else if (res.status === 429) {
        const wait = Number(res.headers.get("Retry-After")) || 0;
        showError("Too many failed sign-ins. Try again in " + Math.max(1, Math.ceil(wait / 60)) + " minute(s), or ask an admin to reset your password.");
      } else {
        showError("Signing in failed (" + res.status + "). Try again.");
      }
      $("password").focus();
    } catch (err) {
      showError("The server could not be reached. Try again.");
    } finally {
      $("submit").disabled = false;
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("sign-in").addEventListener("submit", signIn);
    if (new URLSearchParams(location.search).has("signed_out")) {
      $("notice").textContent = "You are signed out.";
      $("notice").hidden = false;
    }
    $("account").focus();
    document.body.dataset.ready = "1";
  });
})();
