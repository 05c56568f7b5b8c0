// hz web head: the sidebar chat and the live spine lines (plain JavaScript, no library).
(function () {
  "use strict";
  var layout = document.querySelector("[data-heinzel]");
  if (!layout) { return; }
  var id = layout.getAttribute("data-heinzel");
  var csrf = document.querySelector('meta[name="csrf"]').getAttribute("content");
  var live = document.getElementById("live");
  var status = document.getElementById("live-status");
  var state = document.getElementById("state");

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

  function describe(line) {
    var data = line.data || {};
    var bits = [line.seq, line.kind];
    ["cause", "step", "disposition", "reason", "usd"].forEach(function (k) {
      if (data[k] !== undefined && data[k] !== null) { bits.push(k + "=" + data[k]); }
    });
    return bits.join(" ");
  }

  var source = new EventSource("/h/" + id + "/events");
  source.addEventListener("row", function (e) {
    var row = JSON.parse(e.data);
    state.textContent = row.state;
    state.className = "badge state-" + row.state;
    status.textContent = row.pending ? "(" + row.pending.kind + " waiting on you)" : "";
  });
  // What a turn did and said, as words, once its last line arrives: the sidebar's answer.
  function reply(turn) {
    fetch("/h/" + id + "/turn/" + turn + "/reply", {
      credentials: "same-origin", headers: { "Accept": "application/json" }
    }).then(function (r) { return r.ok ? r.json() : null; }).then(function (said) {
      if (!said || !said.said) { return; }
      item(document.getElementById("messages"), "them", said.said.join("\n"), "");
    }).catch(function () { /* the live lines still show the turn */ });
  }

  source.addEventListener("line", function (e) {
    var line = JSON.parse(e.data);
    item(live, "", describe(line));
    while (live.children.length > 50) { live.removeChild(live.firstChild); }
    if (line.turn && (line.kind === "turn.finished" || line.kind === "turn.skipped" ||
        line.kind === "turn.waiting")) { reply(line.turn); }
  });

  var form = document.getElementById("chat");
  form.addEventListener("submit", function (e) {
    e.preventDefault();
    var text = form.elements.text.value;
    if (!text.trim()) { return; }
    var mine = item(document.getElementById("messages"), "me", text, "sending…");
    form.elements.text.value = "";
    var body = new URLSearchParams({ text: text, csrf: csrf });
    // A refusal that is not the route's JSON (the gate's 401 or 403 once the server was
    // restarted with a new token, a server gone) is shown as it came, never "sending…".
    fetch(form.action, {
      method: "POST", body: body, credentials: "same-origin",
      headers: { "Accept": "application/json", "X-CSRF-Token": csrf }
    }).then(function (r) {
      var type = r.headers.get("content-type") || "";
      if (type.indexOf("application/json") === 0) { return r.json(); }
      return r.text().then(function (said) { return { refused: said.trim() || String(r.status) }; });
    }).catch(function (error) {
      return { refused: "the server did not answer (" + error.message + ")" };
    }).then(function (answer) {
      var failed = answer.code || answer.refused;
      var said = answer.refused ||
        (answer.code ? answer.code + ": " + answer.message : "sent: " + answer.delivered);
      item(live, failed ? "error" : "", said);
      if (answer.hint) { item(live, "error", "hint: " + answer.hint); }
      mine.lastChild.textContent = failed ? "not sent" : "sent";
      if (failed && !form.elements.text.value) { form.elements.text.value = text; }
      document.getElementById("refresh").hidden = false;
    });
  });
  form.elements.text.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { form.requestSubmit(); }
  });
}());
