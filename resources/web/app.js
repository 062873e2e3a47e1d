// cmstore serve: the dashboard's pages, drawn from /api/… as plain DOM and inline SVG.
// No dependencies; every text from the store goes in through textContent, never as HTML.
"use strict";

const errors = [];
function report(message) {
  errors.push(String(message));
  const box = document.getElementById("errors");
  if (box) {
    box.textContent = errors.join("\n");
    box.hidden = false;
  }
}
window.addEventListener("error", (e) => report(e.message || e));
window.addEventListener("unhandledrejection", (e) => report(e.reason && e.reason.message ? e.reason.message : e.reason));

// ---- helpers -------------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    node.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

async function api(path) {
  const response = await fetch(path, { credentials: "same-origin", cache: "no-store" });
  const body = await response.json().catch(() => ({ error: response.statusText }));
  if (!response.ok) throw new Error(body.error || ("HTTP " + response.status));
  return body;
}

function num(n) {
  if (n === null || n === undefined) return "–";
  const v = Number(n);
  if (Math.abs(v) >= 1e9) return (v / 1e9).toFixed(1) + "G";
  if (Math.abs(v) >= 1e6) return (v / 1e6).toFixed(1) + "M";
  if (Math.abs(v) >= 1e4) return (v / 1e3).toFixed(1) + "k";
  return v.toLocaleString("en-US");
}
function usd(n) { return n === null || n === undefined ? "–" : "$" + Number(n).toFixed(2); }
// A cost with the summaries' marks: `+` when some responses have no price, `?` when none has.
function partialUsd(n, unpriced) {
  if (!unpriced) return usd(n);
  const text = n === null || n === undefined ? "?" : usd(n) + "+";
  return el("span", { title: unpriced + " responses have no price: give their models one under [prices] in cmstore.toml" }, text);
}
function pct(x) { return (100 * (x || 0)).toFixed(1) + "%"; }
// A duration as the CLI prints it (support::human::duration): 300ms, 2.5s, 10s, 4m 05s,
// 3h 07m, 2d 04h.
function ms(d) {
  if (d === null || d === undefined) return "–";
  const sign = d < 0 ? "-" : "";
  const abs = Math.round(Math.abs(d));
  const s = Math.floor(abs / 1000);
  const two = (n) => String(n).padStart(2, "0");
  let text;
  if (s === 0) text = abs + "ms";
  else if (s < 60) text = abs % 1000 === 0 ? s + "s" : (abs / 1000).toFixed(1) + "s";
  else if (s < 3600) text = Math.floor(s / 60) + "m " + two(s % 60) + "s";
  else if (s < 86400) text = Math.floor(s / 3600) + "h " + two(Math.floor(s % 3600 / 60)) + "m";
  else text = Math.floor(s / 86400) + "d " + two(Math.floor(s % 86400 / 3600)) + "h";
  return sign + text;
}
// Times in this browser's zone, as the CLI prints them in its own (support::zone).
const pad = (n, width) => String(n).padStart(width || 2, "0");
function localDay(t) {
  const d = new Date(t);
  return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate());
}
function when(t) {
  if (!t && t !== 0) return "–";
  const d = new Date(t);
  return localDay(t) + " " + pad(d.getHours()) + ":" + pad(d.getMinutes());
}
function clock(t) {
  const d = new Date(t);
  return pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
}
function clockMs(t) {
  const d = new Date(t);
  return pad(d.getMinutes()) + ":" + pad(d.getSeconds()) + "." + pad(d.getMilliseconds(), 3);
}
function project(cwd) {
  if (!cwd) return "";
  const parts = String(cwd).replace(/[\\/]+$/, "").split(/[\\/]/);
  return parts[parts.length - 1];
}
function params() { return new URLSearchParams(location.search); }
function rangeQuery() {
  const q = new URLSearchParams();
  const since = document.getElementById("range").value;
  if (since) q.set("since", since);
  // A team store's pages may be of one machine or user (`/?user=ana`).
  for (const k of ["machine", "user"]) if (params().get(k)) q.set(k, params().get(k));
  return q.toString();
}
// A team's machine as a person tells them apart: its host and the start of its id.
function machineName(host, id) {
  const short = String(id || "").slice(0, 8);
  return host ? `${host} (${short})` : short;
}
// Whose figures a team store's page shows, when a machine or user is chosen.
function whose() {
  const p = params();
  const parts = [];
  if (p.get("user")) parts.push("user " + p.get("user"));
  if (p.get("machine")) parts.push("machine " + p.get("machine"));
  return parts.length ? el("p", { class: "note", id: "whose" }, "Only " + parts.join(", ") + ". ", el("a", { href: location.pathname }, "Whole team")) : null;
}

