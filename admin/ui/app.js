// sluice dashboard: polls the admin API once a second and draws the last
// minutes of the selected group on canvases. No library, no network access
// beyond this admin listener.
//
// State the browser test reads: window.sluice (updates, groups, selected
// group, per-chart point counts and notes, the CPU card and the decision it
// shows, whether the first state came with the page) and data-* attributes
// on <html> and on each chart's canvas.
"use strict";

(function () {
  const POLL_MS = 1000;
  const STATUS_EVERY = 5; // polls between /v1/status reads

  const REASON_COLORS = {
    rate: "#e8a33d", concurrency: "#d92d20", queue_timeout: "#f97316", queue_full: "#c026d3",
    cpu: "#7c3aed", memory: "#0d9488", priority: "#64748b", circuit_open: "#7f1d1d", fair_share: "#65a30d",
  };
  const C = {
    limit: "#1f6feb", inflight: "#12b76a", queued: "#f79009", p50: "#12b76a", p99: "#1f6feb",
    target: "#d92d20", admitted: "#1f6feb", rejected: "#d92d20", dropped: "#f79009", rate: "#7a5af8",
    cpu: "#7a5af8", memory: "#0e9384",
  };

  const state = {
    token: sessionStorage.getItem("sluice-token") || "",
    windowSec: 300,
    selected: localStorage.getItem("sluice-group") || "",
    groups: [],          // last /v1/groups
    status: null,        // last /v1/status
    statusAt: 0,         // when it came
    store: newStore(),   // merged /v1/history
    polls: 0,
    updates: 0,
    hover: null,         // {t} while the pointer is over a chart
  };
  const exposed = { updates: 0, groups: [], selected: "", firstTime: 0, lastTime: 0, charts: {}, errors: 0, first: "poll" };
  window.sluice = exposed;

  // ---- fetching -------------------------------------------------------------

  class HTTPError extends Error {
    constructor(status, msg) { super(msg); this.status = status; }
  }

  async function api(path) {
    const headers = { Accept: "application/json" };
    if (state.token) headers.Authorization = "Bearer " + state.token;
    const r = await fetch(path, { headers, cache: "no-store" });
    if (!r.ok) {
      let msg = r.status + " " + r.statusText;
      try { msg = (await r.json()).error || msg; } catch (_) { /* not JSON */ }
      throw new HTTPError(r.status, msg);
    }
    return r.json();
  }

  async function poll() {
    try {
      const since = state.store.times.length ? state.store.times[state.store.times.length - 1] : 0;
      const wantStatus = state.polls % STATUS_EVERY === 0;
      const [groups, hist, status] = await Promise.all([
        api("/v1/groups"),
        api("/v1/history?since=" + since),
        wantStatus ? api("/v1/status") : Promise.resolve(null),
      ]);
      update(groups, hist, status);
    } catch (e) {
      exposed.errors++;
      if (e.status === 401) show("token");
      setLive(false, e.message || String(e));
    } finally {
      setTimeout(poll, POLL_MS);
    }
  }

  // update takes one poll's answers (status may be null) and renders them.
  function update(groups, hist, status) {
    state.polls++;
    state.groups = groups.groups || [];
    if (status) { state.status = status; state.statusAt = Date.now(); }
    merge(state.store, hist);
    hide("token");
    render();
    state.updates++;
    exposed.updates = state.updates;
    document.documentElement.dataset.updates = String(state.updates);
    setLive(true, "live · " + clock(Date.now()));
  }

  // firstState renders the state the page came with (the server puts the
  // answers of /v1/groups, /v1/status and /v1/history into it when the
  // request may read them), so the page shows the groups as it loads, not
  // "connecting" until its first poll. It reports whether there was one.
  function firstState() {
    const block = el("first-state");
    if (!block) return false;
    try {
      const f = JSON.parse(block.textContent);
      update(f.groups, f.history, f.status);
      exposed.first = "page";
      return true;
    } catch (e) {
      return false; // the first poll brings it
    }
  }

  // ---- the history store ----------------------------------------------------

  function newStore() {
    return { capacity: 600, interval: 1, times: [], cpu: [], memory: [], groups: new Map() };
  }

  function nulls(n) { return new Array(n).fill(null); }

  // merge appends the points of a /v1/history answer (those after the last
  // one held) and keeps at most capacity points.
  function merge(st, h) {
    st.capacity = h.capacity || st.capacity;
    st.interval = h.interval_seconds || st.interval;
    const n0 = st.times.length, k = h.time.length;
    if (k === 0) return;
    st.times.push(...h.time);
    st.cpu.push(...h.cpu);
    st.memory.push(...h.memory);
    const seen = new Set();
    for (const g of h.groups) {
      seen.add(g.name);
      let sg = st.groups.get(g.name);
      if (!sg) { sg = { series: {}, reasons: {} }; st.groups.set(g.name, sg); }
      sg.law = g.law; sg.quantile = g.quantile;
      for (const [col, vals] of Object.entries(g.series)) {
        (sg.series[col] ||= nulls(n0)).push(...vals);
      }
      for (const [r, vals] of Object.entries(g.rejected_by_reason || {})) {
        (sg.reasons[r] ||= nulls(n0)).push(...vals);
      }
      for (const [r, arr] of Object.entries(sg.reasons)) {
        if (!(r in (g.rejected_by_reason || {}))) arr.push(...new Array(k).fill(0));
      }
      for (const arr of Object.values(sg.series)) if (arr.length < n0 + k) arr.push(...nulls(n0 + k - arr.length));
    }
    for (const [name, sg] of st.groups) {
      if (seen.has(name)) continue;
      for (const arr of [...Object.values(sg.series), ...Object.values(sg.reasons)]) arr.push(...nulls(k));
    }
    const extra = st.times.length - st.capacity;
    if (extra > 0) {
      for (const arr of [st.times, st.cpu, st.memory]) arr.splice(0, extra);
      for (const sg of st.groups.values()) {
        for (const arr of [...Object.values(sg.series), ...Object.values(sg.reasons)]) arr.splice(0, extra);
      }
    }
    for (const [name, sg] of st.groups) {
      const all = Object.values(sg.series).flat();
      if (!seen.has(name) && all.every((v) => v === null)) st.groups.delete(name);
    }
  }

  // ---- rendering ------------------------------------------------------------

  function render() {
    const names = state.groups.map((g) => g.name);
    if (!names.includes(state.selected)) state.selected = names[0] || "";
    exposed.groups = names;
    exposed.selected = state.selected;
    exposed.lastTime = state.store.times[state.store.times.length - 1] || 0;
    exposed.firstTime = state.store.times[0] || 0;
    renderHeader();
    renderTabs();
    const g = state.groups.find((x) => x.name === state.selected);
    renderWhy(g);
    renderWho(g);
    renderOverride(g);
    renderTiles(g);
    drawCharts();
  }

  function renderHeader() {
    const s = state.status;
    if (!s) return;
    text("version", s.version);
    text("uptime", "up " + dur(s.uptime_seconds + (Date.now() - state.statusAt) / 1000));
    const src = s.config.source || "embedded default";
    text("config", src + " · " + (s.config.hash || "").slice(0, 8));
    const ready = el("ready");
    ready.textContent = s.ready ? "ready" : "not ready: " + s.not_ready;
    ready.className = "chip " + (s.ready ? "ok" : "bad");
    ready.title = s.ready ? "ready" : s.not_ready;
    const r = s.resources;
    const notes = [];
    notes.push("cpu: " + (r.cpu_source || r.cpu.reason));
    notes.push("memory: " + (r.memory_source || r.memory.reason));
    notes.push("cpu pressure: " + (r.cpu_pressure_source || r.cpu_pressure.reason));
    if (s.state.save_error) notes.push("state file: " + s.state.save_error);
    text("resources-note", notes.join(" · "));
  }

  function renderTabs() {
    const nav = el("groups");
    const key = state.groups.map((g) => g.name + (g.override ? "*" : "") + g.law + g.mode).join("|");
    if (nav.dataset.key !== key) {
      nav.dataset.key = key;
      nav.textContent = "";
      for (const g of state.groups) {
        const b = document.createElement("button");
        b.type = "button";
        b.dataset.group = g.name;
        b.append(g.name);
        const law = document.createElement("span");
        law.className = "law";
        law.textContent = g.law;
        b.append(law);
        if (g.mode === "shadow") {
          const sh = document.createElement("span");
          sh.className = "law";
          sh.title = "shadow mode: admits every request, counts what it would refuse";
          sh.textContent = "shadow";
          b.append(sh);
        }
        if (g.override) {
          const badge = document.createElement("span");
          badge.className = "badge";
          badge.title = "runtime override in force";
          b.append(badge);
        }
        b.addEventListener("click", () => {
          state.selected = g.name;
          localStorage.setItem("sluice-group", g.name);
          render();
        });
        nav.append(b);
      }
    }
    for (const b of nav.children) b.classList.toggle("on", b.dataset.group === state.selected);
  }

  function renderWhy(g) {
    const w = el("why-text");
    w.textContent = "";
    if (!g) { w.textContent = "no group"; return; }
    const parts = [];
    if (g.last_change) {
      const c = g.last_change;
      const moves = [];
      if (c.from !== c.to) moves.push("limit " + c.from + " → " + c.to);
      if (c.rate && c.rate_from !== c.rate) moves.push("rate " + num(c.rate_from) + " → " + num(c.rate) + "/s");
      if (moves.length === 0) moves.push("limit " + c.to);
      parts.push(span(moves.join(", ") + ": " + (c.reason || "no reason given")));
      parts.push(span(" " + ago(c.at), "when"));
    } else {
      parts.push(span("the law has not changed the limit yet"));
    }
    if (g.decision && g.decision.reason && !g.decision.changed) {
      parts.push(span(" · now holding: " + g.decision.reason, "when"));
    }
    if (g.floor) parts.push(span(" · shedding below " + g.floor.priority + " (" + g.floor.reason + ")"));
    if (g.shadow && g.shadow.line) parts.push(span(" · " + g.shadow.line, "shadow"));
    w.append(...parts);
    w.dataset.reason = g.last_change ? g.last_change.reason : "";
  }

  // renderWho names the keys the group rejects most (over about the last two
  // minutes), the answer to "who is being limited" that metrics cannot give;
  // and, apart, those its shadow mode would have refused most.
  function renderWho(g) {
    renderKeys("who", (g && g.rejected_keys) || []);
    renderKeys("who-shadow", (g && g.shadow && g.shadow.would_reject_keys) || []);
  }

  function renderKeys(id, keys) {
    if (keys.length === 0) { hide(id); return; }
    const w = el(id + "-text");
    w.textContent = "";
    w.append(...keys.map((k, i) => span((i ? " · " : "") + k.key + " " + num(k.count) + " (" + k.reason + ")")));
    show(id);
  }

  function renderOverride(g) {
    const o = el("override");
    if (!g || !g.override) { hide("override"); return; }
    o.textContent = "";
    const l = span("override", "label");
    const changes = g.override.changes.map((c) => c.field + " " + c.from + " → " + c.to).join(", ");
    o.append(l, span(changes + (g.override.keep_on_reload ? " (kept on reload)" : " (cleared by the next reload)")),
      span(ago(g.override.at), "when"));
    show("override");
  }

  function renderTiles(g) {
    if (!g) return;
    const sg = state.store.groups.get(g.name);
    text("t-limit", g.limit);
    text("t-limit-s", g.law + " · " + g.min + "–" + g.max);
    text("t-inflight", g.in_flight);
    const streams = g.streams ? " · " + g.streams.open + " stream" + (g.streams.open === 1 ? "" : "s") : "";
    text("t-inflight-s", pct(g.limit ? g.in_flight / g.limit : 0) + " of limit" + streams);
    text("t-queue", g.queue.length + " / " + g.queue.max);
    text("t-queue-s", g.queue.order + " · wait ≤ " + durS(g.queue.wait_bound_seconds));
    const q = qname(g.targets.quantile);
    const lat = g.latency[qkey(g.targets.quantile)];
    text("t-lat-k", q);
    const lv = el("t-lat");
    lv.textContent = lat == null ? "–" : durS(lat);
    lv.className = "v" + (lat != null && g.targets.latency_seconds && lat > g.targets.latency_seconds ? " bad" : "");
    text("t-lat-s", g.targets.latency_seconds ? "target " + durS(g.targets.latency_seconds) : "no latency target");
    const admitted = last(sg && sg.series.admitted);
    const rejected = last(sg && sg.series.rejected);
    text("t-thru", admitted == null ? num(g.throughput) + "/s" : num(admitted) + "/s");
    text("t-thru-s", g.rate ? "rate ≤ " + num(g.rate.per_second) + "/s" + (g.rate.managed ? " (law)" : "") : "no rate limit");
    const rv = el("t-rej");
    rv.textContent = rejected == null ? "–" : num(rejected) + "/s";
    const share = admitted != null && rejected != null && admitted + rejected > 0 ? rejected / (admitted + rejected) : 0;
    rv.className = "v" + (share > 0.1 ? " bad" : share > 0 ? " warn" : "");
    text("t-rej-s", pct(share) + " · " + num(g.requests.rejected) + " total");
    const r = state.status && state.status.resources;
    const d = g.decision || {};
    // CPU utilisation where it has a source; else CPU pressure, which has a
    // meaning without a CPU limit.
    if (!r || r.cpu_from || !r.cpu_pressure_from) {
      resourceTile("t-cpu", "cpu", d.cpu, r && r.cpu, r && r.cpu_from, r && r.cpu_source, g.targets.cpu);
    } else {
      resourceTile("t-cpu", "cpu pressure", d.cpu_pressure, r.cpu_pressure, r.cpu_pressure_from, r.cpu_pressure_source, g.targets.cpu_pressure);
    }
    resourceTile("t-mem", "memory", d.memory, r && r.memory, r && r.memory_from, r && r.memory_source, g.targets.memory);
    exposed.cards = { cpu: el("t-cpu").textContent, decision: d };
  }

  // resourceTile shows a guarded signal as the law saw it at its last tick
  // (value, the figure its reason quotes; from /v1/groups with that reason),
  // else the last resource sample's (sig, from /v1/status), with its source;
  // or why it is unknown.
  function resourceTile(id, name, value, sig, from, source, target) {
    text(id + "-k", name);
    const v = el(id), sub = el(id + "-s");
    if (value != null) sig = { known: true, value };
    if (!sig || !sig.known) {
      v.textContent = "unknown";
      v.className = "v";
      // A signal without a source says why in the note below the page (its
      // reason is a paragraph); the card says so in a word or two.
      const why = sig ? sig.reason : "";
      text(id + "-s", why.startsWith("none: ") || why.startsWith("none ") ? "no source: see the note below" : why);
      sub.title = why;
      return;
    }
    v.textContent = pct(sig.value);
    v.className = "v" + (target && sig.value > target ? " bad" : "");
    v.title = value != null ? "as the law saw it at its last tick, the figure its reason quotes" : "the last resource sample";
    text(id + "-s", (target ? "target " + pct(target) : "no target") + (from ? " · " + from : ""));
    sub.title = source || "";
  }

  // ---- charts ---------------------------------------------------------------

  function drawCharts() {
    const st = state.store;
    const sg = st.groups.get(state.selected);
    const t1 = st.times.length ? st.times[st.times.length - 1] : Date.now();
    const t0 = t1 - state.windowSec * 1000;
    let i0 = st.times.findIndex((t) => t >= t0);
    if (i0 < 0) i0 = st.times.length;
    const times = st.times.slice(i0);
    const col = (name) => (sg && sg.series[name] ? sg.series[name].slice(i0) : []);
    const g = state.groups.find((x) => x.name === state.selected);
    const q = g ? qname(g.targets.quantile) : "p99";

    chart("c-concurrency", times, t0, t1, [
      { label: "in flight", color: C.inflight, values: col("in_flight"), fill: true },
      { label: "limit", color: C.limit, values: col("limit"), width: 2 },
      { label: "queued", color: C.queued, values: col("queued") },
    ], { fmt: num, step: true, int: true });

    chart("c-latency", times, t0, t1, [
      { label: "p50", color: C.p50, values: col("p50") },
      { label: "p99", color: C.p99, values: col("p99"), width: 2 },
      { label: q + " target", color: C.target, values: col("latency_target"), dash: true },
    ], { fmt: durS });

    const thr = [
      { label: "admitted", color: C.admitted, values: col("admitted"), fill: true, width: 2 },
      { label: "rejected", color: C.rejected, values: col("rejected") },
      { label: "dropped", color: C.dropped, values: col("dropped") },
    ];
    if (g && g.rate) thr.push({ label: "rate limit", color: C.rate, values: col("token_rate"), dash: true });
    chart("c-throughput", times, t0, t1, thr, { fmt: (v) => num(v) + "/s" });

    const reasons = sg ? Object.keys(sg.reasons).sort() : [];
    const rs = reasons.map((r) => ({ label: r, color: REASON_COLORS[r] || "#888", values: sg.reasons[r].slice(i0), fill: true }));
    chart("c-rejections", times, t0, t1, rs, { fmt: (v) => num(v) + "/s", stack: true, empty: "no rejections" });

    chart("c-cpu", times, t0, t1, [
      { label: "cpu", color: C.cpu, values: st.cpu.slice(i0), fill: true, width: 2 },
      { label: "target", color: C.target, values: col("cpu_target"), dash: true },
    ], { fmt: pct, axis: pctAxis, max: 1, empty: unknownNote("cpu") });

    chart("c-memory", times, t0, t1, [
      { label: "memory", color: C.memory, values: st.memory.slice(i0), fill: true, width: 2 },
      { label: "target", color: C.target, values: col("memory_target"), dash: true },
    ], { fmt: pct, axis: pctAxis, max: 1, empty: unknownNote("memory") });
  }

  function unknownNote(which) {
    const s = state.status;
    const sig = s && s.resources[which];
    return sig && !sig.known ? which + " unknown: " + sig.reason : "no data yet";
  }

  const palette = () => {
    const cs = getComputedStyle(document.documentElement);
    return { grid: cs.getPropertyValue("--grid").trim(), muted: cs.getPropertyValue("--muted").trim(),
      text: cs.getPropertyValue("--text").trim(), panel: cs.getPropertyValue("--panel").trim() };
  };

  // chart draws series over [t0, t1] on the figure's canvas and fills its
  // legend with the latest (or hovered) values.
  function chart(id, times, t0, t1, series, opt) {
    const fig = el(id);
    const cv = fig.querySelector("canvas");
    const dpr = window.devicePixelRatio || 1;
    const W = cv.clientWidth, H = cv.clientHeight;
    if (cv.width !== Math.round(W * dpr) || cv.height !== Math.round(H * dpr)) {
      cv.width = Math.round(W * dpr);
      cv.height = Math.round(H * dpr);
    }
    const ctx = cv.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    const pal = palette();
    const pad = { l: 56, r: 10, t: 8, b: 22 };
    const pw = W - pad.l - pad.r, ph = H - pad.t - pad.b;

    // Stacking: each series sits on the sum of those before it.
    let drawn = series;
    if (opt.stack) {
      const base = new Array(times.length).fill(0);
      drawn = series.map((s) => {
        const lo = base.slice();
        const hi = s.values.map((v, i) => (base[i] += v == null ? 0 : v));
        return { ...s, values: hi, lows: lo };
      });
    }
    let ymax = 0;
    for (const s of drawn) for (const v of s.values) if (v != null && v > ymax) ymax = v;
    if (opt.max) ymax = Math.max(ymax, opt.max * 0.5);
    const ticks = niceTicks(ymax || 1, 4, opt.int);
    const ytop = ticks[ticks.length - 1];
    const x = (t) => pad.l + ((t - t0) / (t1 - t0 || 1)) * pw;
    const y = (v) => pad.t + ph - (v / ytop) * ph;

    // Grid and axes.
    ctx.font = "11px " + getComputedStyle(document.body).fontFamily;
    ctx.lineWidth = 1;
    ctx.textBaseline = "middle";
    ctx.textAlign = "right";
    for (const tv of ticks) {
      const yy = Math.round(y(tv)) + 0.5;
      ctx.strokeStyle = pal.grid;
      ctx.beginPath(); ctx.moveTo(pad.l, yy); ctx.lineTo(pad.l + pw, yy); ctx.stroke();
      ctx.fillStyle = pal.muted;
      ctx.fillText((opt.axis || opt.fmt)(tv), pad.l - 6, yy);
    }
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    const span = (t1 - t0) / 1000;
    const stepS = span <= 60 ? 15 : span <= 300 ? 60 : 120;
    for (let s = 0; s <= span; s += stepS) {
      const t = t1 - s * 1000;
      const xx = Math.round(x(t)) + 0.5;
      ctx.strokeStyle = pal.grid;
      ctx.beginPath(); ctx.moveTo(xx, pad.t); ctx.lineTo(xx, pad.t + ph); ctx.stroke();
      ctx.fillStyle = pal.muted;
      ctx.textAlign = s === 0 ? "right" : s + stepS > span ? "left" : "center";
      ctx.fillText(s === 0 ? "now" : "−" + (s >= 60 ? s / 60 + "m" : s + "s"), s === 0 ? xx + 1 : xx, pad.t + ph + 5);
    }

    let points = 0;
    // Areas under lines; a stack from the top down, so each band is seen.
    const order = opt.stack ? drawn.slice().reverse() : [...drawn.filter((s) => s.fill), ...drawn.filter((s) => !s.fill)];
    for (const s of order) points += drawSeries(ctx, s, times, x, y, opt, pad.t + ph);

    const empty = points === 0;
    let note = null;
    if (empty) {
      ctx.fillStyle = pal.muted;
      ctx.textAlign = "center";
      ctx.textBaseline = "middle";
      // Wrapped to the plot's width, centred: a long reason ("cpu unknown:
      // none: sluice's cgroup is ...") is read whole, not cut at both ends.
      const room = pw - 16, lh = 16;
      const lines = wrapText(ctx, opt.empty || "no data yet", room);
      lines.forEach((l, k) => ctx.fillText(l, pad.l + pw / 2, pad.t + ph / 2 + (k - (lines.length - 1) / 2) * lh));
      note = { lines, room, widest: Math.max(...lines.map((l) => ctx.measureText(l).width)), height: lines.length * lh, plot: ph };
    }

    // Hover: a vertical rule at the hovered instant.
    let at = times.length - 1;
    if (state.hover && state.hover.id === id && times.length) {
      const t = t0 + ((state.hover.x - pad.l) / pw) * (t1 - t0);
      at = nearest(times, t);
      const xx = Math.round(x(times[at])) + 0.5;
      ctx.strokeStyle = pal.muted;
      ctx.setLineDash([3, 3]);
      ctx.beginPath(); ctx.moveTo(xx, pad.t); ctx.lineTo(xx, pad.t + ph); ctx.stroke();
      ctx.setLineDash([]);
    }
    legend(fig, series, at, opt, state.hover && state.hover.id === id ? times[at] : null);

    cv.dataset.points = String(points);
    cv.dataset.series = String(series.length);
    const first = series[0] && series[0].values;
    cv.dataset.last = first && first.length && first[first.length - 1] != null ? String(first[first.length - 1]) : "";
    exposed.charts[id] = { points, series: series.map((s) => s.label), empty, note };
  }

  // wrapText breaks s into lines no wider than width on ctx, at spaces (a
  // word wider than width is cut into pieces that fit).
  function wrapText(ctx, s, width) {
    const lines = [];
    let line = "";
    for (let word of s.split(" ")) {
      while (ctx.measureText(word).width > width && word.length > 1) {
        let n = word.length - 1;
        while (n > 1 && ctx.measureText(word.slice(0, n)).width > width) n--;
        if (line) { lines.push(line); line = ""; }
        lines.push(word.slice(0, n));
        word = word.slice(n);
      }
      const next = line ? line + " " + word : word;
      if (line && ctx.measureText(next).width > width) { lines.push(line); line = word; } else line = next;
    }
    if (line) lines.push(line);
    return lines;
  }

  // drawSeries draws one series and returns how many points it drew.
  function drawSeries(ctx, s, times, x, y, opt, y0) {
    let n = 0, open = false;
    const pts = [];
    const flush = () => {
      if (pts.length === 0) return;
      if (s.fill) {
        ctx.beginPath();
        ctx.moveTo(pts[0][0], s.lows ? y(s.lows[pts[0][2]]) : y0);
        for (const [px, py] of pts) ctx.lineTo(px, py);
        if (s.lows) for (let k = pts.length - 1; k >= 0; k--) ctx.lineTo(pts[k][0], y(s.lows[pts[k][2]]));
        else ctx.lineTo(pts[pts.length - 1][0], y0);
        ctx.closePath();
        ctx.fillStyle = alpha(s.color, opt.stack ? 0.55 : 0.14);
        ctx.fill();
      }
      ctx.beginPath();
      pts.forEach(([px, py], k) => (k === 0 ? ctx.moveTo(px, py) : ctx.lineTo(px, py)));
      if (pts.length === 1) ctx.lineTo(pts[0][0] + 1.5, pts[0][1]);
      ctx.strokeStyle = s.color;
      ctx.lineWidth = s.width || 1.5;
      ctx.setLineDash(s.dash ? [6, 4] : []);
      ctx.lineJoin = "round";
      ctx.stroke();
      ctx.setLineDash([]);
      pts.length = 0;
    };
    for (let i = 0; i < times.length; i++) {
      const v = s.values[i];
      if (v == null || Number.isNaN(v)) { flush(); open = false; continue; }
      const px = x(times[i]), py = y(v);
      if (opt.step && open) pts.push([px, pts[pts.length - 1][1], i]);
      pts.push([px, py, i]);
      open = true;
      n++;
    }
    flush();
    return n;
  }

  function legend(fig, series, at, opt, hoverT) {
    const lg = fig.querySelector(".legend");
    lg.textContent = "";
    if (hoverT) lg.append(span(clock(hoverT), "item"));
    for (const s of series) {
      const item = document.createElement("span");
      item.className = "item";
      const sw = document.createElement("span");
      sw.className = "sw" + (s.dash ? " dash" : "");
      sw.style.background = s.color;
      sw.style.color = s.color;
      const v = s.values[at];
      item.append(sw, s.label + " ", span(v == null ? "–" : opt.fmt(v), "val"));
      lg.append(item);
    }
  }

  function nearest(times, t) {
    let best = 0;
    for (let i = 1; i < times.length; i++) if (Math.abs(times[i] - t) < Math.abs(times[best] - t)) best = i;
    return best;
  }

  // niceTicks returns 0 and round steps up to at least max, about n of
  // them; with integer, the steps are whole numbers.
  function niceTicks(max, n, integer) {
    const raw = max / n;
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const mults = integer ? [1, 2, 5, 10] : [1, 2, 2.5, 5, 10];
    let step = mults.map((m) => m * mag).find((s) => s >= raw) || 10 * mag;
    if (integer) step = Math.max(1, Math.round(step));
    const out = [];
    for (let v = 0; v <= max + step * 0.999; v += step) out.push(+v.toPrecision(12));
    if (out.length < 2) out.push(step);
    return out;
  }

  function alpha(hex, a) {
    const n = parseInt(hex.slice(1), 16);
    return "rgba(" + ((n >> 16) & 255) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + a + ")";
  }

  // ---- formatting -----------------------------------------------------------

  function num(v) {
    if (v == null || Number.isNaN(v)) return "–";
    const a = Math.abs(v);
    if (a >= 1e9) return (v / 1e9).toFixed(a >= 1e10 ? 0 : 1) + "G";
    if (a >= 1e6) return (v / 1e6).toFixed(a >= 1e7 ? 0 : 1) + "M";
    if (a >= 1e4) return (v / 1e3).toFixed(0) + "k";
    if (a >= 1e3) return (v / 1e3).toFixed(1) + "k";
    if (a >= 100 || Number.isInteger(v)) return v.toFixed(0);
    if (a >= 10) return String(+v.toFixed(1));
    return String(+v.toFixed(2));
  }
  function durS(s) {
    if (s == null || Number.isNaN(s)) return "–";
    if (s === 0) return "0";
    if (s < 1e-3) return (s * 1e6).toFixed(0) + "µs";
    if (s < 1) return +(s * 1e3).toPrecision(3) + "ms";
    return +s.toPrecision(3) + "s";
  }
  function pct(v) { return v == null ? "–" : (v * 100).toFixed(v < 0.1 ? 1 : 0) + "%"; }
  function pctAxis(v) { return (v * 100).toFixed(0) + "%"; }
  function dur(sec) {
    sec = Math.floor(sec);
    const d = Math.floor(sec / 86400), h = Math.floor(sec / 3600) % 24, m = Math.floor(sec / 60) % 60, s = sec % 60;
    if (d) return d + "d" + h + "h";
    if (h) return h + "h" + m + "m";
    if (m) return m + "m" + s + "s";
    return s + "s";
  }
  function ago(iso) {
    const sec = (Date.now() - Date.parse(iso)) / 1000;
    return sec < 1 ? "just now" : dur(sec) + " ago";
  }
  function clock(ms) { return new Date(ms).toLocaleTimeString([], { hour12: false }); }
  function qname(q) { return q ? "p" + +(q * 100).toPrecision(4) : "p99"; }
  // qkey is the latency field nearest at or above the quantile q, the one the
  // law steers by.
  function qkey(q) { return q <= 0.5 ? "p50" : q <= 0.9 ? "p90" : q <= 0.95 ? "p95" : q <= 0.99 ? "p99" : "p999"; }
  function last(a) { if (!a) return null; for (let i = a.length - 1; i >= 0; i--) if (a[i] != null) return a[i]; return null; }

  // ---- DOM helpers ----------------------------------------------------------

  function el(id) { return document.getElementById(id); }
  function text(id, s) { el(id).textContent = s; }
  function span(s, cls) { const e = document.createElement("span"); if (cls) e.className = cls; e.textContent = s; return e; }
  function show(id) { el(id).classList.remove("hidden"); }
  function hide(id) { el(id).classList.add("hidden"); }
  function setLive(ok, msg) {
    const l = el("live");
    l.className = "chip live " + (ok ? "on" : "off");
    text("live-text", ok ? msg : "disconnected: " + msg);
    l.title = msg;
  }

  // ---- wiring ---------------------------------------------------------------

  function wire() {
    for (const b of document.querySelectorAll(".window button")) {
      b.addEventListener("click", () => {
        state.windowSec = Number(b.dataset.window);
        for (const o of document.querySelectorAll(".window button")) o.classList.toggle("on", o === b);
        drawCharts();
      });
    }
    for (const fig of document.querySelectorAll(".chart")) {
      const cv = fig.querySelector("canvas");
      cv.addEventListener("mousemove", (e) => {
        const r = cv.getBoundingClientRect();
        state.hover = { id: fig.id, x: e.clientX - r.left };
        drawCharts();
      });
      cv.addEventListener("mouseleave", () => { state.hover = null; drawCharts(); });
    }
    el("token-form").addEventListener("submit", (e) => {
      e.preventDefault();
      state.token = el("token-input").value.trim();
      sessionStorage.setItem("sluice-token", state.token);
    });
    window.addEventListener("resize", () => drawCharts());
    if (firstState()) setTimeout(poll, POLL_MS);
    else poll();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", wire);
  else wire();
})();
