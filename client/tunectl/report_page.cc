// The page of `tunectl report`: its style and the script that draws it from
// the embedded data. Every text that came from the server reaches the page
// through textContent or Chart.js labels, never as markup.
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "client/tunectl/report.h"

namespace tunefleet::tunectl {
namespace {

constexpr char kStyle[] = R"CSS(
:root { --ink:#1d2430; --muted:#5b6575; --line:#dde2ea; --card:#f6f8fb; --ok:#2f6fdb;
        --best:#1e9e5a; --default:#e08a00; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink);
       margin: 0; padding: 24px 32px 48px; max-width: 1280px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 32px 0 8px; padding-top: 16px; border-top: 1px solid var(--line); }
h3 { font-size: 15px; margin: 20px 0 6px; }
p.sub, .note { color: var(--muted); margin: 0 0 12px; }
#report-error { background:#fde8e8; color:#8a1414; border:1px solid #e4a3a3; padding:10px 14px;
                border-radius:6px; margin-bottom:16px; white-space:pre-wrap; font-family:monospace; }
.cards { display:flex; flex-wrap:wrap; gap:12px; margin:12px 0 4px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:10px 14px;
        min-width:150px; }
.card .k { color:var(--muted); font-size:12px; text-transform:uppercase; letter-spacing:.04em; }
.card .v { font-size:20px; font-weight:600; }
.card .d { color:var(--muted); font-size:12px; font-family:monospace; }
.chart { position:relative; height:320px; }
.chart.small { height:220px; }
.grid { display:grid; grid-template-columns:repeat(auto-fill, minmax(380px, 1fr)); gap:16px; }
table { border-collapse:collapse; width:100%; margin:6px 0 12px; font-size:13px; }
th, td { text-align:left; padding:5px 8px; border-bottom:1px solid var(--line); vertical-align:top; }
th { color:var(--muted); font-weight:600; font-size:12px; text-transform:uppercase; }
td.num { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
td.cfg { font-family:monospace; font-size:12px; }
.badge { display:inline-block; padding:1px 7px; border-radius:10px; color:#fff; font-size:11px;
         font-weight:600; white-space:nowrap; }
details summary { cursor:pointer; }
pre.reason { white-space:pre-wrap; font-size:12px; background:var(--card); padding:8px;
             border-radius:4px; margin:4px 0 0; max-height:240px; overflow:auto; }
.legend { display:flex; flex-wrap:wrap; gap:14px; margin:4px 0 8px; font-size:12px; color:var(--muted); }
.legend i { display:inline-block; width:10px; height:10px; border-radius:2px; margin-right:5px; }
footer { margin-top:40px; color:var(--muted); font-size:12px; }
)CSS";

constexpr char kScript[] = R"JS(
"use strict";
const DATA = JSON.parse(document.getElementById("report-data").textContent);
const COLORS = { OK: "#2f6fdb", BEST: "#1e9e5a", DEFAULT: "#e08a00", COMPILE_ERROR: "#d64545",
  INVALID_CONFIG: "#8c8c8c", LAUNCH_ERROR: "#e8663d", CRASHED: "#8e44ad", TIMEOUT: "#c9a227",
  WRONG_RESULT: "#b0235b", QUARANTINED: "#6b7785", WORKER_LOST: "#a0a8b4",
  SUCCEEDED: "#1e9e5a", FAILED: "#d64545", RUNNING: "#2f6fdb", QUEUED: "#8c8c8c", CANCELLED: "#6b7785" };
const SERIES = ["#2f6fdb", "#1e9e5a", "#e08a00", "#8e44ad", "#d64545", "#17a2b8", "#6b7785",
  "#b0235b", "#c9a227", "#2c3e50"];
const colorOf = (status) => COLORS[status] || "#555";

function fail(message) {
  const box = document.getElementById("report-error");
  const before = document.body.dataset.error;
  document.body.dataset.error = (before ? before + "\n" : "") + String(message);
  box.hidden = false;
  box.textContent = "This report could not be drawn: " + document.body.dataset.error;
}
window.addEventListener("error", (e) => fail(e.message + " (" + e.filename + ":" + e.lineno + ")"));

function el(tag, props, children) {
  const node = document.createElement(tag);
  Object.assign(node, props || {});
  for (const child of [].concat(children || [])) {
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}
function fmtSec(s) {
  if (s === null || s === undefined || !isFinite(s)) return "-";
  const a = Math.abs(s);
  if (a >= 1) return s.toFixed(a >= 10 ? 1 : 2) + " s";
  if (a >= 1e-3) return (s * 1e3).toFixed(a >= 1e-2 ? 1 : 2) + " ms";
  if (a >= 1e-6) return (s * 1e6).toFixed(a >= 1e-5 ? 1 : 2) + " \u00b5s";
  return (s * 1e9).toFixed(0) + " ns";
}
const fmtRatio = (r) => (r && isFinite(r)) ? r.toFixed(2) + "\u00d7" : "-";
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
function firstLines(text, n) {
  const lines = String(text || "").split("\n").filter((l) => l.trim());
  const error = lines.find((l, i) => i > 0 && /error/i.test(l));
  const picked = lines.slice(0, 1).concat(error ? [error] : []).join(" \u2026 ");
  return picked.length > n ? picked.slice(0, n - 1) + "\u2026" : picked;
}
function card(key, value, detail) {
  return el("div", { className: "card" }, [el("div", { className: "k" }, key),
    el("div", { className: "v" }, value), el("div", { className: "d" }, detail || "")]);
}
function chartBox(parent, cls) {
  const canvas = el("canvas");
  parent.append(el("div", { className: "chart " + (cls || "") }, canvas));
  return canvas;
}
function badge(status) {
  const b = el("span", { className: "badge" }, status);
  b.style.background = colorOf(status);
  return b;
}
function table(head, rows) {
  return el("table", {}, [el("thead", {}, el("tr", {}, head.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows)]);
}
const td = (text, cls, title) => el("td", { className: cls || "", title: title || "" }, text);
const BASE = { animation: false, responsive: true, maintainAspectRatio: false };
// Times that spread over more than a decade are drawn on a log scale.
const logScale = (times) => times.length > 1 && Math.max(...times) > 10 * Math.min(...times);
// A log axis labels only 1, 2 and 5 of each decade.
const logLabel = (v) => [1, 2, 5].includes(Math.round(v / Math.pow(10, Math.floor(Math.log10(v) + 1e-9))));
const timeAxis = (title, log) => ({ type: log ? "logarithmic" : "linear", beginAtZero: !log,
  title: { display: true, text: title }, ticks: { autoSkip: !log,
    callback: (v) => (!log || logLabel(v)) ? fmtSec(v) : "" },
  grid: { color: (c) => (!log || !c.tick || logLabel(c.tick.value)) ? "#e3e7ee" : "#f6f7f9" } });
function fmtWhen(ms, spanMs) {
  const iso = new Date(ms).toISOString();
  return spanMs < 86400e3 ? iso.slice(0, 10) + " " + iso.slice(11, 19) : iso.slice(0, 16).replace("T", " ");
}

// ---- A job -------------------------------------------------------------------
function jobSummary(job, targets, trials) {
  const main = document.getElementById("main");
  const ok = trials.filter((t) => t.status === "OK").length;
  const cards = [card("State", job.state, job.reason), card("Strategy", job.strategy || "-"),
    card("Configs measured", ok + " OK", (trials.length - ok) + " failed")];
  for (const t of targets) {
    const speedup = t.best_seconds && t.default_seconds ? t.default_seconds / t.best_seconds : null;
    cards.push(card("Best on " + t.device_model, fmtSec(t.best_seconds), t.best_config || "none yet"));
    cards.push(card("Default", fmtSec(t.default_seconds), "speed-up " + fmtRatio(speedup)));
  }
  main.append(el("div", { className: "cards" }, cards));
  const outcomes = Object.entries(job.outcomes).map(([k, v]) => k + " " + v).join(", ");
  main.append(el("p", { className: "note" }, ["Submitted by " + (job.owner || "-") + " on " +
    job.created + "; last change " + job.updated + ". Outcomes: " + (outcomes || "none") + "." +
    (DATA.excluded_trials ? " " + DATA.excluded_trials + " excluded trial(s) not shown." : "")]));
}

// Every config as a bar, fastest first; failures after them, at full height.
function sortedChart(section, target, trials) {
  const oks = trials.filter((t) => t.median_seconds !== null && t.status === "OK")
    .sort((a, b) => a.median_seconds - b.median_seconds);
  const failed = trials.filter((t) => t.status !== "OK")
    .sort((a, b) => a.status.localeCompare(b.status));
  const all = oks.concat(failed);
  const top = oks.length ? oks[oks.length - 1].median_seconds * 1.08 : 1e-3;
  const log = logScale(oks.map((t) => t.median_seconds));
  const kindOf = (t) => t.status !== "OK" ? t.status
    : t.config === target.best_config ? "BEST"
    : (target.default_seconds !== null && t.median_seconds === target.default_seconds) ? "DEFAULT" : "OK";
  const kinds = [...new Set(["BEST", "DEFAULT", "OK"].concat(failed.map((t) => t.status)))];
  const names = { BEST: "best", DEFAULT: "default", OK: "OK" };
  const datasets = kinds.map((kind) => ({
    label: names[kind] || kind.toLowerCase().replace("_", " "),
    data: all.map((t) => kindOf(t) === kind ? (t.status === "OK" ? t.median_seconds : top) : null),
    backgroundColor: kind.match(/^(OK|BEST|DEFAULT)$/) ? colorOf(kind) : colorOf(kind) + "99",
    borderColor: colorOf(kind), borderWidth: kind.match(/^(OK|BEST|DEFAULT)$/) ? 0 : 1,
    barPercentage: 1.0, categoryPercentage: 0.9, skipNull: true }))
    .filter((d) => d.data.some((v) => v !== null));
  section.append(el("h3", {}, "Every config, fastest first"));
  section.append(el("p", { className: "note" }, oks.length + " configs measured, " + failed.length +
    " failed (the pale bars at the right: hover for the reason). The best is the config chosen " +
    "after the finalists were measured again, so it need not be the first bar." +
    (log ? " Times spread over more than a decade: the axis is logarithmic." : "")));
  new Chart(chartBox(section), { type: "bar",
    data: { labels: all.map((t, i) => t.status === "OK" ? String(i + 1) : "\u2715"), datasets },
    options: { ...BASE, scales: { x: { stacked: true, title: { display: true, text: "rank" },
      ticks: { autoSkip: true, maxRotation: 0 } }, y: { ...timeAxis("median time", log), stacked: true } },
      plugins: { tooltip: { callbacks: {
        title: (items) => all[items[0].dataIndex].config,
        label: (item) => { const t = all[item.dataIndex];
          return t.status === "OK" ? fmtSec(t.median_seconds) : t.status + ": " + firstLines(t.error, 160); } } } } } });
}

function histogram(section, trials) {
  const times = trials.filter((t) => t.median_seconds !== null).map((t) => t.median_seconds);
  if (times.length < 2) return;
  // Bins of equal width, or of equal ratio when the times spread over decades.
  const log = logScale(times);
  const f = log ? Math.log : (x) => x, g = log ? Math.exp : (x) => x;
  const lo = f(Math.min(...times)), hi = f(Math.max(...times));
  const bins = Math.max(4, Math.min(24, Math.ceil(Math.sqrt(times.length)) + 2));
  const width = (hi - lo) / bins || 1;
  const counts = new Array(bins).fill(0);
  for (const x of times) counts[Math.min(bins - 1, Math.floor((f(x) - lo) / width))]++;
  section.append(el("h3", {}, "Distribution of times"));
  if (log) section.append(el("p", { className: "note" }, "Bins of equal ratio (the times spread over more than a decade)."));
  new Chart(chartBox(section, "small"), { type: "bar",
    data: { labels: counts.map((_, i) => fmtSec(g(lo + i * width)) + "\u2013" + fmtSec(g(lo + (i + 1) * width))),
      datasets: [{ label: "configs", data: counts, backgroundColor: COLORS.OK, barPercentage: 1, categoryPercentage: 0.95 }] },
    options: { ...BASE, plugins: { legend: { display: false } },
      scales: { y: { beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: "configs" } },
        x: { ticks: { maxRotation: 45, autoSkip: true } } } } });
}

// One strip per parameter: every OK config's time at each of its values.
function paramEffects(section, trials) {
  const params = [...new Set(trials.flatMap((t) => Object.keys(t.values)))];
  const oks = trials.filter((t) => t.median_seconds !== null);
  const varied = params.filter((p) => new Set(trials.map((t) => t.values[p])).size > 1);
  if (!varied.length || !oks.length) return;
  const log = logScale(oks.map((t) => t.median_seconds));
  section.append(el("h3", {}, "Effect of each parameter"));
  section.append(el("p", { className: "note" }, "Each dot is a config that ran, at that value " +
    "of the parameter; the dash is their median. Failures per value are counted under the axis."));
  const grid = el("div", { className: "grid" });
  section.append(grid);
  for (const p of varied) {
    const values = [...new Set(trials.map((t) => t.values[p]))].sort((a, b) => a - b);
    const fails = values.map((v) => trials.filter((t) => t.values[p] === v && t.status !== "OK").length);
    const points = oks.map((t, i) => ({ x: values.indexOf(t.values[p]) + ((i * 37 % 29) / 29 - 0.5) * 0.5,
      y: t.median_seconds, config: t.config }));
    const medians = values.map((v, i) => { const ys = oks.filter((t) => t.values[p] === v).map((t) => t.median_seconds);
      return ys.length ? { x: i, y: median(ys), config: "median of " + ys.length } : null; }).filter(Boolean);
    const box = el("div");
    box.append(el("div", { className: "note" }, p));
    grid.append(box);
    new Chart(chartBox(box, "small"), { type: "scatter",
      data: { datasets: [
        { label: "config", data: points, backgroundColor: COLORS.OK + "88", pointRadius: 3 },
        { label: "median", data: medians, pointStyle: "line", pointRadius: 18, borderWidth: 3,
          borderColor: COLORS.DEFAULT, backgroundColor: COLORS.DEFAULT }] },
      options: { ...BASE, plugins: { legend: { display: false }, tooltip: { callbacks: {
          label: (item) => item.raw.config + ": " + fmtSec(item.raw.y) } } },
        scales: { x: { type: "linear", min: -0.6, max: values.length - 0.4,
          afterBuildTicks: (axis) => { axis.ticks = values.map((_, i) => ({ value: i })); },
          ticks: { callback: (v) => Number.isInteger(v) && values[v] !== undefined
            ? (fails[v] ? [String(values[v]), fails[v] + " failed"] : String(values[v])) : "" },
          title: { display: true, text: p } }, y: timeAxis("median time", log) } } });
  }
}

function topTable(section, target, trials) {
  const oks = trials.filter((t) => t.median_seconds !== null).sort((a, b) => a.median_seconds - b.median_seconds);
  if (!oks.length) return;
  section.append(el("h3", {}, "Fastest configs"));
  const rows = oks.slice(0, 15).map((t, i) => el("tr", {}, [td(i + 1, "num"), td(t.config, "cfg"),
    td(fmtSec(t.median_seconds), "num"), td(fmtSec(t.p20_seconds) + " \u2013 " + fmtSec(t.p80_seconds), "num"),
    td(fmtRatio(target.default_seconds / t.median_seconds), "num"),
    td(fmtRatio(t.median_seconds / oks[0].median_seconds), "num")]));
  section.append(table(["#", "config", "median", "p20 \u2013 p80", "speed-up vs default", "vs fastest"], rows));
  if (oks.length > 15) section.append(el("p", { className: "note" }, (oks.length - 15) + " more not listed."));
}

function failureTable(section, trials) {
  const failed = trials.filter((t) => t.status !== "OK");
  if (!failed.length) return;
  section.append(el("h3", {}, "Failures (" + failed.length + ")"));
  const rows = failed.map((t) => el("tr", {}, [el("td", {}, badge(t.status)), td(t.config, "cfg"),
    el("td", { title: t.error }, el("details", {}, [el("summary", {}, firstLines(t.error, 140) || "(no reason given)"),
      el("pre", { className: "reason" }, t.error)]))]));
  section.append(table(["status", "config", "reason"], rows));
}

// Nsight Compute's view of the fastest configs (`tunectl profile`).
function profileTable(section, profiles) {
  if (!profiles.length) return;
  section.append(el("h3", {}, "Profiles (Nsight Compute)"));
  const num = (v, digits) => (v === null ? "\u2013" : Number(v).toFixed(digits));
  const rows = profiles.map((p) => el("tr", {}, [td(p.rank, "num"), td(p.config, "cfg"),
    td(num(p.duration_seconds === null ? null : p.duration_seconds * 1e6, 2), "num"),
    td(num(p.cycles, 0), "num"), td(num(p.registers_per_thread, 0), "num"),
    td(num(p.shared_memory_bytes === null ? null : p.shared_memory_bytes / 1024, 1), "num"),
    td(num(p.achieved_occupancy_pct, 1), "num"), td(num(p.l2_hit_rate_pct, 1), "num"),
    td(num(p.dram_bytes_per_second === null ? null : p.dram_bytes_per_second / 1e9, 1), "num"),
    td(num(p.dram_throughput_pct, 1), "num"), td(num(p.tflops, 1), "num"), td(p.note)]));
  section.append(table(["#", "config", "duration \u00b5s", "cycles", "regs/thread", "smem KiB",
    "occupancy %", "L2 hit %", "DRAM GB/s", "DRAM %", "TFLOP/s", "note"], rows));
}

function jobPage() {
  const { job, targets } = DATA;
  document.getElementById("subtitle").textContent = "Job " + job.id + " \u00b7 kernel " + job.kernel +
    " \u00b7 shape " + job.shape;
  jobSummary(job, targets, DATA.trials);
  const models = [...new Set(targets.map((t) => t.device_model).concat(DATA.trials.map((t) => t.device_model)))];
  for (const model of models) {
    const target = targets.find((t) => t.device_model === model) || { best_seconds: null, default_seconds: null };
    const trials = DATA.trials.filter((t) => t.device_model === model);
    const section = el("section");
    document.getElementById("main").append(section);
    section.append(el("h2", {}, model + (target.toolkit ? " (" + target.toolkit + ")" : "")));
    if (target.cached) section.append(el("p", { className: "note" }, "Answered from the store: nothing was measured."));
    if (target.retune_text) section.append(el("p", { className: "note" }, target.retune_text));
    if (!trials.length) continue;
    sortedChart(section, target, trials);
    histogram(section, trials);
    paramEffects(section, trials);
    topTable(section, target, trials);
    profileTable(section, (DATA.profiles || []).filter((p) => p.device_model === model));
    failureTable(section, trials);
  }
}

// ---- A kernel ----------------------------------------------------------------
function kernelPage() {
  const history = DATA.history;
  const main = document.getElementById("main");
  document.getElementById("subtitle").textContent = "Kernel " + DATA.kernel +
    ": the best config per shape and device model, job by job";
  const key = (p) => p.shape + " \u00b7 " + p.device_model;
  const series = [...new Set(history.map(key))];
  const shapes = [...new Set(history.map((p) => p.shape))];
  const models = [...new Set(history.map((p) => p.device_model))];
  const latest = new Map();
  // History is in time order per series; a regressed job's best was not served.
  for (const p of history) if (p.retune !== "regressed") latest.set(key(p), p);
  main.append(el("div", { className: "cards" }, [card("Shapes", shapes.length), card("Device models", models.length),
    card("Jobs", new Set(history.map((p) => p.job_id)).size)]));
  main.append(el("h2", {}, "Best time over time"));
  main.append(el("p", { className: "note" }, "One line per shape and device model: the best each " +
    "finished job found (or was answered from the store), when it finished."));
  const times = history.map((p) => p.unix_ms);
  const t0 = Math.min(...times), t1 = Math.max(...times), pad = Math.max((t1 - t0) * 0.05, 1000);
  const bests = history.map((p) => p.best_seconds).filter((x) => x);
  new Chart(chartBox(main), { type: "line",
    data: { datasets: series.map((s, i) => ({ label: s, data: history.filter((p) => key(p) === s)
      .map((p) => ({ x: p.unix_ms, y: p.best_seconds, p })), borderColor: SERIES[i % SERIES.length],
      backgroundColor: SERIES[i % SERIES.length], pointRadius: 4, tension: 0 })) },
    options: { ...BASE, scales: { x: { type: "linear", min: t0 - pad, max: t1 + pad,
      ticks: { maxTicksLimit: 8, callback: (v) => fmtWhen(v, t1 - t0) },
      title: { display: true, text: "when the job finished (UTC)" } }, y: timeAxis("best median time", logScale(bests)) },
      plugins: { tooltip: { callbacks: { label: (item) => item.dataset.label + ": " + fmtSec(item.raw.y) + " (" + item.raw.p.best_config + ")" } } } } });
  main.append(el("h2", {}, "Latest best per shape and device model"));
  const grouped = (value) => models.map((m, i) => ({ label: m, backgroundColor: SERIES[i % SERIES.length],
    data: shapes.map((s) => { const p = latest.get(s + " \u00b7 " + m); return p ? value(p) : null; }) }));
  const grid = el("div", { className: "grid" });
  main.append(grid);
  const left = el("div"), right = el("div");
  grid.append(left, right);
  left.append(el("div", { className: "note" }, "Best median time"));
  new Chart(chartBox(left, "small"), { type: "bar", data: { labels: shapes, datasets: grouped((p) => p.best_seconds) },
    options: { ...BASE, scales: { y: timeAxis("best", logScale(bests)) } } });
  right.append(el("div", { className: "note" }, "Speed-up over the default config"));
  new Chart(chartBox(right, "small"), { type: "bar",
    data: { labels: shapes, datasets: grouped((p) => p.default_seconds && p.best_seconds ? p.default_seconds / p.best_seconds : null) },
    options: { ...BASE, scales: { y: { beginAtZero: true, ticks: { callback: (v) => v + "\u00d7" } } } } });
  const rows = [...latest.values()].map((p) => el("tr", {}, [td(p.shape, "cfg"), td(p.device_model),
    td(fmtSec(p.best_seconds), "num"), td(fmtSec(p.default_seconds), "num"),
    td(fmtRatio(p.default_seconds / p.best_seconds), "num"), td(p.best_config, "cfg"), td(p.job_id, "cfg"),
    td(p.when + (p.cached ? " (cached)" : ""))]));
  main.append(table(["shape", "device", "best", "default", "speed-up", "config", "job", "when"], rows));
  const all = history.map((p) => el("tr", {}, [td(p.when), td(p.shape, "cfg"), td(p.device_model),
    td(fmtSec(p.best_seconds), "num"), td(p.best_config, "cfg"), td(p.job_id, "cfg"),
    td(p.retune || "-")]));
  main.append(el("details", {}, [el("summary", {}, "Every job (" + history.length + ")"),
    table(["when", "shape", "device", "best", "config", "job", "outcome"], all)]));
}

// ---- A sweep -----------------------------------------------------------------
function sweepPage() {
  const { sweep, rows } = DATA;
  const main = document.getElementById("main");
  document.getElementById("subtitle").textContent = "Sweep " + sweep.id + " \u00b7 kernel " +
    sweep.kernel + " \u00b7 " + sweep.shapes + " shapes, one job each";
  const states = Object.entries(sweep.states).map(([k, v]) => v + " " + k).join(", ");
  const tuned = rows.filter((r) => r.best_seconds && r.default_seconds);
  const speedups = tuned.map((r) => r.default_seconds / r.best_seconds);
  const finished = ["succeeded", "failed", "cancelled"].reduce((n, k) => n + (sweep.states[k] || 0), 0);
  main.append(el("div", { className: "cards" }, [card("Shapes", sweep.shapes, states),
    card("Finished", finished + " of " + sweep.shapes),
    card("Trials", sweep.trials_done + " of " + sweep.trials_total),
    card("Speed-up over default", speedups.length ? fmtRatio(median(speedups)) : "-",
      speedups.length ? "median of " + speedups.length + "; " + fmtRatio(Math.min(...speedups)) +
        " to " + fmtRatio(Math.max(...speedups)) : "no shape tuned yet")]));
  main.append(el("p", { className: "note" }, "Submitted by " + (sweep.owner || "-") + " on " +
    sweep.created + " (strategy " + (sweep.strategy || "-") + "); last change " + sweep.updated + "."));
  const shapes = [...new Set(rows.map((r) => r.shape))];
  // A target is a device model and a toolkit; the toolkit is named only where a model has several.
  const modelOf = (r) => r.device_model ? r.device_model + "\u0000" + (r.toolkit || "") : "";
  const models = [...new Set(rows.map(modelOf).filter((m) => m))];
  const several = (m) => models.filter((n) => n.split("\u0000")[0] === m.split("\u0000")[0]).length > 1;
  const nameOf = (m) => m.split("\u0000")[0] + (several(m) ? " (" + m.split("\u0000")[1] + ")" : "");
  const of = (shape, model) => rows.find((r) => r.shape === shape && modelOf(r) === model);
  const times = tuned.map((r) => r.best_seconds).concat(tuned.map((r) => r.default_seconds));
  if (models.length && times.length) {
    main.append(el("h2", {}, "Best and default time per shape"));
    main.append(el("p", { className: "note" }, "In the sweep's order of shapes; a shape not tuned " +
      "yet (or that failed) has no bar."));
    const datasets = [];
    models.forEach((m, i) => {
      datasets.push({ label: "best on " + nameOf(m), backgroundColor: SERIES[i % SERIES.length],
        data: shapes.map((s) => { const r = of(s, m); return r ? r.best_seconds : null; }) });
      datasets.push({ label: "default on " + nameOf(m), backgroundColor: SERIES[i % SERIES.length] + "55",
        data: shapes.map((s) => { const r = of(s, m); return r ? r.default_seconds : null; }) });
    });
    new Chart(chartBox(main), { type: "bar", data: { labels: shapes, datasets },
      options: { ...BASE, scales: { y: timeAxis("median time", logScale(times)) },
        plugins: { tooltip: { callbacks: { label: (item) => item.dataset.label + ": " + fmtSec(item.raw) } } } } });
  }
  main.append(el("h2", {}, "Every shape"));
  const body = rows.map((r) => el("tr", {}, [td(r.shape, "cfg"), td(badge(r.state)),
    td(r.device_model ? nameOf(modelOf(r)) : "-"), td(r.trials_done + "/" + r.trials_total, "num"),
    td(fmtSec(r.best_seconds), "num"), td(fmtSec(r.default_seconds), "num"),
    td(r.best_seconds && r.default_seconds ? fmtRatio(r.default_seconds / r.best_seconds) : "-", "num"),
    td(r.best_config || (r.reason ? firstLines(r.reason, 160) : "-"), "cfg", r.reason),
    td(r.job_id, "cfg")]));
  main.append(table(["shape", "state", "device", "trials", "best", "default", "speed-up",
    "best config", "job"], body));
}

try {
  if (typeof Chart === "undefined") throw new Error("Chart.js did not load");
  if (DATA.kind === "job") jobPage(); else if (DATA.kind === "sweep") sweepPage(); else kernelPage();
  if (!document.body.dataset.error) document.body.dataset.rendered = "true";
} catch (e) {
  fail(e && e.stack ? e.stack : e);
}
)JS";

std::string HtmlEscape(absl::string_view text) {
  return absl::StrReplaceAll(text, {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"},
                                    {"\"", "&quot;"}, {"'", "&#39;"}});
}

}  // namespace

std::string ReportHtml(absl::string_view title, const nlohmann::ordered_json& data,
                       absl::string_view chart_js) {
  const std::string escaped = HtmlEscape(title);
  return absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<meta name=\"generator\" content=\"tunectl report\">\n<title>",
      escaped, "</title>\n<style>", kStyle, "</style>\n<script>\n", chart_js,
      "\n</script>\n</head>\n<body>\n<div id=\"report-error\" hidden></div>\n<header><h1>", escaped,
      "</h1><p class=\"sub\" id=\"subtitle\"></p></header>\n<main id=\"main\"></main>\n"
      "<footer>Made by tunectl report. Times are medians of each config's samples.</footer>\n"
      "<script id=\"report-data\" type=\"application/json\">",
      ScriptSafeJson(data), "</script>\n<script>", kScript, "</script>\n</body>\n</html>\n");
}

}  // namespace tunefleet::tunectl