function table(columns, rows, empty) {
  if (!rows.length) return el("p", { class: "empty" }, empty || "Nothing in this range.");
  return el("table", {},
    el("thead", {}, el("tr", {}, columns.map((c) => el("th", { class: c.num ? "num" : null }, c.label)))),
    el("tbody", {}, rows.map((r) => el("tr", {}, columns.map((c) => el("td", { class: c.num ? "num" : null }, c.cell(r)))))));
}

function card(label, value) {
  return el("div", { class: "card" }, el("div", { class: "value" }, value), el("div", { class: "label" }, label));
}

function panel(title, ...children) { return el("section", { class: "panel" }, el("h2", {}, title), ...children); }

const DAY_MS = 86400000;

// A calendar day (`2026-03-08`) as a number and back: stepping numbers never meets a change
// of offset, as stepping a local clock by 24 hours would.
function dayNumber(day) { return Math.round(Date.parse(day + "T00:00:00Z") / DAY_MS); }
function dayText(n) { return new Date(n * DAY_MS).toISOString().slice(0, 10); }

// Every day of the chart, the days without data at zero: from the range's first day (or the
// first with data, for all time) to today (or the last with data). An axis that skipped the
// empty days made a month with two busy days look like one step. The days are the server's
// (its zone: the footer names it); today is this browser's.
function everyDay(days, range) {
  if (!days.length) return days;
  const byDay = new Map(days.map((d) => [d.day, d]));
  const numbers = days.map((d) => dayNumber(d.day));
  let first = Math.min(...numbers), last = Math.max(...numbers);
  const m = /^(\d+)([dh])$/.exec(range || "");
  if (m) {
    const span = Number(m[1]) * (m[2] === "d" ? DAY_MS : 3600000);
    first = Math.min(first, dayNumber(localDay(Date.now() - span)));
    last = Math.max(last, dayNumber(localDay(Date.now())));
  }
  const out = [];
  for (let n = first; n <= last; n++) out.push(byDay.get(dayText(n)) || { day: dayText(n) });
  return out;
}

// A column chart of `rows[key]` by day, with its own scale; hover shows the figure.
function dayChart(days, key, format, tone) {
  const width = 600, height = 170, left = 48, bottom = 22, top = 8;
  const values = days.map((d) => Number(d[key] || 0));
  const max = Math.max(1, ...values);
  const plotW = width - left - 8, plotH = height - top - bottom;
  const step = days.length ? plotW / days.length : plotW;
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, width: "100%", role: "img", "data-chart": key });
  for (const f of [0, 0.5, 1]) {
    const y = top + plotH * (1 - f);
    root.appendChild(svg("line", { class: "axis", x1: left, x2: width - 8, y1: y, y2: y }));
    root.appendChild(svg("text", { x: left - 6, y: y + 4, "text-anchor": "end" }, format(max * f)));
  }
  days.forEach((d, i) => {
    const h = plotH * values[i] / max;
    const x = left + i * step + step * 0.12;
    root.appendChild(svg("rect", { class: "col " + (tone || ""), x, y: top + plotH - h, width: Math.max(1, step * 0.76), height: Math.max(0, h) },
      svg("title", {}, `${d.day}: ${format(values[i])}`)));
  });
  const every = Math.max(1, Math.ceil(days.length / 8));
  days.forEach((d, i) => {
    if (i % every) return;
    root.appendChild(svg("text", { x: left + i * step + step / 2, y: height - 6, "text-anchor": "middle" }, d.day.slice(5)));
  });
  if (!days.length) root.appendChild(svg("text", { x: width / 2, y: height / 2, "text-anchor": "middle" }, "no data in this range"));
  return root;
}

// Horizontal bars: one per row, labelled.
function barList(rows, label, value, format) {
  const width = 600, rowH = 20, left = 150;
  const height = Math.max(rowH, rows.length * rowH) + 4;
  const max = Math.max(1, ...rows.map(value));
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, width: "100%", role: "img" });
  rows.forEach((r, i) => {
    const y = i * rowH + 2;
    const w = (width - left - 60) * value(r) / max;
    root.appendChild(svg("text", { x: left - 8, y: y + 13, "text-anchor": "end" }, String(label(r)).slice(0, 24)));
    root.appendChild(svg("rect", { class: "col", x: left, y: y + 3, width: Math.max(1, w), height: rowH - 6 }, svg("title", {}, `${label(r)}: ${format(value(r))}`)));
    root.appendChild(svg("text", { x: left + w + 6, y: y + 13 }, format(value(r))));
  });
  return root;
}

