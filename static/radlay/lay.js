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
  // the first unanswered one); after a single-choice answer the focus moves to the next question.
  function currentQuestion() {
    const questions = allQuestions();
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
      const questions = allQuestions();
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
  const STATES = {
    sending: '<span class="muted">Saving…</span>',
    pending: '<span class="error" role="alert">Not saved yet (connection problem); retrying…</span>',
  };
  function watchForm() {
    const form = document.getElementById("lay-form");
    if (!form || typeof RadlaySurvey === "undefined") return;
    const stamp = form.querySelector("input[name=rendered_at]");
    RadlaySurvey.autosave(form, {
      params: { autosave: "1", rendered_at: stamp ? stamp.value : "" },
      // Unticking the last box of a group must clear it on the server, not leave it as it was.
      listField: "fields",
      // A refused answer (400 bad value, 409 locked panel, 403 closed study) shows its message.
      onState: function (names, state, body) {
        const status = document.getElementById("save-status");
        if (!status) return;
        if (state === "saved") status.innerHTML = RadlaySurvey.swapOob(body);
        else if (state === "refused") status.innerHTML = body;
        else status.innerHTML = STATES[state];
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
