/* radlay lay survey: keyboard answering (number keys choose an option of the selected question),
   errors that go away once answered, the autosave of static/radlay/survey.js with its status next
   to the submit button, and the panel submit that brings the next panel in place (one request;
   survey.js `navigate`). Everything is an enhancement: the panel form saves and moves on without
   it. Loaded after survey.js. */
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  // The page's questions, asked afresh: a submitted panel is replaced by the next one in place.
  function allQuestions() {
    return Array.prototype.slice.call(document.querySelectorAll("fieldset.question"));
  }
  const choiceInputs = function (fieldset) {
    return Array.prototype.slice.call(fieldset.querySelectorAll("input[type=radio], input[type=checkbox]"));
  };
  const answered = function (fieldset) {
    return choiceInputs(fieldset).some(function (input) { return input.checked; });
  };

  // --- Keyboard answering: 1-9 choose the n-th option of the question that has the focus (or of
  // the first unanswered one, or on a fully answered panel of the one answered last); after a
  // single-choice answer, by key or by mouse, the focus moves to the next unanswered question, and
  // once none is left to the button that goes on, so Enter continues.
  let lastAnswered = null;
  let pointed = null;  // the question a mouse button went down in (see the "change" listener below)
  function continueButton() {
    return document.querySelector("#lay-form button[type=submit][name=continue]");
  }
  function currentQuestion() {
    const questions = allQuestions().filter(function (q) { return choiceInputs(q).length; });
    const active = document.activeElement;
    const holder = active && active.closest ? active.closest("fieldset.question") : null;
    if (holder) return holder;
    const open = questions.find(function (q) { return !answered(q); });
    if (open) return open;
    if (lastAnswered && document.contains(lastAnswered)) return lastAnswered;
    return questions[questions.length - 1] || null;
  }
  function focusQuestion(fieldset, preventScroll) {
    const inputs = choiceInputs(fieldset);
    const target = inputs.find(function (i) { return i.checked; }) || inputs[0];
    if (target) target.focus({ preventScroll: !!preventScroll });
  }
  // After `fieldset` was answered: the next unanswered question (after it, else before it), else
  // the continue button.
  function moveOn(fieldset, preventScroll) {
    const questions = allQuestions().filter(function (q) { return choiceInputs(q).length; });
    const at = questions.indexOf(fieldset);
    const open = questions.slice(at + 1).concat(questions.slice(0, at)).find(function (q) { return !answered(q); });
    if (open) { focusQuestion(open, preventScroll); return; }
    const button = continueButton();
    if (button) button.focus({ preventScroll: !!preventScroll });
  }
  document.addEventListener("keydown", function (e) {
    pointed = null;
    if (e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
    const tag = (e.target.tagName || "").toLowerCase();
    if (tag === "textarea" || (tag === "input" && e.target.type === "text")) return;
    if (e.key === "Enter") {
      // Enter goes on, wherever the focus is on the panel (a button or a link does its own thing).
      const form = document.getElementById("lay-form");
      if (!form || tag === "button" || tag === "a" || tag === "summary") return;
      e.preventDefault();
      form.requestSubmit(continueButton());
      return;
    }
    if (!/^[1-9]$/.test(e.key)) return;
    const fieldset = currentQuestion();
    if (!fieldset) return;
    const inputs = choiceInputs(fieldset);
    const input = inputs[Number(e.key) - 1];
    if (!input) return;
    e.preventDefault();
    input.click();  // fires "change", which autosaves
    if (input.type === "radio") moveOn(fieldset, false);
    else input.focus();
  });
  // A question answered with the mouse hands the keyboard on as a key answer does: otherwise the
  // next digit would change the answer just clicked instead of answering the next question.
  document.addEventListener("pointerdown", function (e) {
    pointed = e.pointerType !== "touch" && e.target.closest ? e.target.closest("fieldset.question") : null;
  });
  document.addEventListener("change", function (e) {
    const holder = e.target.closest ? e.target.closest("fieldset.question") : null;
    if (!holder || (e.target.type !== "radio" && e.target.type !== "checkbox")) return;
    lastAnswered = holder;
    if (e.target.type === "radio" && pointed === holder) {
      pointed = null;
      // After the click's own default actions (a label click focuses its input).
      setTimeout(function () { moveOn(holder, true); }, 0);
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
  // A page sent back with errors opens on the first of them, wherever it is on the page; a panel
  // put in place of the last one is announced by its heading, as a page load would be.
  function focusStart(swapped) {
    const questions = allQuestions();
    const firstError = document.querySelector("fieldset.question.has-error");
    if (firstError) {
      firstError.scrollIntoView({ block: "center" });
      focusQuestion(firstError);
      return;
    }
    if (swapped) {
      window.scrollTo(0, 0);
      const heading = document.querySelector("main h1");
      if (heading) {
        heading.setAttribute("tabindex", "-1");
        heading.focus({ preventScroll: true });
      }
    }
    if (window.matchMedia && window.matchMedia("(hover: hover) and (pointer: fine)").matches) {
      // Start with the first unanswered question selected, on devices with a keyboard and mouse.
      const first = questions.find(function (q) { return choiceInputs(q).length && !answered(q); });
      if (first) {
        const input = choiceInputs(first)[0];
        if (input) input.focus({ preventScroll: true });
      }
    }
  }

  // --- Autosave and time spent (static/radlay/survey.js): each answer is sent when given and kept
  // until the server acknowledges it; every save carries the ms since the previous one and the
  // page's signed render time, which caps what a save may claim.
  // The messages in the page's language (the {% survey_strings %} block), English without it.
  const stringsBlock = document.getElementById("survey-strings");
  const STRINGS = stringsBlock ? JSON.parse(stringsBlock.textContent) : {};
  function escaped(text) { const span = document.createElement("span"); span.textContent = text; return span.innerHTML; }
  const STATES = {
    sending: '<span class="muted">' + escaped(STRINGS.sending || "Saving…") + "</span>",
    pending: '<span class="error" role="alert">' +
      escaped(STRINGS.pending || "Not saved yet (connection problem); retrying…") + "</span>",
  };
  // Panel 3: a tick refused because its text is in the other question too (the server names it in
  // the response) is unticked again and marked, so the boxes show what is stored.
  function markConflicts(form, status) {
    form.querySelectorAll("input.conflict").forEach(function (input) {
      input.classList.remove("conflict");
      input.removeAttribute("aria-invalid");
      input.removeAttribute("aria-describedby");
    });
    status.querySelectorAll("[data-conflict]").forEach(function (marker) {
      const input = form.querySelector(
        'input[name="' + marker.dataset.conflict + '"][value="' + marker.dataset.value + '"]');
      if (!input) return;
      input.checked = false;
      input.classList.add("conflict");
      input.setAttribute("aria-invalid", "true");
      input.setAttribute("aria-describedby", "save-status");
    });
  }
  function watchForm() {
    const form = document.getElementById("lay-form");
    if (!form || typeof RadlaySurvey === "undefined") return;
    const stamp = form.querySelector("input[name=rendered_at]");
    RadlaySurvey.autosave(form, {
      params: { autosave: "1", rendered_at: stamp ? stamp.value : "" },
      // Unticking the last box of a group must clear it on the server, not leave it as it was.
      listField: "fields",
      // "Not both most and least liked" is judged on both questions of panel 3 together.
      linked: ["most", "least"],
      // A refused answer (400 bad value, 409 locked panel, 403 closed study) shows its message.
      onState: function (names, state, body) {
        const status = document.getElementById("save-status");
        if (!status) return;
        if (state === "saved") status.innerHTML = RadlaySurvey.swapOob(body);
        else if (state === "refused") status.innerHTML = body;
        else status.innerHTML = STATES[state];
        if (state === "saved" || state === "refused") markConflicts(form, status);
      },
      navigate: show,
    });
  }

  // The next panel, answered by the submit itself: its title, top bar and content replace this
  // page's, and its address goes into the history (going back reloads, and the server sends the
  // participant to where they are, as for any address of the survey).
  function show(html, url) {
    const next = new DOMParser().parseFromString(html, "text/html");
    ["header.topbar", "main"].forEach(function (selector) {
      const fresh = next.querySelector(selector);
      const old = document.querySelector(selector);
      if (fresh && old) old.replaceWith(document.adoptNode(fresh));
    });
    document.title = next.title;
    if (url !== location.pathname) history.pushState({ radlay: url }, "", url);
    shown = location.pathname;
    focusStart(true);
    watchForm();
  }
  // Back or forward to another address (not a link to a question on this page): load it.
  let shown = location.pathname;
  window.addEventListener("popstate", function () {
    if (location.pathname !== shown) location.reload();
  });

  focusStart(false);
  watchForm();
})();