// A failure rate: failed among the finished calls; none finished is "–", not 0 %.
function rateCell(rate) {
  if (rate === null || rate === undefined) return el("span", {}, "–");
  return el("span", {}, el("span", { class: "rate", "data-w": Math.round(100 * rate) }), pct(rate));
}

// The footer names the zones: the days' (the server's, as `cmstore summarize --by day` counts
// them there) and the times' (this browser's), and says so when the two differ.
function showZone(serverZone, store) {
  const browser = Intl.DateTimeFormat().resolvedOptions().timeZone || "";
  const note = document.getElementById("zone-note");
  if (!note || !serverZone) return;
  if (store === "team") {
    note.textContent = `Read-only view of the team store. Days in UTC, as every team report counts them; times in this browser's zone (${browser}).`;
    return;
  }
  note.textContent = serverZone === browser
    ? `Read-only view of the local store. Days and times in ${browser}.`
    : `Read-only view of the local store. Days as the server counts them (${serverZone}); times in this browser's zone (${browser}).`;
}

// ---- pages ---------------------------------------------------------------------------------

const pages = {
  overview: async (app) => {
    const o = await api("/api/overview?" + rangeQuery());
    const t = o.totals;
    const tokens = (t.input_tokens || 0) + (t.output_tokens || 0) + (t.cache_read_tokens || 0) + (t.cache_write_tokens || 0);
    const range = document.getElementById("range").value;
    showZone(o.zone, o.store);
    const days = everyDay(o.days, range).map((d) => Object.assign({}, d, {
      tokens: (d.input_tokens || 0) + (d.output_tokens || 0) + (d.cache_read_tokens || 0) + (d.cache_write_tokens || 0),
    }));
    // Nothing in the range, but older data in the store (an import of last spring's
    // history): say where it is, rather than look like a store that holds nothing.
    const older = range && !t.events && !tokens && o.newest_day
      ? el("p", { class: "note", id: "older-data" },
        `Nothing in this range; the newest data is from ${o.newest_day}. `,
        el("button", { type: "button", onclick: () => {
          document.getElementById("range").value = "";
          localStorage.setItem("cmstore-range", "");
          draw();
        } }, "Show all time"))
      : null;
    // A team store: the figures per user and per machine.
    const team = o.users ? el("div", { class: "grid", id: "team" },
      panel("Per user", table([
        { label: "user", cell: (r) => el("a", { href: "/sessions?user=" + encodeURIComponent(r.user_label || "") }, r.user_label || "(none)") },
        { label: "machines", num: true, cell: (r) => num(r.machines) },
        { label: "sessions", num: true, cell: (r) => num(r.sessions) },
        { label: "events", num: true, cell: (r) => num(r.events) },
        { label: "tokens", num: true, cell: (r) => num((r.input_tokens || 0) + (r.output_tokens || 0) + (r.cache_read_tokens || 0) + (r.cache_write_tokens || 0)) },
        { label: "cost", num: true, cell: (r) => partialUsd(r.cost_usd, r.unpriced) },
      ], o.users)),
      panel("Per machine", table([
        { label: "machine", cell: (r) => el("a", { href: "/sessions?machine=" + encodeURIComponent(r.machine_id), title: r.machine_id }, machineName(r.host, r.machine_id)) },
        { label: "user", cell: (r) => r.machine_user || "" },
        { label: "sessions", num: true, cell: (r) => num(r.sessions) },
        { label: "events", num: true, cell: (r) => num(r.events) },
        { label: "tokens", num: true, cell: (r) => num((r.input_tokens || 0) + (r.output_tokens || 0) + (r.cache_read_tokens || 0) + (r.cache_write_tokens || 0)) },
        { label: "cost", num: true, cell: (r) => partialUsd(r.cost_usd, r.unpriced) },
      ], o.machines))) : null;
    app.replaceChildren(
      el("h1", {}, "Overview"),
      ...(whose() ? [whose()] : []),
      ...(older ? [older] : []),
      el("div", { class: "cards", id: "totals" },
        card("events", num(t.events)), card("sessions", num(t.sessions)), card("prompts", num(t.prompts)),
        card("tool calls", num(t.tool_uses)), card("tool failures", num(t.tool_failures)),
        card("tokens", num(tokens)), card("cost", partialUsd(t.cost_usd, t.unpriced)),
        card("gate findings", num(o.gate.totals.flagged))),
      el("div", { class: "grid" },
        panel("Events per day", dayChart(days, "events", num)),
        panel("Sessions per day", dayChart(days, "sessions", num, "alt")),
        panel("Tokens per day", dayChart(days, "tokens", num, "violet")),
        panel("Cost per day (USD)", dayChart(days, "cost_usd", (v) => "$" + Number(v).toFixed(2), "warm"))),
      ...(team ? [team] : []),
      el("div", { class: "grid" },
        panel("Top tools", table([
          { label: "tool", cell: (r) => r.tool_name },
          { label: "calls", num: true, cell: (r) => num(r.calls) },
          { label: "failed", num: true, cell: (r) => num(r.failed) },
          { label: "failure rate", cell: (r) => rateCell(r.failure_rate) },
          { label: "avg", num: true, cell: (r) => ms(r.avg_ms) },
        ], o.tools)),
        panel("Gate findings", el("p", { class: "muted" },
          `${num(o.gate.totals.calls)} calls checked, ${num(o.gate.totals.flagged)} flagged, ${num(o.gate.totals.denied)} denied`),
          table([
            { label: "rule", cell: (r) => r.rule },
            { label: "agent", cell: (r) => r.agent },
            { label: "project", cell: (r) => r.project },
            { label: "fired", num: true, cell: (r) => num(r.fired) },
            { label: "denied", num: true, cell: (r) => num(r.denied) },
          ], o.gate.rules.slice(0, 10), "No rule fired in this range."))),
      el("div", { class: "grid" },
        panel("Busiest projects", table([
          { label: "project", cell: (r) => el("a", { href: "/sessions?project=" + encodeURIComponent(r.project) }, r.project || "(none)") },
          { label: "sessions", num: true, cell: (r) => num(r.sessions) },
          { label: "events", num: true, cell: (r) => num(r.events) },
          { label: "tool calls", num: true, cell: (r) => num(r.tool_uses) },
          { label: "last active", cell: (r) => when(r.last_seen) },
        ], o.projects))));
  },

  sessions: async (app) => {
    const p = params();
    const q = new URLSearchParams();
    for (const k of ["agent", "project", "since", "until", "all", "machine", "user"]) if (p.get(k)) q.set(k, p.get(k));
    if (!p.get("since") && rangeQuery()) q.set("since", document.getElementById("range").value);
    const data = await api("/api/sessions?" + q.toString());
    // Sessions that went nowhere (a start from a clear or a compaction: no prompt, no tool
    // call) are left out, as `cmstore sessions` leaves them out; the note says how many.
    const shown = new URLSearchParams(p);
    shown.set("all", "1");
    const hidden = data.hidden
      ? el("p", { class: "note", id: "hidden-sessions" },
        `${num(data.hidden)} session${data.hidden === 1 ? "" : "s"} that went nowhere (no prompt, no tool call) not listed. `,
        el("a", { href: "/sessions?" + shown.toString() }, "List them too"))
      : null;
    const agent = el("select", { name: "agent" }, el("option", { value: "" }, "any"),
      data.agents.map((a) => el("option", { value: a, selected: p.get("agent") === a }, a)));
    // A team store: each session's machine and user, and filters for them.
    const team = data.store === "team";
    const teamFilters = team ? [
      el("label", {}, "user", el("select", { name: "user" }, el("option", { value: "" }, "any"),
        data.users.map((u) => el("option", { value: u, selected: p.get("user") === u }, u)))),
      el("label", {}, "machine", el("select", { name: "machine" }, el("option", { value: "" }, "any"),
        data.machines.map((m) => el("option", { value: m.machine_id, selected: p.get("machine") === m.machine_id }, machineName(m.host, m.machine_id))))),
    ] : [];
    const link = (r) => "/session?id=" + encodeURIComponent(r.session_id) + (team ? "&machine=" + encodeURIComponent(r.machine_id) : "");
    const teamColumns = team ? [
      { label: "user", cell: (r) => r.user_label || "" },
      { label: "machine", cell: (r) => String(r.machine_id || "").slice(0, 8) },
    ] : [];
    const form = el("form", { class: "filters", method: "get", action: "/sessions" },
      ...teamFilters,
      el("label", {}, "agent", agent),
      el("label", {}, "project", el("input", { name: "project", value: p.get("project") || "", placeholder: "name or path" })),
      el("label", {}, "since", el("input", { name: "since", value: p.get("since") || "", placeholder: "7d, 2026-01-05" })),
      el("label", {}, "until", el("input", { name: "until", value: p.get("until") || "", placeholder: "" })),
      el("button", { type: "submit" }, "Filter"));
    app.replaceChildren(el("h1", {}, "Sessions"), form, ...(hidden ? [hidden] : []), el("section", { class: "panel" }, table([
      { label: "session", cell: (r) => el("a", { href: link(r), class: "session-link" }, r.short) },
      ...teamColumns,
      { label: "agent", cell: (r) => r.agent || "" },
      { label: "project", cell: (r) => project(r.cwd) },
      { label: "last active", cell: (r) => when(r.last_seen !== undefined ? r.last_seen : r.end) },
      { label: "lasted", num: true, cell: (r) => ms(r.duration_ms) },
      { label: "prompts", num: true, cell: (r) => num(r.prompts) },
      { label: "turns", num: true, cell: (r) => num(r.turns) },
      { label: "tools", num: true, cell: (r) => num(r.tool_uses) },
      { label: "failed", num: true, cell: (r) => num(r.tool_failures) },
      { label: "model", cell: (r) => r.model || "" },
    ], data.sessions, "No session matches.")));
  },

  session: async (app) => {
    const id = params().get("id") || "";
    const machine = params().get("machine");
    const data = await api("/api/session?id=" + encodeURIComponent(id) + (machine ? "&machine=" + encodeURIComponent(machine) : ""));
    const s = data.story.session;
    // On a team store, whose session it is; its calls are asked for on its machine.
    const where = data.story.machine_id ? [card("user", data.story.user_label || "–"), card("machine", data.story.machine_id.slice(0, 8))] : [];
    s.machine_id = data.story.machine_id;
    const detail = el("section", { class: "panel", id: "call-detail" }, el("h2", {}, "Tool call"),
      el("p", { class: "muted" }, "Click a bar in the timeline to see the call's input and output."));
    app.replaceChildren(
      el("h1", {}, "Session ", el("code", {}, s.session_id)),
      el("div", { class: "cards" },
        ...where,
        card("agent", s.agent || "?"), card("project", project(s.cwd) || "–"), card("model", s.model || "–"),
        card("lasted", ms(s.last_seen - s.first_seen)), card("prompts", num(s.prompts)),
        card("tool calls", num(s.tool_uses)), card("failures", num(s.tool_failures))),
      panel("Timeline", timeline(data, s, detail),
        el("div", { class: "legend" },
          el("span", {}, el("i", { class: "ok" }), "succeeded"), el("span", {}, el("i", { class: "bad" }), "failed"),
          el("span", {}, el("i", { class: "deny" }), "denied / refused"), el("span", {}, el("i", { class: "other" }), "abandoned / running"),
          el("span", {}, el("i", { class: "pr" }), "prompt"), el("span", {}, el("i", { class: "an" }), "answer"),
          el("span", {}, el("i", { class: "cmp" }), "compaction"))),
      detail,
      panel("Story", story(data.story.items)));
    restoreSelection(detail, id);
  },

  tools: async (app) => {
    const tools = await api("/api/tools?" + rangeQuery());
    app.replaceChildren(el("h1", {}, "Tools"), ...(whose() ? [whose()] : []),
      el("div", { class: "grid" },
        panel("Calls per tool", barList(tools.slice(0, 15), (r) => r.tool_name, (r) => r.calls || 0, num)),
        panel("Failure rate per tool", barList(tools.filter((r) => r.calls).slice(0, 15), (r) => r.tool_name, (r) => r.failure_rate, pct))),
      panel("Every tool", table([
        { label: "tool", cell: (r) => r.tool_name },
        { label: "calls", num: true, cell: (r) => num(r.calls) },
        { label: "succeeded", num: true, cell: (r) => num(r.succeeded) },
        { label: "failed", num: true, cell: (r) => num(r.failed) },
        { label: "failure rate", cell: (r) => rateCell(r.failure_rate) },
        { label: "denied", num: true, cell: (r) => num(r.denied) },
        { label: "refused", num: true, cell: (r) => num(r.refused) },
        { label: "unfinished", num: true, cell: (r) => num(r.unfinished) },
        { label: "avg", num: true, cell: (r) => ms(r.avg_ms) },
        { label: "max", num: true, cell: (r) => ms(r.max_ms) },
        { label: "total", num: true, cell: (r) => ms(r.total_ms) },
      ], tools)));
  },

  gate: async (app) => {
    const g = await api("/api/gate?" + rangeQuery());
    const byRule = {};
    for (const r of g.rules) {
      byRule[r.rule] = byRule[r.rule] || { rule: r.rule, fired: 0, denied: 0 };
      byRule[r.rule].fired += r.fired;
      byRule[r.rule].denied += r.denied;
    }
    const rules = Object.values(byRule).sort((a, b) => b.fired - a.fired);
    app.replaceChildren(el("h1", {}, "Gate"), ...(whose() ? [whose()] : []),
      el("div", { class: "cards" }, card("calls checked", num(g.totals.calls)), card("flagged", num(g.totals.flagged)),
        card("denied", num(g.totals.denied)), card("unreadable", num(g.totals.unreadable))),
      el("div", { class: "grid" }, panel("Findings per rule", rules.length ? barList(rules, (r) => r.rule, (r) => r.fired, num) : el("p", { class: "empty" }, "No rule fired in this range."))),
      panel("Per rule, agent and project", table([
        { label: "rule", cell: (r) => r.rule },
        { label: "agent", cell: (r) => r.agent },
        { label: "project", cell: (r) => r.project },
        { label: "fired", num: true, cell: (r) => num(r.fired) },
        { label: "denied", num: true, cell: (r) => el("span", { class: r.denied ? "pill deny" : "pill" }, num(r.denied)) },
        { label: "allowed", num: true, cell: (r) => num(r.allowed) },
        { label: "first", cell: (r) => when(r.first_ts) },
        { label: "last", cell: (r) => when(r.last_ts) },
      ], g.rules, "No rule fired in this range.")));
  },

  sql: async (app) => {
    const p = params();
    const text = el("textarea", { id: "sql", name: "q", spellcheck: "false" });
    text.value = p.get("q") || "SELECT hook_type, count(*) AS events\nFROM events\nGROUP BY hook_type\nORDER BY events DESC";
    const rows = el("input", { name: "max_rows", type: "number", min: "1", value: p.get("max_rows") || "1000" });
    const out = el("div", { id: "sql-result" });
    const run = async () => {
      const q = new URLSearchParams({ q: text.value, max_rows: rows.value });
      history.replaceState(null, "", "/sql?" + q.toString());
      out.replaceChildren(el("p", { class: "muted" }, "Running…"));
      try {
        const r = await api("/api/sql?" + q.toString());
        out.replaceChildren(
          el("p", { class: "muted" }, `${r.rows.length} row${r.rows.length === 1 ? "" : "s"} in ${r.elapsed_ms} ms` + (r.cut ? ` (cut at ${rows.value}: raise the row cap to see more)` : "")),
          el("p", { class: "downloads" },
            el("a", { href: "/api/sql?" + q.toString() + "&format=csv", download: "cmstore-query.csv" }, "Download CSV"),
            el("a", { href: "/api/sql?" + q.toString() + "&format=json", download: "cmstore-query.json" }, "Download JSON")),
          table(r.columns.map((c, i) => ({ label: c, cell: (row) => row[i] === null ? "∅" : (typeof row[i] === "object" ? JSON.stringify(row[i]) : String(row[i])) })), r.rows, "No rows."));
      } catch (e) {
        out.replaceChildren(el("p", { class: "error", id: "sql-error" }, e.message));
      }
    };
    const form = el("form", { onsubmit: (e) => { e.preventDefault(); run(); } },
      text, el("div", { class: "filters" }, el("label", {}, "row cap", rows), el("button", { type: "submit" }, "Run")));
    const info = await api("/api/version");
    const views = info.store === "team"
      ? ["cmstore query --store", "v_sessions, v_tools, v_daily_usage, v_daily_events, v_usage_users, v_usage, …"]
      : ["cmstore query", "v_session_summary, v_tools, v_daily_usage, v_usage, …"];
    app.replaceChildren(el("h1", {}, "SQL"),
      el("p", { class: "muted" }, "One read-only statement, with the same guard, time limit and row cap as ",
        el("code", {}, views[0]), ". Views: " + views[1]),
      el("section", { class: "panel" }, form, out));
    if (p.get("q")) await run();
  },
};

