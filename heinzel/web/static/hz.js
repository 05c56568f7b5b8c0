// hz web head: live pages, the buttons, the sidebar chat (plain JavaScript, no library).
// The server renders every part; this swaps the parts it sends in and never builds HTML
// from data (texts are set with textContent).
(function () {
  "use strict";
  var meta = document.querySelector('meta[name="csrf"]');
  var csrf = meta ? meta.getAttribute("content") : "";
  var said = document.getElementById("said");
  var refused = document.getElementById("refused");

  // -- what the person is told: a polite status, or an alert for a refusal -----------
  function tell(text, isError) {
    if (said) { said.textContent = isError ? "" : text; }
    if (refused) { refused.textContent = isError ? text : ""; refused.hidden = !isError; }
  }

  function describe(answer) {
    if (answer.refused) { return answer.refused; }
    if (answer.code) {
      return answer.code + ": " + answer.message + (answer.hint ? " (hint: " + answer.hint + ")" : "");
    }
    if (answer.already) { return answer.said || answer.message; }
    if (answer.delivered) { return answer.delivered; }
    if (answer.proposal) {
      return "Answered " + (answer.approved ? "yes" : "no") + "; its turn goes on.";
    }
    if (answer.approved) {
      return "Approved " + (answer.file ? "the draft" : answer.approved) +
        (answer.started ? "; it learns from your edits now." :
          (answer.learns ? "; " + answer.learns + "." : "."));
    }
    if (answer.declined) { return "Declined."; }
    if (answer.question !== undefined && answer.started) { return "Answered; its turn goes on."; }
    if (answer.verb && answer.started) { return answer.verb + ": its turn runs now."; }
    if (answer.started) { return "Sent; its turn goes on."; }
    if (answer.state) { return "Done: now " + answer.state + "."; }
    return "Done.";
  }

  // A response that is not the route's JSON (the gate's 401 or 403 once the server was
  // restarted with a new token, a server gone) is shown as it came.
  function post(url, body) {
    return fetch(url, {
      method: "POST", body: body, credentials: "same-origin",
      headers: { "Accept": "application/json", "X-CSRF-Token": csrf }
    }).then(function (r) {
      var type = r.headers.get("content-type") || "";
      if (type.indexOf("application/json") === 0) { return r.json(); }
      return r.text().then(function (text) { return { refused: text.trim() || String(r.status) }; });
    }).catch(function (error) {
      return { refused: "the server did not answer (" + error.message + ")" };
    });
  }

  // -- swapping a part in, keeping what the person is doing --------------------------
  var waiting = {};

  function typing(part) {
    var active = document.activeElement;
    return active && part.contains(active) &&
      (active.tagName === "TEXTAREA" || (active.tagName === "INPUT" && active.type !== "hidden")) &&
      active.value !== "";
  }

  // A part comes as {html, hash}: one whose hash the page shows already stays as it is.
  function swap(part, next) {
    if (part.getAttribute("data-hash") === next.hash) { delete waiting[part.id]; return; }
    if (typing(part)) { waiting[part.id] = next; return; }
    delete waiting[part.id];
    var html = next.html;
    var active = document.activeElement;
    var focusedText = active && part.contains(active) ? active.textContent : null;
    var open = [];
    part.querySelectorAll("details[open] > summary").forEach(function (s) { open.push(s.textContent); });
    part.innerHTML = html;
    part.setAttribute("data-hash", next.hash);
    part.querySelectorAll("details > summary").forEach(function (s) {
      if (open.indexOf(s.textContent) >= 0) { s.parentNode.open = true; }
    });
    if (focusedText !== null) {
      var same = Array.prototype.filter.call(part.querySelectorAll("button, summary, a"),
        function (el) { return el.textContent === focusedText; });
      (same[0] || part).focus();
    }
  }

  document.addEventListener("focusout", function (e) {
    var part = e.target.closest && e.target.closest("[data-part]");
    if (!part || waiting[part.id] === undefined) { return; }
    setTimeout(function () {
      if (!part.contains(document.activeElement) && waiting[part.id] !== undefined) {
        swap(part, waiting[part.id]);
      }
    }, 0);
  });

  function swapAll(parts) {
    Object.keys(parts).forEach(function (name) {
      var part = document.getElementById("part-" + name);
      if (part && parts[name] && typeof parts[name].html === "string") { swap(part, parts[name]); }
    });
  }

  // -- the list page: its rows follow the index --------------------------------------
  var rows = document.getElementById("part-rows");
  if (rows && window.EventSource) {
    var listing = new EventSource("/events" + window.location.search);
    listing.addEventListener("rows", function (e) { swap(rows, JSON.parse(e.data)); });
  }

  var layout = document.querySelector("[data-heinzel]");
  if (!layout) { return; }
  var id = layout.getAttribute("data-heinzel");
  var live = document.getElementById("live");
  var status = document.getElementById("live-status");

  function refreshParts() {
    return fetch("/h/" + id + "/parts", {
      credentials: "same-origin", headers: { "Accept": "application/json" }
    }).then(function (r) { return r.ok ? r.json() : null; }).then(function (parts) {
      if (parts && !parts.code) { swapAll(parts); }
    }).catch(function () { /* the stream still brings them */ });
  }

  function freshId() {
    return "rq-" + Date.now().toString(36) + Math.random().toString(36).slice(2, 12);
  }

  // -- the buttons: sent without leaving the page, the answer said, the parts swapped ----
  layout.addEventListener("submit", function (e) {
    var form = e.target;
    if (form.id === "chat" || (form.method || "").toLowerCase() !== "post") { return; }
    e.preventDefault();
    var body = new URLSearchParams(new FormData(form));
    var buttons = form.querySelectorAll("button");
    buttons.forEach(function (b) { b.disabled = true; });
    post(form.action, body).then(function (answer) {
      buttons.forEach(function (b) { b.disabled = false; });
      if (answer.location) { window.location.assign(answer.location); return; }  // a trial's page
      // a Wake or Retry that reached hz: the next click is a new one (a fresh id); one
      // that did not (refused, no answer) keeps its id, so sending it again runs it once
      if (form.elements.request_id && !answer.code && !answer.refused) {
        form.elements.request_id.value = freshId();
      }
      tell(describe(answer), Boolean(answer.code || answer.refused));
      return refreshParts();
    });
  });

  function item(list, cls, text, when) {
    var li = document.createElement("li");
    if (cls) { li.className = cls; }
    var span = document.createElement("span");
    span.className = "text";
    span.textContent = text;  // always text, never HTML
    li.appendChild(span);
    if (when) { var t = document.createElement("time"); t.textContent = when; li.appendChild(t); }
    list.appendChild(li);
    return li;
  }

  function line(event) {
    var data = event.data || {};
    var bits = [event.seq, event.kind];
    ["cause", "step", "disposition", "reason", "usd"].forEach(function (k) {
      if (data[k] !== undefined && data[k] !== null) { bits.push(k + "=" + data[k]); }
    });
    return bits.join(" ");
  }

  // -- the page's stream: the current row and parts, then each spine line ----------------
  var source = new EventSource("/h/" + id + "/events");
  source.addEventListener("row", function (e) {
    var row = JSON.parse(e.data);
    status.textContent = row.pending ? "(" + row.pending.kind + " waiting on you)" : "";
  });
  source.addEventListener("parts", function (e) { swapAll(JSON.parse(e.data)); });

  // What a turn did and said, as words, once its last line arrives: the sidebar's answer.
  function reply(turn) {
    fetch("/h/" + id + "/turn/" + turn + "/reply", {
      credentials: "same-origin", headers: { "Accept": "application/json" }
    }).then(function (r) { return r.ok ? r.json() : null; }).then(function (answer) {
      if (!answer || !answer.said) { return; }
      item(document.getElementById("messages"), "them", answer.said.join("\n"), "");
    }).catch(function () { /* the live lines still show the turn */ });
  }

  source.addEventListener("line", function (e) {
    var event = JSON.parse(e.data);
    item(live, "", line(event));
    while (live.children.length > 50) { live.removeChild(live.firstChild); }
    if (event.turn && (event.kind === "turn.finished" || event.kind === "turn.skipped" ||
        event.kind === "turn.waiting")) { reply(event.turn); }
  });

  // -- the sidebar chat ------------------------------------------------------------------
  var form = document.getElementById("chat");
  form.addEventListener("submit", function (e) {
    e.preventDefault();
    var text = form.elements.text.value;
    if (!text.trim()) { return; }
    var mine = item(document.getElementById("messages"), "me", text, "sending…");
    form.elements.text.value = "";
    // one request id per message: sending the same words again after "not sent" reuses
    // it, so hz delivers the message once whatever reached it (`--request-id`)
    var rid = form.dataset.text === text && form.dataset.rid ? form.dataset.rid : freshId();
    var fields = { text: text, csrf: csrf, request_id: rid };
    post(form.action, new URLSearchParams(fields)).then(function (answer) {
      var failed = answer.code || answer.refused;
      var shown = answer.refused ||
        (answer.code ? answer.code + ": " + answer.message : "sent: " + answer.delivered);
      item(live, failed ? "error" : "", shown);
      if (answer.hint) { item(live, "error", "hint: " + answer.hint); }
      if (failed) { tell(shown, true); }
      mine.lastChild.textContent = failed ? "not sent" : "sent";
      form.dataset.text = failed ? text : "";
      form.dataset.rid = failed ? rid : "";
      if (failed && !form.elements.text.value) { form.elements.text.value = text; }
    });
  });
  form.elements.text.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { form.requestSubmit(); }
  });
}());
