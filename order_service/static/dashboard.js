// The live dashboard: polls /dashboard/data every second and turns two successive samples
// into rates (orders/s, deductions/s), lock-wait quantiles from the histogram's bucket
// deltas, and the mean batch size. window.dashboard is there for people and tests to read.
"use strict";

const WINDOW = 120; // points kept per chart: two minutes
const dashboard = (window.dashboard = { samples: 0, errors: [], charts: {}, data: {} });

const CHARTS = {
  throughput: { title: "per second", series: ["orders/s", "deductions/s"], colors: ["#1f77b4", "#2ca02c"] },
  lockWait: { title: "lock wait, ms", series: ["p50", "p99"], colors: ["#9467bd", "#d62728"] },
  batch: { title: "requests per lock hold", series: ["batch size"], colors: ["#ff7f0e"] },
  fencing: { title: "since start", series: ["fencing refusals", "lock losses"], colors: ["#8c564b", "#e377c2"] },
};

function makeChart(key, spec) {
  const holder = document.createElement("div");
  document.getElementById("charts").appendChild(holder);
  const data = [[], ...spec.series.map(() => [])];
  const opts = {
    title: spec.title,
    width: 560,
    height: 220,
    series: [{}, ...spec.series.map((label, i) => ({ label, stroke: spec.colors[i], width: 2 }))],
    axes: [{}, { size: 60 }],
  };
  dashboard.data[key] = data;
  dashboard.charts[key] = new uPlot(opts, data, holder);
}

// The upper bound of the bucket where quantile q of the observations between two samples
// falls. Buckets are [le, cumulative count] pairs, the +Inf one (le null) last; a histogram
// with no observation yet has no buckets at all.
function quantile(q, before, now) {
  if (!now.length) return null;
  const earlier = new Map(before.map(([le, n]) => [le, n]));
  const seen = now.map(([le, n]) => [le, n - (earlier.get(le) || 0)]);
  const total = seen[seen.length - 1][1];
  if (total <= 0) return null;
  for (let i = 0; i < seen.length; i++) {
    if (seen[i][1] >= q * total) {
      if (seen[i][0] !== null) return seen[i][0];
      return i > 0 ? seen[i - 1][0] * 2 : null; // past the last bound: say twice it
    }
  }
  return null;
}

function push(key, t, values) {
  const data = dashboard.data[key];
  data[0].push(t);
  values.forEach((v, i) => data[i + 1].push(v));
  if (data[0].length > WINDOW) data.forEach((column) => column.shift());
  dashboard.charts[key].setData(data);
}

function showStock(levels) {
  const body = document.querySelector("#stock tbody");
  body.innerHTML = "";
  for (const [goods, level] of Object.entries(levels || {})) {
    const row = body.insertRow();
    row.insertCell().textContent = goods;
    row.insertCell().textContent = level;
  }
}

let previous = null;

async function poll() {
  try {
    const answer = await fetch("/dashboard/data", { cache: "no-store" });
    if (!answer.ok) throw new Error(`HTTP ${answer.status}`);
    const now = await answer.json();
    const status = document.getElementById("status");
    status.textContent = now.stockUp
      ? `updated ${new Date(now.t * 1000).toLocaleTimeString()}`
      : "the stock service does not answer";
    if (previous && now.stockUp && previous.stockUp) {
      const dt = now.t - previous.t;
      const orders = (o) => Object.values(o.orders).reduce((a, b) => a + b, 0);
      push("throughput", now.t, [
        (orders(now) - orders(previous)) / dt,
        (now.deductions - previous.deductions) / dt,
      ]);
      const ms = (s) => (s === null ? null : s * 1000);
      push("lockWait", now.t, [
        ms(quantile(0.5, previous.lockWait, now.lockWait)),
        ms(quantile(0.99, previous.lockWait, now.lockWait)),
      ]);
      const holds = now.batchCount - previous.batchCount;
      push("batch", now.t, [holds > 0 ? (now.batchSum - previous.batchSum) / holds : null]);
      push("fencing", now.t, [now.fencingRefusals, now.lockLosses]);
    }
    showStock(now.stock);
    previous = now;
    dashboard.samples += 1;
  } catch (error) {
    dashboard.errors.push(String(error));
  }
}

for (const [key, spec] of Object.entries(CHARTS)) makeChart(key, spec);
poll();
setInterval(poll, 1000);
