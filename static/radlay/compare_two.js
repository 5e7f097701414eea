// The compare-two page's keys: 1-4 choose an answer (outside the reason box); the time on the page is
// sent with the form. The form works without this file.
(function () {
  "use strict";
  var form = document.querySelector(".pairwise-form");
  if (!form) return;
  var started = Date.now();
  form.addEventListener("submit", function () {
    var timer = form.querySelector("[data-pairwise-timer]");
    if (timer) timer.value = String(Date.now() - started);
  });
  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (target && (target.tagName === "TEXTAREA" || target.tagName === "INPUT" && target.type === "text")) return;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var radios = form.querySelectorAll('input[name="choice"]');
    var index = parseInt(event.key, 10) - 1;
    if (index >= 0 && index < radios.length) {
      radios[index].checked = true;
      radios[index].focus();
      event.preventDefault();
    }
  });
})();
