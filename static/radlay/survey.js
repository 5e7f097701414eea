/* radlay survey pages (radiologist and lay flows): an autosave that never loses an answer, and the
   time spent on a page. Load it before the flow's own script; it defines window.RadlaySurvey and
   does nothing by itself.

   const saver = RadlaySurvey.autosave(form, options)
     form     the page's <form>: its action attribute is where answers are POSTed, its csrfmiddlewaretoken
              input the CSRF token. The server answers an autosave (header HX-Request: true) with
              2xx = stored, 4xx = refused (its body says why; not retried), anything else = retry.
     options  (all optional)
       watch(event) -> {name: value | [values]} | null
                   what a change/input event in the form contributes; the default sends the
                   changed control alone (a checkbox: every checked value of its name; a textarea
                   or text input after a pause in typing, or at once on "change").
       onState(names, state, body)
                   called with the field names of a request and "sending", "saved" (body: the
                   response), "refused" (body: the message) or "pending" (not stored yet; retrying).
       typingDelayMs  pause in typing before a text field is sent (800).
       storageKey     where unsent answers wait in localStorage ("radlay:unsent:" + form path).
       params         {name: value} sent with every autosave request besides the answers (for
                      instance a marker that tells an autosave from a plain submit).
       linked         names of checkbox groups that are sent together: a change to one sends the
                      checked values of all of them (a rule spanning the groups, such as panel 3's
                      "not both most and least liked", is then judged on the whole answer).
       listField      a parameter name: each request also sends, under it, the name of every
                      list answer (checkbox group) it carries, so that a group with nothing
                      checked still reaches the server as "none" rather than as "not sent".
       navigate(html, url)
                   given, the form's submit is sent by fetch with the header X-Radlay-Navigate: 1
                   and the server answers with the next page itself (one request instead of the
                   submit, its redirect and a GET): a response with an X-Radlay-Page header is
                   handed to navigate(its HTML, that address) to be shown in place of this page,
                   after this saver has been disposed of; a 204 with X-Radlay-Location loads that
                   address; anything else (an error page, no connection) submits the form the
                   plain way, which the server answers as it always does.

   saver.queue({name: value})  send these answers (coalesced with whatever else is waiting)
   saver.unsent()              how many answers the server has not acknowledged yet
   saver.settled(ms)           a Promise that resolves once nothing waits or is in flight (or after ms)
   saver.takeElapsed()         ms since the last save, for the elapsed_ms field of a plain submit
   saver.dispose()             stop watching the window (the page is being replaced in place)
   A 2xx response with an HX-Redirect header sends the browser there, as htmx would.
   RadlaySurvey.swapOob(html)  put the response's hx-swap-oob elements in place (by id); returns
                               the rest of the HTML

   Guarantees: one autosave request at a time per page, carrying every waiting answer and the ms
   since the previous save (elapsed_ms; a failed request hands its share on). Every answer not yet
   acknowledged is kept in memory and in localStorage and retried (1 s, 2 s, 4 s … 15 s) until the
   server stores it; on the next load of the same page, answers still in localStorage are put back
   into the form and sent. Requests use fetch keepalive, so one in flight survives the tab closing,
   and on pagehide whatever still waits is sent the same way. While anything is unsent, leaving the
   page asks for confirmation. The form's submit carries every answer itself (the server's saves are
   idempotent), so answers still waiting to be sent (and text still in its typing pause) are not
   sent on their own first: they go with the submit. Only a request already in flight is waited
   for (up to 4 s), so that it cannot land after the submit and overwrite a newer value; from the
   submit on, no autosave is sent (answers given meanwhile are in the form the submit sends). */
