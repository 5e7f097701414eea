// Keeps every training-job progress bar on an admin page current while its job runs: polls the
// job's progress URL every few seconds and swaps in the server-rendered bar.
(function () {
  "use strict";
  var FINISHED = ["succeeded", "failed", "cancelled"];
  function poll(element) {
    if (FINISHED.indexOf(element.dataset.status) !== -1) return;
    window.setTimeout(function () {
      fetch(element.dataset.url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (response) { return response.ok ? response.json() : Promise.reject(response.status); })
        .then(function (data) {
          var holder = document.createElement("span");
          holder.innerHTML = data.html;
          var fresh = holder.firstElementChild;
          element.replaceWith(fresh);
          poll(fresh);
        })
        .catch(function () { poll(element); });
    }, 3000);
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll(".ml-progress").forEach(poll);
  });
})();
