/* radlay radiologist pages: keyboard answering, autosave bookkeeping (time since the last save, retry
   after a dropped connection) and the keys help. Everything here is an enhancement: the page form
   saves and navigates without it. Loaded after htmx. */
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  const help = document.getElementById("keys-help");
  function toggleHelp() {
    if (!help) return;
    if (help.open) help.close(); else help.showModal();
  }
  document.querySelectorAll("[data-keys-help]").forEach(function (b) { b.addEventListener("click", toggleHelp); });

  const form = document.getElementById("expert-form");
  if (!form) return;
  const rows = Array.prototype.slice.call(form.querySelectorAll(".rate-row"));

  // --- Time spent: every save carries the ms since the previous one, so the server's per-page
  // total is the time the page was open (a failed save hands its share to the next one).
  let mark = performance.now();
  let carried = 0;
  function takeElapsed() {
    const now = performance.now();
    const ms = Math.round(now - mark + carried);
    mark = now;
    carried = 0;
    return ms;
  }

  // --- Autosave bookkeeping -------------------------------------------------------------------
  htmx.config.timeout = 15000;
  const pending = new Set();  // elements whose last save did not reach the server
  let inflight = 0;
  let leaving = false;

  function statusOf(elt) {
    return elt.classList.contains("rate-row") ? elt.querySelector(".row-status") : elt.parentElement.querySelector(".row-status");
  }

  document.body.addEventListener("htmx:configRequest", function (e) {
    if (!form.contains(e.detail.elt)) return;
    const ms = takeElapsed();
    e.detail.parameters.elapsed_ms = ms;
    e.detail.elt.radlayElapsed = ms;
  });
  document.body.addEventListener("htmx:beforeRequest", function (e) {
    if (form.contains(e.detail.elt)) inflight += 1;
  });
  // A refused answer (400 bad value, 403 closed study, 404) carries its message for the row.
  document.body.addEventListener("htmx:beforeSwap", function (e) {
    const status = e.detail.xhr.status;
    if (status >= 400 && status < 500) {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
    }
  });
  document.body.addEventListener("htmx:afterRequest", function (e) {
    const elt = e.detail.elt;
    if (!form.contains(elt)) return;
    inflight = Math.max(0, inflight - 1);
    const status = e.detail.xhr ? e.detail.xhr.status : 0;
    if (status === 0 || status >= 500) {
      // Dropped connection or server trouble: keep the answer on screen, mark it, retry.
      carried += elt.radlayElapsed || 0;
      pending.add(elt);
      const box = statusOf(elt);
      if (box) box.innerHTML = '<span class="offline">Not saved yet — retrying…</span>';
    } else {
      pending.delete(elt);
    }
  });
  function retryPending() {
    pending.forEach(function (elt) { htmx.trigger(elt, "radlay:retry"); });
  }
  setInterval(function () { if (pending.size && navigator.onLine !== false) retryPending(); }, 4000);
  window.addEventListener("online", retryPending);
  window.addEventListener("beforeunload", function (e) {
    if (!leaving && (pending.size || inflight)) { e.preventDefault(); e.returnValue = ""; }
  });

  // The page form re-saves everything (idempotent), so it also rescues answers whose autosave
  // failed; it waits for saves in flight so an older autosave cannot land after it.
  form.addEventListener("submit", function (e) {
    if (leaving) { e.preventDefault(); return; }  // a double click submits once
    if (inflight > 0 && !form.radlayWaited) {
      e.preventDefault();
      const submitter = e.submitter;
      const started = Date.now();
      (function wait() {
        if (inflight === 0 || Date.now() - started > 4000) {
          form.radlayWaited = true;
          form.requestSubmit(submitter);
        } else {
          setTimeout(wait, 50);
        }
      })();
      return;
    }
    form.elements.elapsed_ms.value = takeElapsed();
    leaving = true;
    setTimeout(function () { leaving = false; form.radlayWaited = false; }, 8000);  // if the navigation fails
  });

  // --- Keyboard --------------------------------------------------------------------------------
  let current = null;
  function answered(row) { return !!row.querySelector("input[type=radio]:checked"); }
  function pageComplete() { return rows.every(answered); }
  function setCurrent(row, focus, block) {
    if (!row) return;
    current = row;
    rows.forEach(function (r) { r.classList.toggle("current", r === row); });
    if (focus) {
      row.focus({ preventScroll: true });
      row.scrollIntoView({ block: block || "center" });
    }
  }
  form.addEventListener("focusin", function (e) {
    const row = e.target.closest(".rate-row");
    if (row) setCurrent(row, false);
  });

  function answer(row, key) {
    const input = row.querySelector('input[type=radio][data-key="' + key + '"]');
    if (!input) return false;
    if (!input.checked) {
      input.checked = true;
      input.dispatchEvent(new Event("change", { bubbles: true }));
    }
    return true;
  }
  function move(step) {
    const at = rows.indexOf(current);
    const next = rows[at < 0 ? 0 : Math.min(rows.length - 1, Math.max(0, at + step))];
    setCurrent(next, true);
  }
  function advance(row) {
    if (pageComplete()) {
      const next = document.getElementById("next-page");
      if (next) { next.focus(); next.scrollIntoView({ block: "center" }); }
      return;
    }
    const at = rows.indexOf(row);
    const later = rows.slice(at + 1);
    setCurrent(later.length ? later[0] : rows.find(function (r) { return !answered(r); }), true);
  }
  function nextPage() {
    if (pageComplete()) {
      const next = document.getElementById("next-page");
      form.requestSubmit(next);
    } else {
      const first = rows.find(function (r) { return !answered(r); });
      setCurrent(first, true);
      if (first) first.classList.add("nudge");
      setTimeout(function () { if (first) first.classList.remove("nudge"); }, 900);
    }
  }
  function previousPage() {
    const previous = document.getElementById("previous-page");
    if (previous) form.requestSubmit(previous);
  }
  function commentBox() {
    const block = (current || rows[0]).closest(".block");
    return block ? block.querySelector("textarea") : null;
  }

  document.addEventListener("keydown", function (e) {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
    const t = e.target;
    if (help && help.open) {
      if (e.key === "?") { help.close(); e.preventDefault(); }
      return;
    }
    if (t.closest("textarea, input[type=text], input[type=password], select")) {
      if (e.key === "Escape") { t.blur(); setCurrent(current, true); }
      return;
    }
    if (e.key === "?") { toggleHelp(); e.preventDefault(); return; }
    const inRow = t.closest(".rate-row");
    const onPage = inRow || t === document.body;
    if (/^[1-9]$/.test(e.key)) {
      const row = inRow || (t === document.body ? current : null);
      if (row && answer(row, e.key)) { e.preventDefault(); advance(row); }
      return;
    }
    let handled = true;
    switch (e.key) {
      case "Enter": if (inRow) move(1); else handled = false; break;
      case "ArrowDown": if (onPage) move(1); else handled = false; break;
      case "ArrowUp": if (onPage) move(-1); else handled = false; break;
      case "ArrowRight": if (onPage) nextPage(); else handled = false; break;
      case "ArrowLeft": if (onPage) previousPage(); else handled = false; break;
      case "j": move(1); break;
      case "k": move(-1); break;
      case "n": nextPage(); break;
      case "p": previousPage(); break;
      case "c": { const box = commentBox(); if (box) box.focus(); else handled = false; break; }
      default: handled = false;
    }
    if (handled) e.preventDefault();
  });

  // Start where the work is: the first unanswered row (or nothing, on a finished page).
  const first = rows.find(function (r) { return !answered(r); });
  if (first) setCurrent(first, true, "nearest");
  form.dataset.ready = "1";  // for browser tests: keyboard handling is in place
})();