(function () {
  "use strict";

  function csrfToken(form) {
    const input = form.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function defaultWatch(event, form, delay, later, linked) {
    const elt = event.target;
    if (!elt || !elt.name || elt.type === "hidden" || elt.type === "submit") return null;
    const out = {};
    if (elt.type === "checkbox") {
      const names = linked && linked.indexOf(elt.name) >= 0 ? linked : [elt.name];
      names.forEach(function (name) {
        out[name] = Array.prototype.slice
          .call(form.querySelectorAll('input[type=checkbox][name="' + name + '"]:checked'))
          .map(function (c) { return c.value; });
      });
      return event.type === "change" ? out : null;
    }
    if (elt.type === "radio") {
      return event.type === "change" && elt.checked ? (out[elt.name] = elt.value, out) : null;
    }
    if (elt.tagName === "TEXTAREA" || elt.type === "text") {
      out[elt.name] = elt.value;
      if (event.type === "input") { later(elt, out, delay); return null; }
      return out;
    }
    if (event.type === "change") { out[elt.name] = elt.value; return out; }
    return null;
  }

  function applyToForm(form, name, value) {
    const controls = form.querySelectorAll('[name="' + name + '"]');
    Array.prototype.forEach.call(controls, function (c) {
      if (c.type === "radio") c.checked = c.value === value;
      else if (c.type === "checkbox") c.checked = Array.isArray(value) && value.indexOf(c.value) >= 0;
      else if (c.tagName === "TEXTAREA" || c.type === "text") c.value = value;
    });
  }

  function swapOob(html) {
    const doc = new DOMParser().parseFromString("<body>" + html + "</body>", "text/html");
    Array.prototype.forEach.call(doc.querySelectorAll("[hx-swap-oob]"), function (fresh) {
      fresh.removeAttribute("hx-swap-oob");
      const old = fresh.id && document.getElementById(fresh.id);
      if (old) old.replaceWith(document.importNode(fresh, true));
      fresh.remove();
    });
    return doc.body.innerHTML;
  }

  function autosave(form, options) {
    options = options || {};
    // getAttribute: a control named "action" (the flows' submit buttons) shadows form.action.
    const url = new URL(form.getAttribute("action") || location.href, location.href).href;
    const storageKey = options.storageKey || "radlay:unsent:" + new URL(url, location.href).pathname;
    const onState = options.onState || function () {};
    const delay = options.typingDelayMs || 800;
    const waiting = new Map();   // name -> value, not sent yet
    const inflight = new Map();  // name -> value, sent, not acknowledged yet
    let busy = false;
    let holding = false;  // a submit is waiting for the request in flight: send nothing more
    let retryMs = 0;
    let retryTimer = null;
    let mark = performance.now();
    let carried = 0;
    const typing = new Map();

    function takeElapsed() {
      const now = performance.now();
      const ms = Math.round(now - mark + carried);
      mark = now;
      carried = 0;
      return ms;
    }

    function remember() {
      try {
        const all = {};
        inflight.forEach(function (v, k) { all[k] = v; });
        waiting.forEach(function (v, k) { all[k] = v; });
        if (Object.keys(all).length) localStorage.setItem(storageKey, JSON.stringify(all));
        else localStorage.removeItem(storageKey);
      } catch (e) { /* private mode or full storage: memory still holds the answers */ }
    }

    const fixed = options.params || {};
    function body(values, elapsed) {
      const params = new URLSearchParams();
      Object.keys(fixed).forEach(function (name) { params.append(name, fixed[name]); });
      values.forEach(function (value, name) {
        if (Array.isArray(value)) {
          value.forEach(function (v) { params.append(name, v); });
          if (options.listField) params.append(options.listField, name);
        } else {
          params.append(name, value);
        }
      });
      params.append("elapsed_ms", String(elapsed));
      return params;
    }

    function send() {
      if (busy || holding || !waiting.size) return;
      busy = true;
      clearTimeout(retryTimer);
      waiting.forEach(function (v, k) { inflight.set(k, v); });
      waiting.clear();
      const names = Array.from(inflight.keys());
      const elapsed = takeElapsed();
      onState(names, "sending");
      fetch(url, {
        method: "POST",
        body: body(inflight, elapsed),
        headers: { "HX-Request": "true", "X-CSRFToken": csrfToken(form) },
        credentials: "same-origin",
        keepalive: true,
      }).then(function (response) {
        return response.text().then(function (text) {
          return [response.status, text, response.headers.get("HX-Redirect")];
        });
      }).then(function (result) {
        const status = result[0];
        if (status >= 200 && status < 300 && result[2]) { done(names, "saved", ""); location.assign(result[2]); }
        else if (status >= 200 && status < 300) done(names, "saved", result[1]);
        else if (status >= 400 && status < 500) done(names, "refused", result[1]);
        else failed(names, elapsed);
      }, function () { failed(names, elapsed); });
    }

    function done(names, state, text) {
      inflight.clear();
      busy = false;
      retryMs = 0;
      remember();
      onState(names, state, text);
      send();
    }

    function failed(names, elapsed) {
      carried += elapsed;
      inflight.forEach(function (v, k) { if (!waiting.has(k)) waiting.set(k, v); });
      inflight.clear();
      busy = false;
      remember();
      onState(names, "pending");
      retryMs = Math.min(retryMs ? retryMs * 2 : 1000, 15000);
      clearTimeout(retryTimer);
      retryTimer = setTimeout(send, retryMs);
    }

    function queue(values) {
      Object.keys(values).forEach(function (name) {
        waiting.set(name, values[name]);
        const t = typing.get(name);
        if (t) { clearTimeout(t); typing.delete(name); }
      });
      remember();
      send();
    }

    function later(elt, values, ms) {
      clearTimeout(typing.get(elt.name));
      typing.set(elt.name, setTimeout(function () { typing.delete(elt.name); queue(values); }, ms));
    }

    function onEvent(event) {
      const values = options.watch
        ? options.watch(event, later)
        : defaultWatch(event, form, delay, later, options.linked);
      if (values && Object.keys(values).length) queue(values);
    }
    form.addEventListener("change", onEvent);
    form.addEventListener("input", onEvent);

    function unsent() {
      return waiting.size + inflight.size + typing.size;
    }

    function settled(ms) {
      const started = Date.now();
      typing.forEach(function (timer, name) {
        clearTimeout(timer);
        const field = form.querySelector('[name="' + name + '"]');
        if (field) waiting.set(name, field.value);
      });
      typing.clear();
      send();
      return new Promise(function (resolve) {
        (function poll() {
          if (!busy && !waiting.size) resolve(true);
          else if (Date.now() - started > (ms || 4000)) resolve(false);
          else setTimeout(poll, 50);
        })();
      });
    }

    // The tab is closing or the page goes into the background: send what waits, and the typing
    // still in its pause, with keepalive (a request already in flight has keepalive too).
    function flushOnHide() {
      typing.forEach(function (timer, name) {
        clearTimeout(timer);
        const field = form.querySelector('[name="' + name + '"]');
        if (field) waiting.set(name, field.value);
      });
      typing.clear();
      if (!waiting.size) return;
      remember();
      const params = body(waiting, 0);
      try {
        fetch(url, {
          method: "POST", body: params, keepalive: true, credentials: "same-origin",
          headers: { "HX-Request": "true", "X-CSRFToken": csrfToken(form) },
        });
      } catch (e) {
        params.append("csrfmiddlewaretoken", csrfToken(form));
        navigator.sendBeacon(url, params);
      }
    }
    let submitting = false;
    // The window's events, removed again by dispose() when the page is replaced in place.
    const windowEvents = [
      [window, "pagehide", flushOnHide],
      [document, "visibilitychange", function () {
        if (document.visibilityState === "hidden" && !busy) flushOnHide();
      }],
      [window, "online", function () { retryMs = 0; send(); }],
      [window, "beforeunload", function (e) {
        if (!submitting && unsent()) { e.preventDefault(); e.returnValue = ""; }
      }],
      // Back through the browser's page cache: the page may be submitted again.
      [window, "pageshow", function () { submitting = false; holding = false; send(); }],
    ];
    windowEvents.forEach(function (e) { e[0].addEventListener(e[1], e[2]); });
    function dispose() {
      windowEvents.forEach(function (e) { e[0].removeEventListener(e[1], e[2]); });
      clearTimeout(retryTimer);
    }

    // The submit by fetch (options.navigate): the form's fields and its submit button, URL-encoded
    // as a browser sends them; whatever the answer is not a page to show, the plain submit follows.
    function plainSubmit() {
      HTMLFormElement.prototype.submit.call(form);
    }
    function navigateSubmit(submitter) {
      const params = new URLSearchParams();
      new FormData(form).forEach(function (value, name) { params.append(name, value); });
      if (submitter && submitter.name) params.append(submitter.name, submitter.value);
      fetch(url, {
        method: "POST",
        body: params,
        headers: { "X-Radlay-Navigate": "1", "X-CSRFToken": csrfToken(form) },
        credentials: "same-origin",
      }).then(function (response) {
        const page = response.headers.get("X-Radlay-Page");
        const location = response.headers.get("X-Radlay-Location");
        if (page) {
          return response.text().then(function (html) { dispose(); options.navigate(html, page); });
        }
        if (response.status === 204 && location) { dispose(); window.location.assign(location); return; }
        plainSubmit();
      }).catch(plainSubmit);
    }
    // The submit waits for the request in flight only (what waits goes with the submit's form).
    function inflightSettled(ms) {
      const started = Date.now();
      return new Promise(function (resolve) {
        (function poll() {
          if (!busy) resolve(true);
          else if (Date.now() - started > ms) resolve(false);
          else setTimeout(poll, 50);
        })();
      });
    }
    form.addEventListener("submit", function (e) {
      if (submitting) { e.preventDefault(); return; }  // a double click submits once
      // From here on nothing is sent on its own: the submit's form carries every answer.
      holding = true;
      clearTimeout(retryTimer);
      typing.forEach(function (timer) { clearTimeout(timer); });
      typing.clear();
      if (busy && !form.radlaySettled) {
        e.preventDefault();
        const submitter = e.submitter;
        inflightSettled(4000).then(function () {
          form.radlaySettled = true;
          form.requestSubmit(submitter);
        });
        return;
      }
      form.radlaySettled = false;
      submitting = true;
      const field = form.querySelector("input[name=elapsed_ms]");
      if (field) field.value = String(takeElapsed());
      // The form carries every answer: nothing is left to keep for this page.
      waiting.clear();
      try { localStorage.removeItem(storageKey); } catch (err) { /* nothing stored */ }
      if (options.navigate && window.fetch) {
        e.preventDefault();
        navigateSubmit(e.submitter);
      }
    });

    // Answers that a previous visit could not send come back into the form and go out again.
    try {
      const kept = JSON.parse(localStorage.getItem(storageKey) || "{}");
      Object.keys(kept).forEach(function (name) { applyToForm(form, name, kept[name]); });
      if (Object.keys(kept).length) queue(kept);
    } catch (e) { /* unreadable storage: nothing to restore */ }

    return { queue: queue, unsent: unsent, settled: settled, takeElapsed: takeElapsed, dispose: dispose };
  }

  window.RadlaySurvey = { autosave: autosave, swapOob: swapOob };
})();
