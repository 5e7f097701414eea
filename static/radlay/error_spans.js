/* radlay error spans on the radiologist page: the rater marks the parts of a
   simplification that contain an error, each with a category and a severity
   (templates/surveys/items/_error_spans.html). Loaded after survey.js and radiologist.js.

   Offsets are those the server stores: Python str offsets, i.e. code points of the stored text,
   end exclusive. The text comes from a JSON block (not from the page's HTML, whose parser would
   turn a carriage return into a newline) and is split into code points once; the DOM's selection
   offsets (UTF-16 units of text nodes) are converted through the text nodes this script made, and
   the labels it adds for screen readers ([data-nontext]) count for nothing.

   The answer is the item's hidden text field: the JSON list of marks. A change sets it and fires
   "change", so that survey.js's autosave sends it (and keeps it through a lost connection, as every
   answer); a plain submit posts it with the form. The category and severity radios are part of the
   widget, not answers: their events stop here, and so do keys, so that the page's keys (1-5, j, k,
   n …, radiologist.js) do not act while the rater marks. */
(function () {
  "use strict";

  const stringsBlock = document.getElementById("survey-strings");
  const STRINGS = stringsBlock ? JSON.parse(stringsBlock.textContent) : {};
  function say(key, fallback, values) {
    let text = STRINGS[key] || fallback;
    Object.keys(values || {}).forEach(function (name) {
      text = text.split("%(" + name + ")s").join(String(values[name]));
    });
    return text;
  }
  const WORD = /[\p{L}\p{N}]/u;
  const SPACE = /\s/u;

  // The pending selections of every widget, drawn with the CSS Custom Highlight API where the
  // browser has it (it stays visible when the focus moves on to the category and severity).
  const pendingRanges = new Map();
  function drawPending() {
    if (!(window.CSS && CSS.highlights && window.Highlight)) return;
    const ranges = Array.from(pendingRanges.values()).filter(Boolean);
    if (ranges.length) CSS.highlights.set("radlay-span-pending", new Highlight(...ranges));
    else CSS.highlights.delete("radlay-span-pending");
  }

  function byPlace(a, b) {
    if (a.start !== b.start) return a.start - b.start;
    if (a.end !== b.end) return a.end - b.end;
    if (a.category !== b.category) return a.category < b.category ? -1 : 1;
    if (a.severity !== b.severity) return a.severity < b.severity ? -1 : 1;
    return 0;
  }

  function setUp(item) {
    const input = item.querySelector("[data-span-answer]");
    const box = item.querySelector("[data-span-text]");
    const status = item.querySelector("[data-span-status]");
    const list = item.querySelector("[data-span-list]");
    const empty = item.querySelector("[data-span-empty]");
    const addButton = item.querySelector("[data-span-add]");
    const source = document.getElementById(item.dataset.textId);
    if (!input || !box || !source) return;
    const text = JSON.parse(source.textContent);
    const chars = Array.from(text);  // code points: the server's offsets
    const n = chars.length;
    const categories = {};
    item.querySelectorAll("[data-span-category]").forEach(function (r) {
      categories[r.value] = r.parentElement.textContent.trim();
    });
    const severities = {};
    const rank = {};
    item.querySelectorAll("[data-span-severity]").forEach(function (r) {
      severities[r.value] = r.parentElement.textContent.trim();
      rank[r.value] = Number(r.dataset.rank);
    });

    let marks = [];
    try {
      const stored = input.value ? JSON.parse(input.value) : [];
      if (Array.isArray(stored)) marks = stored.filter(function (m) { return m && m.end <= n; });
    } catch (e) { /* an unreadable value: the server keeps what it has */ }
    marks.sort(byPlace);

    // AI-assisted marking: suggestions the server offers, each accepted, edited or deleted one by
    // one. Only their fates go back ({marks, suggestions: {id: fate}}); the page never knows which
    // suggestions are planted wrong ones.
    const suggestionsBlock = item.dataset.suggestionsId ? document.getElementById(item.dataset.suggestionsId) : null;
    const suggestions = suggestionsBlock ? JSON.parse(suggestionsBlock.textContent).filter(function (s) { return s.end <= n; }) : [];
    const suggestionList = item.querySelector("[data-span-suggestion-list]");
    const fates = {};
    suggestions.forEach(function (s) {
      if (s.fate && s.fate !== "pending") fates[s.id] = s.fate;
      if (s.fate === "accepted" || s.fate === "edited") {
        const kept = marks.find(function (m) { return m.start === s.start && m.end === s.end && !m.suggestion; });
        if (kept) kept.suggestion = s.id;
      }
    });
    function pending() { return suggestions.filter(function (s) { return !fates[s.id]; }); }

    let anchor = null;  // the selection, as code-point offsets (null: never placed)
    let focus = null;
    let segments = [];  // the text nodes this script made: {node, start, end}
    const caret = document.createElement("span");
    caret.className = "span-caret";
    caret.setAttribute("aria-hidden", "true");
    caret.dataset.nontext = "";

    function quote(start, end) { return chars.slice(start, end).join(""); }
    function describe(mark) {
      return {
        text: quote(mark.start, mark.end),
        category: categories[mark.category] || mark.category,
        severity: severities[mark.severity] || mark.severity,
      };
    }
    function announce(message) { if (status) status.textContent = message; }

    function label(className, visible, hidden) {
      const tag = document.createElement("span");
      tag.className = "span-label " + className;
      tag.dataset.nontext = "";
      if (visible) {
        const number = document.createElement("sup");
        number.setAttribute("aria-hidden", "true");
        number.textContent = visible;
        tag.appendChild(number);
      }
      const spoken = document.createElement("span");
      spoken.className = "sr-only";
      spoken.textContent = hidden;
      tag.appendChild(spoken);
      return tag;
    }

    // The text as segments between the marks' boundaries; a segment inside one or more marks is a
    // <mark> (drawn by the most severe), and each mark's start and end are said in words.
    function render() {
      const cuts = new Set([0, n]);
      marks.forEach(function (m) { cuts.add(m.start); cuts.add(m.end); });
      const open = pending();
      open.forEach(function (s) { cuts.add(s.start); cuts.add(s.end); });
      const points = Array.from(cuts).sort(function (a, b) { return a - b; });
      box.textContent = "";
      segments = [];
      function labelsAt(position) {
        marks.forEach(function (m, i) {
          if (m.end === position) {
            box.appendChild(label("span-end", "", say("span_mark_end", "End of mark %(n)s.", { n: i + 1 })));
          }
        });
        marks.forEach(function (m, i) {
          if (m.start === position) {
            const d = describe(m);
            box.appendChild(label("span-start", String(i + 1), say(
              "span_mark_start", "Mark %(n)s, %(category)s, %(severity)s:",
              { n: i + 1, category: d.category, severity: d.severity })));
          }
        });
      }
      for (let i = 0; i + 1 < points.length; i += 1) {
        const start = points[i];
        const end = points[i + 1];
        labelsAt(start);
        const node = document.createTextNode(quote(start, end));
        const covering = [];
        marks.forEach(function (m, index) { if (m.start <= start && m.end >= end) covering.push(index); });
        if (covering.length) {
          const highlight = document.createElement("mark");
          const worst = Math.max.apply(null, covering.map(function (index) { return rank[marks[index].severity] || 0; }));
          highlight.className = "span-mark sev-" + worst;
          highlight.dataset.marks = covering.map(function (index) { return index + 1; }).join(" ");
          highlight.appendChild(node);
          box.appendChild(highlight);
        } else if (open.some(function (sg) { return sg.start <= start && sg.end >= end; })) {
          const suggested = document.createElement("mark");
          suggested.className = "span-suggested";
          suggested.appendChild(node);
          box.appendChild(suggested);
        } else {
          box.appendChild(node);
        }
        segments.push({ node: node, start: start, end: end });
      }
      labelsAt(n);
      box.appendChild(caret);
      renderList();
      renderSuggestions();
    }

    function renderSuggestions() {
      if (!suggestionList) return;
      suggestionList.textContent = "";
      pending().forEach(function (sg) {
        const d = describe(sg);
        const entry = document.createElement("li");
        entry.className = "span-suggestion";
        entry.dataset.suggestion = sg.id;
        const quoted = document.createElement("span");
        quoted.className = "span-quote";
        quoted.textContent = "“" + d.text + "”";
        const tags = document.createElement("span");
        tags.className = "span-tags sev-" + (rank[sg.severity] || 0);
        tags.textContent = d.category + " · " + d.severity;
        entry.append(quoted, " ", tags, " ");
        [["accept", "Accept", "span_accept"], ["edit", "Edit", "span_edit"], ["delete", "Delete", "span_delete"]].forEach(function (action) {
          const button = document.createElement("button");
          button.type = "button";
          button.className = "span-suggestion-" + action[0];
          button.dataset.action = action[0];
          button.textContent = say(action[2], action[1]);
          button.setAttribute("aria-label", say(action[2] + "_label", action[1] + " the suggestion “%(text)s” (%(category)s, %(severity)s)", d));
          button.addEventListener("click", function () { decide(sg, action[0]); });
          entry.append(button, " ");
        });
        suggestionList.appendChild(entry);
      });
      const block = item.querySelector("[data-span-suggestions]");
      if (block) block.dataset.pending = String(pending().length);
    }

    function decide(sg, action) {
      const d = describe(sg);
      const index = suggestions.indexOf(sg);
      if (action === "accept") {
        fates[sg.id] = "accepted";
        if (!marks.some(function (m) { return byPlace(m, sg) === 0; })) {
          marks.push({ start: sg.start, end: sg.end, category: sg.category, severity: sg.severity, suggestion: sg.id });
          marks.sort(byPlace);
        }
        commit();
        announce(say("span_accepted", "Suggestion accepted: “%(text)s”.", d));
      } else if (action === "delete") {
        fates[sg.id] = "deleted";
        commit();
        announce(say("span_deleted", "Suggestion deleted: “%(text)s”.", d));
      } else {
        // Edit: the suggestion becomes the selection with its category and severity chosen; the
        // rater changes what is wrong and adds the mark.
        fates[sg.id] = "edited";
        editing = sg.id;
        commit();
        anchor = sg.start;
        focus = sg.end;
        [["[data-span-category]", sg.category], ["[data-span-severity]", sg.severity]].forEach(function (pair) {
          item.querySelectorAll(pair[0]).forEach(function (r) { r.checked = r.value === pair[1]; });
        });
        box.focus({ preventScroll: true });
        selectInDom();
        showSelection(false);
        announce(say("span_editing", "Editing the suggestion “%(text)s”: change the selection, category or severity, then “Add mark”.", d));
        return;
      }
      // The focus moves on to the next suggestion (or the text when none is left).
      const next = suggestionList ? suggestionList.querySelectorAll(".span-suggestion-accept") : [];
      const target = next[Math.min(index, next.length - 1)] || next[0];
      if (target) target.focus(); else box.focus({ preventScroll: true });
    }
    let editing = null;

    function renderList() {
      list.textContent = "";
      marks.forEach(function (m, i) {
        const d = describe(m);
        const entry = document.createElement("li");
        const quoted = document.createElement("span");
        quoted.className = "span-quote";
        quoted.textContent = "“" + d.text + "”";
        const tags = document.createElement("span");
        tags.className = "span-tags sev-" + (rank[m.severity] || 0);
        tags.textContent = d.category + " · " + d.severity;
        const remove = document.createElement("button");
        remove.type = "button";
        remove.className = "span-remove";
        remove.textContent = say("span_remove", "Remove");
        remove.setAttribute("aria-label", say("span_remove_label", "Remove mark %(n)s: “%(text)s”", { n: i + 1, text: d.text }));
        remove.addEventListener("click", function () { removeMark(i); });
        entry.append(quoted, " ", tags, " ", remove);
        list.appendChild(entry);
      });
      if (empty) empty.hidden = marks.length > 0;
    }

    // --- Between the DOM's selection and code-point offsets ---------------------------------------
    function offsetOf(node, offset) {
      let position = 0;
      const range = document.createRange();
      for (let i = 0; i < segments.length; i += 1) {
        const segment = segments[i];
        range.selectNodeContents(segment.node);
        const where = range.comparePoint(node, offset);
        if (where > 0) { position = segment.end; continue; }
        if (where === 0) {
          position = node === segment.node
            ? segment.start + Array.from(segment.node.data.slice(0, offset)).length
            : segment.start;
        }
        break;
      }
      return position;
    }
    function pointAt(position, opening) {
      // A boundary between two segments: a selection opens in the later one and closes in the
      // earlier, so that it never takes in the labels between them.
      for (let i = 0; i < segments.length; i += 1) {
        const s = segments[i];
        const inside = opening
          ? position >= s.start && (position < s.end || i === segments.length - 1)
          : position <= s.end && (position > s.start || i === 0);
        if (inside) return [s.node, quote(s.start, Math.min(position, s.end)).length];
      }
      return [box, 0];
    }
    function selected() {
      if (anchor === null || focus === null) return null;
      let start = Math.min(anchor, focus);
      let end = Math.max(anchor, focus);
      // Spaces at either end are not part of an error.
      while (start < end && SPACE.test(chars[start])) start += 1;
      while (end > start && SPACE.test(chars[end - 1])) end -= 1;
      return start < end ? { start: start, end: end } : null;
    }
    function pendingRange() {
      const s = selected();
      if (!s || !segments.length) return null;
      const range = document.createRange();
      const a = pointAt(s.start, true);
      const b = pointAt(s.end, false);
      range.setStart(a[0], a[1]);
      range.setEnd(b[0], b[1]);
      return range;
    }
    function placeCaret() {
      if (focus === null || !segments.length) { caret.hidden = true; return; }
      const p = pointAt(focus, anchor === null || focus <= anchor);
      const range = document.createRange();
      range.setStart(p[0], p[1]);
      range.collapse(true);
      const rects = range.getClientRects();
      const rect = rects.length ? rects[0] : range.getBoundingClientRect();
      const outer = box.getBoundingClientRect();
      caret.hidden = false;
      caret.style.left = (rect.left - outer.left + box.scrollLeft) + "px";
      caret.style.top = (rect.top - outer.top + box.scrollTop) + "px";
      caret.style.height = (rect.height || 18) + "px";
    }
    function showSelection(announceIt) {
      pendingRanges.set(item, pendingRange());
      drawPending();
      placeCaret();
      if (!announceIt) return;
      const s = selected();
      if (s) {
        announce(say("span_selected", "Selected: “%(text)s”. Choose a category and a severity, then “Add mark”.", { text: quote(s.start, s.end) }));
      } else if (focus !== null) {
        let end = focus;
        while (end < n && !SPACE.test(chars[end])) end += 1;
        announce(focus >= n
          ? say("span_at_end", "End of the text.")
          : say("span_caret", "Before “%(text)s”.", { text: quote(focus, Math.max(end, focus + 1)) }));
      }
    }
    function selectInDom() {
      if (anchor === null || focus === null || !segments.length) return;
      const a = pointAt(anchor, anchor <= focus);
      const f = pointAt(focus, focus < anchor);
      const selection = window.getSelection();
      if (selection) selection.setBaseAndExtent(a[0], a[1], f[0], f[1]);
    }

    // The mouse (or a finger): whatever the browser selects inside the text becomes the selection.
    // A selection elsewhere on the page (a click on a category) leaves it as it is.
    document.addEventListener("selectionchange", function () {
      const selection = window.getSelection();
      if (!selection || !selection.rangeCount) return;
      if (!box.contains(selection.anchorNode) || !box.contains(selection.focusNode)) return;
      const a = offsetOf(selection.anchorNode, selection.anchorOffset);
      const f = offsetOf(selection.focusNode, selection.focusOffset);
      if (a === anchor && f === focus) return;
      anchor = a;
      focus = f;
      showSelection(true);
    });

    // --- The keyboard ------------------------------------------------------------------------------
    function wordEnd(at) {
      let i = at;
      while (i < n && !WORD.test(chars[i])) i += 1;
      while (i < n && WORD.test(chars[i])) i += 1;
      return i;
    }
    function wordStart(at) {
      let i = at;
      while (i > 0 && !WORD.test(chars[i - 1])) i -= 1;
      while (i > 0 && WORD.test(chars[i - 1])) i -= 1;
      return i;
    }
    box.addEventListener("focus", function () {
      if (focus === null) { anchor = 0; focus = 0; }
      placeCaret();
    });
    box.addEventListener("keydown", function (e) {
      if (e.metaKey || e.isComposing) return;
      const byWord = e.ctrlKey || e.altKey;
      const at = focus === null ? 0 : focus;
      let to;
      switch (e.key) {
        case "ArrowRight": to = byWord ? wordEnd(at) : Math.min(n, at + 1); break;
        case "ArrowLeft": to = byWord ? wordStart(at) : Math.max(0, at - 1); break;
        case "Home": to = 0; break;
        case "End": to = n; break;
        case "Enter": e.preventDefault(); addMark(); return;
        case "Escape": e.preventDefault(); anchor = at; focus = at; selectInDom(); showSelection(true); return;
        default: return;
      }
      e.preventDefault();
      if (!e.shiftKey || anchor === null) anchor = e.shiftKey ? at : to;
      focus = to;
      selectInDom();
      showSelection(true);
    });
    // The page's own keys stay out of the widget (Tab, and "?" for the keys help, go through).
    item.addEventListener("keydown", function (e) {
      if (e.key !== "?" && e.key !== "Tab") e.stopPropagation();
    });
    ["change", "input"].forEach(function (type) {
      item.addEventListener(type, function (e) { if (e.target !== input) e.stopPropagation(); });
    });

    // --- Adding and removing marks -----------------------------------------------------------------
    function commit() {
      // The text is drawn anew: a browser selection in it would be lost half-way and reported.
      const selection = window.getSelection();
      if (selection && selection.rangeCount && box.contains(selection.anchorNode)) selection.removeAllRanges();
      const plain = marks.map(function (m) {
        return { start: m.start, end: m.end, category: m.category, severity: m.severity };
      });
      input.value = JSON.stringify(suggestions.length ? { marks: plain, suggestions: fates } : plain);
      input.dispatchEvent(new Event("change", { bubbles: true }));
      render();
    }
    function chosen(selector) {
      const checked = item.querySelector(selector + ":checked");
      return checked ? checked.value : "";
    }
    function addMark() {
      const s = selected();
      if (!s) { announce(say("span_need_selection", "Select the words to mark first (mouse, touch or keyboard).")); return; }
      const mark = {
        start: s.start, end: s.end,
        category: chosen("[data-span-category]"), severity: chosen("[data-span-severity]"),
      };
      if (!mark.category || !mark.severity) {
        announce(say("span_need_choice", "Choose a category and a severity for the mark first."));
        return;
      }
      if (marks.some(function (m) { return byPlace(m, mark) === 0; })) {
        announce(say("span_duplicate", "This mark is already in the list."));
        return;
      }
      if (editing) { mark.suggestion = editing; editing = null; }
      marks.push(mark);
      marks.sort(byPlace);
      anchor = mark.end;
      focus = mark.end;
      commit();
      const d = describe(mark);
      const number = marks.findIndex(function (m) { return byPlace(m, mark) === 0; }) + 1;
      box.focus({ preventScroll: true });
      selectInDom();
      showSelection(false);
      announce(say("span_added", "Mark %(n)s added: “%(text)s”, %(category)s, %(severity)s.",
        { n: number, text: d.text, category: d.category, severity: d.severity }));
    }
    function removeMark(index) {
      const d = describe(marks[index]);
      // A mark taken over from a suggestion and then removed: the suggestion was deleted after all.
      if (marks[index].suggestion) fates[marks[index].suggestion] = "deleted";
      marks.splice(index, 1);
      commit();
      const buttons = list.querySelectorAll(".span-remove");
      const next = buttons[Math.min(index, buttons.length - 1)];
      if (next) next.focus(); else box.focus({ preventScroll: true });
      showSelection(false);
      announce(say("span_removed", "Mark removed: “%(text)s”.", { text: d.text }));
    }
    if (addButton) addButton.addEventListener("click", addMark);
    window.addEventListener("resize", placeCaret);

    render();
    caret.hidden = true;
    item.dataset.ready = "1";  // for browser tests: the widget is in place
  }

  document.querySelectorAll("[data-span-item]").forEach(setUp);
})();