// ---- the session timeline ------------------------------------------------------------------

function timeline(data, s, detail) {
  const items = data.story.items;
  const calls = data.calls.filter((c) => c.start !== null || c.end !== null);
  const times = [s.first_seen, s.last_seen];
  for (const c of calls) {
    if (c.start !== null) times.push(c.start);
    if (c.end !== null) times.push(c.end);
  }
  for (const i of items) times.push(i.ts);
  const t0 = Math.min(...times), t1 = Math.max(t0 + 1000, ...times);
  const lanes = ["main"];
  for (const c of calls) if (!lanes.includes(c.lane)) lanes.push(c.lane);
  const left = 110, width = 1180, rowH = 16, turnsH = 34, axisH = 24;
  const plotW = width - left - 10;
  const x = (t) => left + plotW * (t - t0) / (t1 - t0);
  // Calls that overlap in time take rows of their own within their lane.
  const span = (c) => {
    const end = c.end !== null ? c.end : (c.start + (c.duration_ms || 0));
    return [c.start !== null ? c.start : end - (c.duration_ms || 0), end];
  };
  const rowsOf = {};
  for (const lane of lanes) rowsOf[lane] = [];
  const placed = calls.map((c) => {
    const [start, end] = span(c);
    const rows = rowsOf[c.lane];
    let row = rows.findIndex((last) => x(last) + 1 <= x(start));
    if (row < 0) { row = rows.length; rows.push(end); } else rows[row] = Math.max(end, start);
    rows[row] = Math.max(rows[row], start + (t1 - t0) * 3 / plotW);
    return { c, start, end, row };
  });
  const laneTop = {};
  let y0 = turnsH;
  for (const lane of lanes) { laneTop[lane] = y0; y0 += Math.max(1, rowsOf[lane].length) * rowH + 14; }
  const height = y0 + axisH + 8;
  const root = svg("svg", { id: "timeline", viewBox: `0 0 ${width} ${height}`, width, height, role: "img" });

  // Turns: from a prompt to the answer that ended it.
  root.appendChild(svg("text", { class: "lane-label", x: 8, y: turnsH / 2 + 4 }, "turns"));
  let open = null;
  for (const i of items) {
    if (i.kind === "prompt") open = i.ts;
    if (i.kind === "answer" && !i.subagent) {
      const start = open === null ? i.ts : open;
      root.appendChild(svg("rect", { class: "turn", x: x(start), y: 6, width: Math.max(2, x(i.ts) - x(start)), height: turnsH - 12, rx: 3 },
        svg("title", {}, `turn ${clock(start)}–${clock(i.ts)}`)));
      open = null;
    }
  }
  for (const i of items) {
    if (i.kind === "prompt") root.appendChild(svg("circle", { class: "prompt", cx: x(i.ts), cy: turnsH / 2, r: 5 }, svg("title", {}, "prompt: " + i.text.slice(0, 200))));
    if (i.kind === "answer") root.appendChild(svg("rect", { class: "answer", x: x(i.ts) - 3, y: turnsH / 2 - 5, width: 6, height: 10 }, svg("title", {}, (i.subagent ? "subagent answer: " : "answer: ") + i.text.slice(0, 200))));
  }

  for (const lane of lanes) {
    const y = laneTop[lane], h = Math.max(1, rowsOf[lane].length) * rowH + 10;
    root.appendChild(svg("rect", { class: "lane-bg", x: left, y: y + 2, width: plotW, height: h }));
    root.appendChild(svg("text", { class: "lane-label", x: 8, y: y + 16 }, lane.slice(0, 14)));
  }
  for (const { c, start, end, row } of placed) {
    const y = laneTop[c.lane] + 7 + row * rowH - 5;
    const outcome = c.outcome || "running";
    const bar = svg("rect", {
      class: "call " + outcome, x: x(start), y: y + 5, width: Math.max(3, x(end) - x(start)), height: rowH - 4, rx: 2,
      "data-key": c.key, tabindex: 0,
      onclick: () => showCall(detail, s, c, bar),
    }, svg("title", {}, `${c.tool} · ${outcome} · ${ms(c.duration_ms)} · ${clock(start)}`));
    root.appendChild(bar);
    if (outcome === "failed" || outcome === "denied" || outcome === "refused" || c.decision === "deny") {
      root.appendChild(svg("text", { class: "mark", x: x(start) - 7, y: y + 15, "text-anchor": "middle" }, "✕"));
    }
  }

  // Compactions: a line across every lane.
  for (const i of items) {
    if (i.kind !== "compaction") continue;
    root.appendChild(svg("line", { class: "compaction", x1: x(i.ts), x2: x(i.ts), y1: 2, y2: height - axisH }, svg("title", {}, "compaction " + (i.trigger || ""))));
    root.appendChild(svg("text", { class: "compaction", x: x(i.ts) + 3, y: height - axisH - 4 }, "compacted"));
  }

  const axisY = height - axisH + 4;
  root.appendChild(svg("line", { class: "axis", x1: left, x2: left + plotW, y1: axisY, y2: axisY }));
  for (let k = 0; k <= 6; k++) {
    const t = t0 + (t1 - t0) * k / 6;
    const label = t1 - t0 < 60000 ? clockMs(t) : clock(t);
    root.appendChild(svg("text", { x: x(t), y: axisY + 14, "text-anchor": k === 0 ? "start" : k === 6 ? "end" : "middle" }, label));
  }
  return el("div", { class: "timeline" }, root);
}

