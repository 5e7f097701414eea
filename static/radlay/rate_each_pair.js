/* radlay rate-each-pair flow: the autosave of static/radlay/survey.js with a status per question, and the
   sentence-matching grid (a row's "None" and its ticks exclude each other; the grid is sent once
   every reference sentence has an answer). Everything here is an enhancement: the page form saves
   and navigates without it. Loaded after survey.js. */
(function () {
  "use strict";
  const form = document.getElementById("pairs-form");
  if (!form) return;
  const NONE = ".none";
  // The page's messages in the study's language ({% survey_strings %}); English where it is absent.
  const stringsBlock = document.getElementById("survey-strings");
  const STRINGS = stringsBlock ? JSON.parse(stringsBlock.textContent) : {};
  function escaped(text) {
    const span = document.createElement("span");
    span.textContent = text;
    return span.innerHTML;
  }

  function itemOf(name) {
    const field = name.slice(-NONE.length) === NONE ? name.slice(0, -NONE.length) : name;
    return form.querySelector('.item[data-field="' + field.replace(/"/g, '\\"') + '"]');
  }
  function checked(name) {
    return Array.prototype.slice
      .call(form.querySelectorAll('input[type=checkbox][name="' + name + '"]:checked'))
      .map(function (c) { return c.value; });
  }
  function gridOpenRows(item) {
    return Array.prototype.filter.call(item.querySelectorAll("tbody tr"), function (row) {
      return !row.querySelector("input:checked");
    }).length;
  }

  function watch(event, later) {
    const elt = event.target;
    if (!elt || !elt.name || elt.type === "hidden" || elt.type === "submit") return null;
    const item = itemOf(elt.name);
    if (!item) return null;
    const out = {};
    if (item.dataset.kind === "sentence_matching") {
      if (event.type !== "change") return null;
      const field = item.dataset.field;
      const row = elt.closest("tr");
      if (elt.checked && row) {
        row.querySelectorAll("input:checked").forEach(function (box) {
          const isNone = box.name === field + NONE;
          if (box !== elt && isNone !== (elt.name === field + NONE)) box.checked = false;
        });
      }
      const open = gridOpenRows(item);
      if (open) {
        const template = open === 1
          ? STRINGS.grid_open_one || "%(n)s reference sentence still to answer before this is saved"
          : STRINGS.grid_open_other || "%(n)s reference sentences still to answer before this is saved";
        item.querySelector(".row-status").innerHTML =
          '<span class="muted">' + escaped(template.replace("%(n)s", String(open))) + "</span>";
        return null;
      }
      out[field] = checked(field);
      out[field + NONE] = checked(field + NONE);
      return out;
    }
    if (elt.type === "checkbox") {
      if (event.type !== "change") return null;
      out[elt.name] = checked(elt.name);
      return out;
    }
    if (elt.type === "radio") {
      if (event.type !== "change" || !elt.checked) return null;
      out[elt.name] = elt.value;
      return out;
    }
    out[elt.name] = elt.value;
    if (event.type === "input") { later(elt, out, 800); return null; }
    return out;
  }

  const STATES = {
    sending: '<span class="muted">' + escaped(STRINGS.sending || "Saving…") + "</span>",
    pending: '<span class="offline">' + escaped(STRINGS.pending_short || "Not saved yet — retrying…") + "</span>",
  };
  RadlaySurvey.autosave(form, {
    watch: watch,
    listField: form.dataset.lists,
    onState: function (names, state, body) {
      let html = STATES[state];
      if (state === "saved") html = RadlaySurvey.swapOob(body);
      if (state === "refused") html = body;
      const seen = new Set();
      names.forEach(function (name) {
        const item = itemOf(name);
        if (!item || seen.has(item)) return;
        seen.add(item);
        item.querySelector(".row-status").innerHTML = html;
        if (state === "saved") item.classList.remove("missing", "refused");
        if (state === "refused") item.classList.add("refused");
      });
    },
  });
  form.dataset.ready = "1";
})();
