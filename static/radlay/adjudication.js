// The adjudicator's page: keys 1-9 pick the consensus value (not while typing a note), and the
// time spent on the unit travels with the form (the label's time_spent_ms).
(function () {
  "use strict";
  var shownAt = Date.now();
  function clock() {
    document.querySelectorAll("[data-adjudication-clock]").forEach(function (input) {
      input.value = String(Date.now() - shownAt);
    });
  }
  document.addEventListener("submit", clock, true);
  document.addEventListener("htmx:configRequest", function (event) {
    if (event.detail.parameters && "elapsed_ms" in event.detail.parameters) {
      event.detail.parameters.elapsed_ms = String(Date.now() - shownAt);
    }
  });
  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    if (target && (target.tagName === "TEXTAREA" || (target.tagName === "INPUT" && target.type === "text"))) return;
    if (!/^[1-9]$/.test(event.key)) return;
    var choice = document.querySelector('.consensus-form input[type="radio"][data-key="' + event.key + '"]');
    if (choice) {
      choice.checked = true;
      choice.focus();
      event.preventDefault();
    }
  });
})();