let selected = null;
function restoreSelection(detail, session) {
  if (!selected || selected.session !== session) return;
  const bar = document.querySelector(`rect.call[data-key="${CSS.escape(selected.key)}"]`);
  if (bar) bar.dispatchEvent(new Event("click"));
}

async function showCall(detail, s, c, bar) {
  const session = s.session_id;
  document.querySelectorAll("rect.call.selected").forEach((b) => b.classList.remove("selected"));
  bar.classList.add("selected");
  selected = { session, key: c.key };
  const machine = s.machine_id ? "&machine=" + encodeURIComponent(s.machine_id) : "";
  const d = await api("/api/call?session=" + encodeURIComponent(session) + "&key=" + encodeURIComponent(c.key) + machine);
  detail.replaceChildren(el("h2", {}, `${d.tool} `, el("span", { class: "pill " + (d.outcome || "") }, d.outcome || "running")),
    el("p", { class: "muted" }, `started ${when(d.start)} · ${ms(d.duration_ms)}` + (d.risk ? ` · gate: ${d.risk} (${d.decision})` : "") + decided(d.decided_by)),
    el("h2", {}, "Input"), el("pre", { class: "io", id: "call-input" }, pretty(d.input) || "(not recorded)"),
    el("h2", {}, "Output"), el("pre", { class: "io", id: "call-output" }, pretty(d.output) || pretty(d.error) || "(not recorded)"));
}

