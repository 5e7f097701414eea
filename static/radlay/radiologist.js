/* radlay radiologist pages: keyboard answering, the autosave of static/radlay/survey.js with a status
   per row, the sticky sentence bar and the keys help. Everything here is an enhancement: the page
   form saves and navigates without it. Loaded after survey.js. */
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  const help = document.getElementById("keys-help");
  function toggleHelp() {
    if (!help) return;
    if (help.open) help.close(); else help.showModal();
  }
  document.querySelectorAll("[data-keys-help]").forEach(function (b) { b.addEventListener("click", toggleHelp); });

  // The sticky sentence bar: compact once the rater scrolls into the simplifications, and its height
  // kept in --bar-height so that scrolling to a heading or a row never hides it under the bar.
  const bar = document.querySelector(".original-bar");
  if (bar) {
    const pad = function () {
      document.documentElement.style.setProperty("--bar-height", bar.offsetHeight + "px");
    };
    if (window.ResizeObserver) new ResizeObserver(pad).observe(bar);
    pad();
    let compact = false;
    // Where the bar sits in the page before it sticks (a stuck bar's offsetTop follows the scroll).
    const barTop = bar.getBoundingClientRect().top + window.scrollY;
    window.addEventListener("scroll", function () {
      const now = window.scrollY > barTop + 40;
      if (now !== compact) { compact = now; bar.classList.toggle("compact", now); }
    }, { passive: true });
  }

  const form = document.getElementById("expert-form");
  if (!form) return;
  const rows = Array.prototype.slice.call(form.querySelectorAll(".rate-row"));

  // --- Autosave (static/radlay/survey.js): each answer is sent when given, kept until the server
  // acknowledges it, and its row says where it stands.
  function statusOf(name) {
    // A row, or an error-span item (static/radlay/error_spans.js), says where its answer stands.
    const row = form.querySelector('.rate-row[data-field="' + name + '"], [data-span-item][data-field="' + name + '"]');
    if (row) return row.querySelector(".row-status");
    const box = form.querySelector('textarea[name="' + name + '"]');
    return box ? box.parentElement.querySelector(".row-status") : null;
  }
  // The messages in the page's language (the {% survey_strings %} block), English without it.
  const stringsBlock = document.getElementById("survey-strings");
  const STRINGS = stringsBlock ? JSON.parse(stringsBlock.textContent) : {};
  function escaped(text) { const span = document.createElement("span"); span.textContent = text; return span.innerHTML; }
  const STATES = {
    sending: '<span class="muted">' + escaped(STRINGS.sending || "Saving…") + "</span>",
    pending: '<span class="offline">' + escaped(STRINGS.pending_short || "Not saved yet — retrying…") + "</span>",
  };
  const saver = RadlaySurvey.autosave(form, {
    onState: function (names, state, body) {
      let html = STATES[state];
      if (state === "saved") html = RadlaySurvey.swapOob(body);
      if (state === "refused") html = body;
      names.forEach(function (name) {
        const box = statusOf(name);
        if (box) box.innerHTML = html;
        const row = box && box.closest(".rate-row, [data-span-item]");
        if (row && state === "saved") row.classList.remove("missing");
      });
    },
  });
  // What the page says about its unanswered rows follows the answers: the counts go down as rows
  // are answered, and the messages go once none is left (the footer then says "✓ Page complete").
  function refreshMissing() {
    const open = rows.filter(function (r) { return !answered(r); }).length;
    document.querySelectorAll("[data-missing-box]").forEach(function (box) {
      if (!open) { box.remove(); return; }
      box.querySelectorAll(".missing-count").forEach(function (c) { c.textContent = String(open); });
      box.querySelectorAll(".missing-plural").forEach(function (c) { c.textContent = open === 1 ? "" : "s"; });
    });
    if (notice && notice.textContent) say(open ? unansweredMessage(open) : "");
  }
  form.addEventListener("change", function (e) {
    if (e.target.type === "radio") refreshMissing();
  });

  // --- Keyboard --------------------------------------------------------------------------------
  // One Tab stop per row: the row itself (1-5 answer it). Its radios and its definition button
  // stay reachable by mouse, touch and the "i" key, outside the Tab order.
  rows.forEach(function (row) {
    row.tabIndex = 0;
    row.querySelectorAll("input[type=radio], summary").forEach(function (el) { el.tabIndex = -1; });
  });
  const notice = document.getElementById("page-notice");
  // The notice is pinned in view (radiologist.css) and announced (a live region), while the focus stays
  // on the highlighted row so that the keys go on answering.
  function say(text) { if (notice) notice.textContent = text; }
  function unansweredMessage(open) {
    const wording = STRINGS[open === 1 ? "unanswered_one" : "unanswered_other"];
    if (wording) return wording.replace("%(n)s", String(open));
    return "This sentence still has " + open + " unanswered row" + (open === 1 ? "" : "s") +
      ": the first one is highlighted. Answer " + (open === 1 ? "it" : "them") +
      " to go on, or use “Skip for now”.";
  }
  let current = null;
  function answered(row) { return !!row.querySelector("input[type=radio]:checked"); }
  function pageComplete() { return rows.every(answered); }
  function setCurrent(row, focus, block) {
    if (!row) return;
    current = row;
    rows.forEach(function (r) { r.classList.toggle("current", r === row); });
    if (focus) {
      row.focus({ preventScroll: true });
      // The first row of a simplification brings its "Simplification A" heading into view too
      // (scroll-padding keeps it below the sticky sentence bar).
      const section = row.closest(".block");
      const heading = section && section.querySelector(".rate-row") === row ? section.querySelector("h2") : null;
      if (heading) heading.scrollIntoView({ block: "start" });
      else row.scrollIntoView({ block: block || "center" });
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
      const open = rows.filter(function (r) { return !answered(r); });
      const first = open[0];
      say(unansweredMessage(open.length));
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
    // The page's own messages take the focus to be read; keys there act as on the page.
    const onPage = inRow || t === document.body || !!t.closest("[data-missing-box]");
    if (/^[1-9]$/.test(e.key)) {
      const row = inRow || (onPage ? current : null);
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
      case "i": {
        const info = (current || rows[0]) && (current || rows[0]).querySelector("details");
        if (info) info.open = !info.open; else handled = false;
        break;
      }
      default: handled = false;
    }
    if (handled) e.preventDefault();
  });

  // Start where the work is: the first unanswered row (or nothing, on a finished page). A page that
  // says why the rater was sent to it ("Welcome back", "Not finished yet") starts on that message,
  // in view and read out, with the row highlighted for the keys.
  const first = rows.find(function (r) { return !answered(r); });
  const why = document.getElementById("why-here");
  if (why && first) {
    setCurrent(first, false);
    why.focus({ preventScroll: true });
    why.scrollIntoView({ block: "center" });
  } else if (first) {
    setCurrent(first, true, "nearest");
  }
  form.dataset.ready = "1";  // for browser tests: keyboard handling is in place
})();
