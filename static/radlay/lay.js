/* radlay lay survey: autosave bookkeeping (time since the last save, retry after a dropped
   connection, saving typed justifications), keyboard answering (number keys choose an option of
   the selected question) and no double submits. Everything is an enhancement: the panel form saves
   and moves on without it. Loaded after htmx. */
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  const questions = Array.prototype.slice.call(document.querySelectorAll("fieldset.question"));
  const choiceInputs = function (fieldset) {
    return Array.prototype.slice.call(fieldset.querySelectorAll("input[type=radio], input[type=checkbox]"));
  };
  const answered = function (fieldset) {
    return choiceInputs(fieldset).some(function (input) { return input.checked; });
  };

  // --- Keyboard answering: 1-9 choose the n-th option of the question that has the focus (or of
  // the first unanswered one); after a single-choice answer the focus moves to the next question.
  function currentQuestion() {
    const active = document.activeElement;
    const holder = active && active.closest ? active.closest("fieldset.question") : null;
    if (holder) return holder;
    return questions.find(function (q) { return choiceInputs(q).length && !answered(q); }) || null;
  }
  function focusQuestion(fieldset) {
    const inputs = choiceInputs(fieldset);
    const target = inputs.find(function (i) { return i.checked; }) || inputs[0];
    if (target) target.focus({ preventScroll: false });
  }
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const tag = (e.target.tagName || "").toLowerCase();
    if (tag === "textarea" || (tag === "input" && e.target.type === "text")) return;
    if (!/^[1-9]$/.test(e.key)) return;
    const fieldset = currentQuestion();
    if (!fieldset) return;
    const inputs = choiceInputs(fieldset);
    const input = inputs[Number(e.key) - 1];
    if (!input) return;
    e.preventDefault();
    input.click();  // fires "change", which autosaves
    if (input.type === "radio") {
      const next = questions[questions.indexOf(fieldset) + 1];
      if (next && choiceInputs(next).length) focusQuestion(next);
      else input.focus();
    } else {
      input.focus();
    }
  });
  // An answered question loses its "Please answer this question." at once, not at the next submit.
  document.addEventListener("change", function (e) {
    const holder = e.target.closest ? e.target.closest("fieldset.question.has-error") : null;
    if (!holder || (e.target.type !== "radio" && e.target.type !== "checkbox") || !answered(holder)) return;
    holder.classList.remove("has-error");
    const message = holder.querySelector("p.error");
    if (message) message.remove();
    if (!document.querySelector("fieldset.question.has-error")) {
      const pointer = document.querySelector("#save-status a.error");
      if (pointer) pointer.remove();
    }
  });
  // A page sent back with errors opens on the first of them, wherever it is on the page.
  const firstError = document.querySelector("fieldset.question.has-error");
  if (firstError) {
    firstError.scrollIntoView({ block: "center" });
    focusQuestion(firstError);
  } else if (window.matchMedia && window.matchMedia("(hover: hover) and (pointer: fine)").matches) {
    // Start with the first unanswered question selected, on devices with a keyboard and mouse.
    const first = questions.find(function (q) { return choiceInputs(q).length && !answered(q); });
    if (first) {
      const input = choiceInputs(first)[0];
      if (input) input.focus({ preventScroll: true });
    }
  }

  const form = document.getElementById("lay-form");
  if (!form || typeof htmx === "undefined") return;
  const status = document.getElementById("save-status");

  // --- Time spent: every save carries the ms since the previous one (a failed save hands its
  // share on), so the panel's total is the time it was open.
  let mark = performance.now();
  let carried = 0;
  function takeElapsed() {
    const now = performance.now();
    const ms = Math.round(now - mark + carried);
    mark = now;
    carried = 0;
    return ms;
  }

  htmx.config.timeout = 15000;
  let retryTimer = null;
  document.body.addEventListener("htmx:configRequest", function (e) {
    if (e.detail.elt !== form) return;
    const ms = takeElapsed();
    e.detail.parameters.elapsed_ms = ms;
    form.radlayElapsed = ms;
  });
  // A refused answer (400 bad value, 409 locked panel, 403 closed study) carries its message.
  document.body.addEventListener("htmx:beforeSwap", function (e) {
    const code = e.detail.xhr.status;
    if (code >= 400 && code < 500) {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
    }
  });
  function lost() {
    carried += form.radlayElapsed || 0;
    form.radlayElapsed = 0;
    if (status) status.innerHTML = '<span class="error" role="alert">Not saved yet (connection problem); retrying…</span>';
    clearTimeout(retryTimer);
    retryTimer = setTimeout(function () { htmx.trigger(form, "radlay:save"); }, 3000);
  }
  document.body.addEventListener("htmx:sendError", function (e) { if (e.detail.elt === form) lost(); });
  document.body.addEventListener("htmx:timeout", function (e) { if (e.detail.elt === form) lost(); });
  document.body.addEventListener("htmx:responseError", function (e) {
    if (e.detail.elt === form && e.detail.xhr.status >= 500) lost();
  });

  // Typed justifications are saved after a pause in typing (the form's hx-trigger leaves out their
  // "change", which would race the submit when the Continue button takes the focus).
  let typingTimer = null;
  form.addEventListener("input", function (e) {
    if ((e.target.tagName || "").toLowerCase() !== "textarea") return;
    if (status) status.textContent = "…";
    clearTimeout(typingTimer);
    typingTimer = setTimeout(function () { htmx.trigger(form, "radlay:save"); }, 800);
  });

  // The plain submit carries the last interval and waits for a save still on its way (tapping the
  // button blurs a justification field, whose "change" starts one): one request at a time per
  // participant. A second click while the page is being sent does nothing.
  let inflight = 0;
  let submitting = false;
  let deferred = null;
  document.body.addEventListener("htmx:beforeRequest", function (e) { if (e.detail.elt === form) inflight += 1; });
  document.body.addEventListener("htmx:afterRequest", function (e) {
    if (e.detail.elt !== form) return;
    inflight = Math.max(0, inflight - 1);
    // htmx sends a queued save right after this one ends: look again once it had the chance.
    if (deferred) setTimeout(submitWhenSettled, 0);
  });
  function submitWhenSettled() {
    if (!deferred || inflight > 0) return;
    const submitter = deferred;
    deferred = null;
    form.requestSubmit(submitter);
  }
  form.addEventListener("submit", function (e) {
    if (submitting) { e.preventDefault(); return; }
    clearTimeout(typingTimer);
    clearTimeout(retryTimer);
    if (inflight > 0) {
      e.preventDefault();
      deferred = e.submitter || form.querySelector("button[type=submit]");
      return;
    }
    submitting = true;
    const field = form.querySelector("input[name=elapsed_ms]");
    if (field) field.value = String(takeElapsed());
  });
  // Coming back through the browser's page cache must allow submitting again.
  window.addEventListener("pageshow", function () { submitting = false; });
})();