// Who decided a call, as `show` says it (v_tool_call_decisions); nothing for the gate, whose
// finding is shown already, or when nothing tells.
const DECIDED = {
  user: "by the user",
  settings: "by settings",
  mode: "by bypass mode",
  auto: "by auto mode",
  classifier: "by the classifier",
};
function decided(by) {
  return DECIDED[by] ? " · " + DECIDED[by] : "";
}

function pretty(text) {
  if (text === null || text === undefined) return "";
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch (_) { return text; }
}

function story(items) {
  const line = (i) => {
    switch (i.kind) {
      case "start": return ["start", i.source || ""];
      case "prompt": return ["prompt", i.text];
      case "tool_call": return ["tool", `${i.tool} ${i.input || ""} → ${i.outcome || "running"}${i.duration_ms !== null ? " (" + ms(i.duration_ms) + ")" : ""}${i.risk ? " · gate: " + i.risk + " " + (i.decision || "") : ""}${decided(i.decided_by)}`];
      case "answer": return [i.subagent ? "subagent" : "answer", i.text];
      case "compaction": return ["compact", i.trigger || ""];
      case "end": return ["end", i.reason || ""];
      default: return [i.kind, ""];
    }
  };
  return el("ul", { class: "story" }, items.map((i) => {
    const [kind, text] = line(i);
    return el("li", { class: "item-" + i.kind }, el("span", { class: "muted" }, clock(i.ts)), el("span", { class: "kind" }, kind),
      el("span", { class: "text" }, String(text).slice(0, 600)));
  }));
}

