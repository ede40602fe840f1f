// The llmrouter status page (docs/ARCHITECTURE.md, "Status page"). It
// reads GET /admin/config once and on each reload, and GET /admin/events:
// a state event every second (providers, models, keys, reloads) and
// requests events with the newest records of the ring of recent requests.
//
// Every string, some of which a client or a provider chose (a requested
// model name, a provider's error message), is inserted as text: el() sets
// textContent and nothing here assigns HTML.
"use strict";

(function () {
  var HISTORY = 120;   // chart points kept per provider (two minutes)
  var KEEP = 512;      // recent requests kept (the ring's size)

  var history = {};    // provider -> [{success, latency}]
  var requests = [];   // recent requests, oldest first
  var lastState = null;
  var reloadsSeen = -1;

  // el makes an element with a class and text (as text, never HTML).
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function td(text, cls) { return el("td", cls, text); }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function $(id) { return document.getElementById(id); }

  function fmtNum(n) {
    if (n >= 1e6) return (n / 1e6).toFixed(1) + "M";
    if (n >= 1e4) return (n / 1e3).toFixed(0) + "k";
    return String(n);
  }
  function fmtUSD(v) { return "$" + (v < 0.01 && v > 0 ? v.toPrecision(2) : v.toFixed(2)); }
  function fmtSecs(s) {
    if (s < 1) return (s * 1000).toFixed(0) + "ms";
    if (s < 90) return s.toFixed(s < 10 ? 1 : 0) + "s";
    if (s < 5400) return (s / 60).toFixed(0) + "m";
    return (s / 3600).toFixed(1) + "h";
  }
  function fmtNs(ns) { return ns > 0 ? fmtSecs(ns / 1e9) : "-"; }
  function left(remaining, limit) {
    if (limit <= 0 && remaining < 0) return "-";
    var r = remaining < 0 ? "?" : fmtNum(remaining);
    return limit > 0 ? r + " / " + fmtNum(limit) : r;
  }

  // spark draws values (0..max) as a small SVG line chart.
  function spark(values, max, label) {
    var ns = "http://www.w3.org/2000/svg";
    var svg = document.createElementNS(ns, "svg");
    svg.setAttribute("class", "spark");
    svg.setAttribute("viewBox", "0 0 120 28");
    svg.setAttribute("preserveAspectRatio", "none");
    var title = document.createElementNS(ns, "title");
    title.textContent = label;
    svg.appendChild(title);
    var base = document.createElementNS(ns, "line");
    base.setAttribute("x1", "0"); base.setAttribute("x2", "120");
    base.setAttribute("y1", "27"); base.setAttribute("y2", "27");
    svg.appendChild(base);
    if (values.length > 1 && max > 0) {
      var pts = [];
      var step = 120 / (HISTORY - 1);
      var x0 = 120 - step * (values.length - 1);
      for (var i = 0; i < values.length; i++) {
        var y = 27 - 25 * Math.min(values[i], max) / max;
        pts.push((x0 + step * i).toFixed(1) + "," + y.toFixed(1));
      }
      var line = document.createElementNS(ns, "polyline");
      line.setAttribute("points", pts.join(" "));
      svg.appendChild(line);
    }
    return svg;
  }

  // lastErrorOf is the newest recent record's failure message of provider.
  function lastErrorOf(name) {
    for (var i = requests.length - 1; i >= 0; i--) {
      var q = requests[i];
      if (!q.error) continue;
      var at = q.attempts || [];
      for (var j = at.length - 1; j >= 0; j--) {
        if (at[j].kind !== "ok") {
          if (at[j].provider === name) return q.error;
          break;
        }
      }
    }
    return "";
  }

  function enable(name, button) {
    button.disabled = true;
    fetch("/admin/providers/" + encodeURIComponent(name) + "/enable", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: "{}", credentials: "same-origin"
    }).then(function (r) { return r.json().then(function (b) { return [r.status, b]; }); })
      .then(function (res) {
        var b = res[1];
        $("notice").textContent = res[0] === 200
          ? name + " enabled: quota lifted " + b.quota_lifted + ", targets " + (b.targets_enabled || []).join(", ")
          : name + ": " + (b.error || res[0]);
      })
      .catch(function (e) { $("notice").textContent = name + ": " + e; })
      .finally(function () { button.disabled = false; });
  }

  // record adds each provider's success rate and latency to its chart.
  function record(ps) {
    ps.forEach(function (p) {
      var h = history[p.name] || (history[p.name] = []);
      h.push({ success: p.stats.success_rate, latency: p.stats.latency_ema_ms });
      if (h.length > HISTORY) h.shift();
    });
  }

  function renderProviders(ps) {
    var body = $("providers-body");
    clear(body);
    ps.forEach(function (p) {
      var h = history[p.name] || [];

      var tr = el("tr");
      tr.dataset.provider = p.name;
      var name = td(null, "name");
      name.appendChild(el("strong", null, p.name));
      name.appendChild(el("div", "muted small", p.type + (p.domain ? " · domain " + p.domain : "") + " · " + (p.shared ? "shared" : "local")));
      tr.appendChild(name);

      var state = p.state === "open" ? "open, probe in " + fmtSecs(p.cooldown_left_seconds) : p.state.replace("_", "-");
      var st = td(state, "state state-" + p.state);
      if (p.consecutive_trips > 0) st.appendChild(el("div", "muted small", p.consecutive_trips + " trip(s)"));
      if (p.out_of_quota) st.appendChild(el("div", "fail small", "out of quota, check in " + fmtSecs(p.quota_check_seconds)));
      if (p.blocked_seconds > 0) st.appendChild(el("div", "fail small", "blocked " + fmtSecs(p.blocked_seconds)));
      tr.appendChild(st);

      var s = p.score;
      var sc = td(s.total.toFixed(2), "score");
      sc.appendChild(el("div", "muted small", "success " + s.success.toFixed(2) + " · latency " + s.latency.toFixed(2) +
        " · recency " + s.recency.toFixed(2) + " · capacity " + s.capacity.toFixed(2) + " · ramp " + s.ramp.toFixed(2) +
        (s.floored ? " · floored" : "")));
      tr.appendChild(sc);

      var succ = td(null, "success");
      succ.appendChild(el("div", null, p.stats.requests > 0 ? (100 * p.stats.success_rate).toFixed(0) + "% of " + p.stats.requests : "-"));
      succ.appendChild(spark(h.map(function (x) { return x.success; }), 1, "success rate"));
      tr.appendChild(succ);

      var lat = td(null, "latency");
      var maxLat = Math.max.apply(null, h.map(function (x) { return x.latency; }).concat([1]));
      lat.appendChild(el("div", null, p.stats.latency_ema_ms > 0 ? p.stats.latency_ema_ms.toFixed(0) + "ms (p95 " + p.stats.p95_ms.toFixed(0) + ")" : "-"));
      lat.appendChild(spark(h.map(function (x) { return x.latency; }), maxLat, "latency (EMA)"));
      tr.appendChild(lat);

      tr.appendChild(td(left(p.remaining_requests, p.rpm_limit), "rpm"));
      tr.appendChild(td(left(p.remaining_tokens, p.tpm_limit), "tpm"));
      tr.appendChild(td(p.in_flight + (p.max_concurrency > 0 ? " / " + p.max_concurrency : ""), "inflight"));

      var le = td(null, "lasterror text");
      if (p.last_error_kind) {
        le.appendChild(el("span", "fail", p.last_error_kind));
        if (p.last_error_ago_seconds >= 0) le.appendChild(el("span", "muted", " " + fmtSecs(p.last_error_ago_seconds) + " ago"));
        var msg = lastErrorOf(p.name);
        if (msg) le.appendChild(el("div", "muted small message", msg));
      } else {
        le.textContent = "-";
      }
      tr.appendChild(le);

      tr.appendChild(td((p.disabled_targets || []).join(", ") || "-", "disabled text"));
      var act = td(null, "action");
      if (p.out_of_quota || (p.disabled_targets || []).length > 0) {
        var b = el("button", "enable", "Enable");
        b.type = "button";
        b.title = "lift the quota block and the disabled targets";
        b.addEventListener("click", function () { enable(p.name, b); });
        act.appendChild(b);
      }
      tr.appendChild(act);
      body.appendChild(tr);
    });
  }

  function renderModels(ms) {
    var body = $("models-body");
    clear(body);
    ms.forEach(function (m) {
      var served = 0, degraded = 0, hedged = 0, rescued = 0, per = {};
      requests.forEach(function (q) {
        if (q.model !== m.name) return;
        if (q.degraded) degraded++;
        if (q.hedged) hedged++;
        if (q.rescued) rescued++;
        if (!q.provider) return;
        served++;
        var k = q.provider + "\u0000" + q.target;
        per[k] = (per[k] || 0) + 1;
      });
      var box = el("div", "model");
      box.dataset.model = m.name;
      var h = el("h3", null, m.name);
      h.appendChild(el("span", "muted small", " · " + served + " served · " + degraded + " degraded · " + hedged + " hedged"));
      box.appendChild(h);
      var t = el("table");
      var head = el("tr");
      ["tier", "provider", "provider model", "available", "share"].forEach(function (c) { head.appendChild(el("th", null, c)); });
      t.appendChild(head);
      m.targets.forEach(function (tg) {
        var tr = el("tr");
        tr.dataset.target = tg.provider + "/" + tg.model;
        tr.appendChild(td(tg.tier));
        tr.appendChild(td(tg.provider));
        tr.appendChild(td(tg.model));
        tr.appendChild(td(tg.available ? "yes" : "no: " + tg.why, tg.available ? "yes" : "no"));
        var n = per[tg.provider + "\u0000" + tg.model] || 0;
        var share = served > 0 ? n / served : 0;
        var c = td(null, "share");
        var bar = el("span", "bar");
        bar.style.width = (60 * share).toFixed(0) + "px";
        c.appendChild(bar);
        c.appendChild(document.createTextNode((100 * share).toFixed(0) + "% (" + n + ")"));
        tr.appendChild(c);
        t.appendChild(tr);
      });
      box.appendChild(t);
      body.appendChild(box);
    });
  }

  function renderKeys(ks) {
    var body = $("keys-body");
    clear(body);
    if (ks.length === 0) {
      var tr0 = el("tr");
      var c = td("no named keys (auth.keys)", "muted");
      c.colSpan = 9;
      tr0.appendChild(c);
      body.appendChild(tr0);
    }
    ks.forEach(function (k) {
      var tr = el("tr");
      tr.dataset.key = k.name;
      tr.appendChild(td(k.name, "name"));
      tr.appendChild(td(fmtUSD(k.spend_usd), "spend"));
      tr.appendChild(td(k.budget_usd > 0 ? fmtUSD(k.budget_usd) + " / " + k.budget_period : "-", "budget"));
      tr.appendChild(td(k.remaining_usd === null ? "-" : fmtUSD(k.remaining_usd), "remaining"));
      tr.appendChild(td(fmtUSD(k.reserved_usd), "reserved"));
      tr.appendChild(td(k.in_flight, "inflight"));
      tr.appendChild(td(k.rpm > 0 ? k.rpm_in_use + " / " + k.rpm : "-", "rpm"));
      tr.appendChild(td(k.tpm > 0 ? k.tpm_in_use + " / " + k.tpm : "-", "tpm"));
      tr.appendChild(td(k.resets_at ? new Date(k.resets_at).toLocaleString() : "-", "resets"));
      body.appendChild(tr);
    });
  }

  function filters() {
    var f = $("filters");
    return {
      model: f.elements.model.value.trim(), key: f.elements.key.value.trim(),
      provider: f.elements.provider.value.trim(), failure: f.elements.failure.value.trim()
    };
  }
  function matches(q, f) {
    var at = q.attempts || [];
    if (f.model && (q.asked + " " + q.model).indexOf(f.model) < 0) return false;
    if (f.key && q.key.indexOf(f.key) < 0) return false;
    if (f.provider && !at.some(function (a) { return a.provider.indexOf(f.provider) >= 0; })) return false;
    if (f.failure) {
      var fails = at.filter(function (a) { return a.kind !== "ok"; });
      if (f.failure === "any") return fails.length > 0 || q.status >= 400;
      if (!fails.some(function (a) { return a.kind.indexOf(f.failure) >= 0; })) return false;
    }
    return true;
  }

  function renderRequests() {
    var body = $("recent-body");
    clear(body);
    var f = filters();
    var shown = 0;
    for (var i = requests.length - 1; i >= 0 && shown < 300; i--) {
      var q = requests[i];
      if (!matches(q, f)) continue;
      shown++;
      var tr = el("tr");
      tr.dataset.id = q.id;
      tr.appendChild(td(new Date(q.at).toLocaleTimeString(), "time"));
      tr.appendChild(td(q.id, "id"));
      tr.appendChild(td(q.api, "api"));
      tr.appendChild(td(q.asked, "asked text"));
      tr.appendChild(td(q.model || "-", "model"));
      tr.appendChild(td(q.key || "-", "key"));
      tr.appendChild(td(q.status === 0 ? "gone" : q.status, "status " + (q.status === 200 ? "status-ok" : "status-bad")));
      var at = td(null, "attempts text");
      (q.attempts || []).forEach(function (a, j) {
        if (j > 0) at.appendChild(document.createTextNode(" → "));
        at.appendChild(el("span", a.kind === "ok" ? "yes" : "fail", a.provider + ":" + a.kind));
      });
      if (q.attempt_count > (q.attempts || []).length) at.appendChild(el("span", "muted", " (" + q.attempt_count + " in all)"));
      if (q.error) at.appendChild(el("div", "muted small message", q.error));
      tr.appendChild(at);
      tr.appendChild(td(q.provider ? q.provider + "/" + q.target + " (tier " + q.tier + ")" : "-", "served"));
      tr.appendChild(td(fmtNs(q.ttft_ns), "ttft"));
      tr.appendChild(td(fmtNs(q.total_ns), "total"));
      tr.appendChild(td(q.cost_usd > 0 ? fmtUSD(q.cost_usd) : "-", "cost"));
      var flags = td(null, "flags");
      [["degraded", q.degraded], ["hedged", q.hedged], ["rescued", q.rescued]].forEach(function (x) {
        if (x[1]) flags.appendChild(el("span", "flag", x[0]));
      });
      if (q.affinity) flags.appendChild(el("span", "flag", "affinity " + q.affinity));
      tr.appendChild(flags);
      body.appendChild(tr);
    }
    $("recent-count").textContent = shown + " of " + requests.length + " shown";
  }

  function renderReloads(rs) {
    var box = $("reloads");
    clear(box);
    if (rs.length === 0) { box.appendChild(el("p", "muted", "no reload since start")); return; }
    var ul = el("ul");
    rs.slice().reverse().forEach(function (r) {
      var li = el("li", r.ok ? "yes" : "fail", new Date(r.at).toLocaleString() + ": " + (r.ok ? "reloaded" : "failed, the previous config stays"));
      if (r.error) li.appendChild(el("div", "muted small", r.error));
      ul.appendChild(li);
    });
    box.appendChild(ul);
  }

  function loadConfig() {
    fetch("/admin/config", { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (c) {
      $("config-source").textContent = c.source ? "config: " + c.source : "";
      $("config-table").textContent = c.table || "";
    }).catch(function () {});
  }

  function onState(s) {
    lastState = s;
    $("at").textContent = "as of " + new Date(s.at).toLocaleTimeString();
    record(s.providers || []);
    renderProviders(s.providers || []);
    renderModels(s.models || []);
    renderKeys(s.keys || []);
    var rs = s.reloads || [];
    renderReloads(rs);
    if (rs.length !== reloadsSeen) { reloadsSeen = rs.length; loadConfig(); }
  }

  function onRequests(batch) {
    var seen = requests.length ? requests[requests.length - 1].seq : 0;
    batch.forEach(function (q) { if (q.seq > seen) requests.push(q); });
    if (requests.length > KEEP) requests.splice(0, requests.length - KEEP);
    renderRequests();
    if (lastState) {
      renderProviders(lastState.providers || []); // their last errors' messages
      renderModels(lastState.models || []);       // the traffic shares
    }
  }

  var source = null;
  function connect() {
    source = new EventSource("/admin/events");
    source.addEventListener("open", function () { $("conn").textContent = "live"; $("conn").className = "conn"; });
    source.addEventListener("state", function (e) { onState(JSON.parse(e.data)); });
    source.addEventListener("requests", function (e) { onRequests(JSON.parse(e.data)); });
    source.addEventListener("error", function () {
      $("conn").textContent = "disconnected"; $("conn").className = "conn off";
      if (source.readyState === EventSource.CLOSED) { // refused (503, 401): try again later
        source.close();
        setTimeout(connect, 5000);
      }
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    $("filters").addEventListener("input", renderRequests);
    $("filters").addEventListener("submit", function (e) { e.preventDefault(); });
    connect();
  });
})();