// ---- start-up and live updates -------------------------------------------------------------

const PAGE_OF_PATH = { "/": "overview", "/sessions": "sessions", "/session": "session", "/tools": "tools", "/gate": "gate", "/sql": "sql" };
const page = PAGE_OF_PATH[location.pathname] || "overview";
let version = null;
let busy = false;

async function draw() {
  if (busy) return;
  busy = true;
  const app = document.getElementById("app");
  try {
    await pages[page](app);
    widenRates();
    document.body.setAttribute("data-drawn", page);
  } catch (e) {
    app.replaceChildren(el("p", { class: "error", id: "load-error" }, "Could not load this page: " + e.message));
  } finally {
    busy = false;
  }
}

// Rate bars get their width from a data attribute: no inline style attributes (CSP).
function widenRates() {
  document.querySelectorAll(".rate[data-w]").forEach((r) => { r.style.width = Math.max(2, Number(r.dataset.w)) + "px"; });
}

async function poll() {
  const live = document.getElementById("live");
  try {
    const answer = await api("/api/version");
    const v = answer.version;
    const note = document.getElementById("zone-note");
    if (answer.store === "team" && note && !note.textContent.includes("team store")) showZone("UTC", "team");
    live.classList.remove("stale");
    live.textContent = "live";
    if (version !== null && v !== version && page !== "sql") await draw();
    version = v;
  } catch (_) {
    live.classList.add("stale");
    live.textContent = "offline";
  }
}

function start() {
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.dataset.page === page || (page === "session" && a.dataset.page === "sessions"));
  const range = document.getElementById("range");
  const stored = params().get("range");
  range.value = stored !== null ? stored : (localStorage.getItem("cmstore-range") || "30d");
  range.addEventListener("change", () => { localStorage.setItem("cmstore-range", range.value); draw(); });
  draw().then(poll);
  setInterval(poll, 3000);
}

start();
