import { formatAge } from '../util/format-age.js';
import type { StatusData, StatusRun } from './status-data.js';

/** What the status page renders besides the warehouse figures. */
export interface StatusContext {
  /** Render time, epoch ms (ages are relative to it). */
  nowMs: number;
  /** Schedule period per job (ms): a job whose last success is older is shown late (red). */
  periods: ReadonlyMap<string, number>;
  /** Seconds between automatic reloads. */
  refreshSeconds: number;
  /** Pool occupancy, as `/healthz` reports it. */
  pool: { size: number; inUse: number; waiting: number; saturated: boolean };
}

const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];
const STYLE = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2430;background:#f5f6f8}
header{background:#1d2430;color:#fff;padding:12px 24px}header h1{font-size:20px;margin:0}
header p{margin:2px 0 0;color:#c6ccd6}main{padding:8px 24px 32px;max-width:1200px}
section{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:12px 16px;margin:14px 0}
h2{font-size:16px;margin:0 0 8px}table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eceef2;white-space:nowrap}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.ok{color:#17803d;font-weight:600}.late,.failed,.aborted{color:#c62828;font-weight:600}.running{color:#b26a00}
.muted{color:#6b7380}.grid{display:grid;grid-template-columns:1fr 1fr;gap:14px}
.grid section{margin:0}svg text{font-size:11px;fill:#4a5260}`;

/**
 * The status page (`GET /`): one self-contained HTML document (inline CSS and SVG, no script, no external
 * asset, so it works offline and behind any proxy) that reloads itself every `refreshSeconds`. Every value
 * from the warehouse is HTML-escaped.
 */
export function renderStatusPage(data: StatusData, ctx: StatusContext): string {
  const pool = ctx.pool.saturated
    ? `<span class="late">saturated</span> (${ctx.pool.inUse}/${ctx.pool.size} in use, ${ctx.pool.waiting} waiting)`
    : `${ctx.pool.inUse}/${ctx.pool.size} connections in use`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="${ctx.refreshSeconds}"><title>reports-sync status</title><style>${STYLE}</style></head>
<body><header><h1>reports-sync status</h1>
<p>Rendered ${esc(new Date(ctx.nowMs).toISOString())} · reloads every ${ctx.refreshSeconds} s · reader: ${pool}</p></header>
<main>
${freshness(data, ctx)}
<section aria-labelledby="chart"><h2 id="chart">Reports over time by status</h2>${chart(data.series)}</section>
<div class="grid">${drift(data)}${unknown(data)}</div>
${rejects(data)}
${quality(data)}
${runs(data.runs)}
</main></body></html>
`;
}

function freshness(data: StatusData, ctx: StatusContext): string {
  const rows = data.jobs.map(({ job, lastSuccessMs, lastStatus }) => {
    const period = ctx.periods.get(job);
    const age = lastSuccessMs === null ? null : ctx.nowMs - lastSuccessMs;
    const late = age === null || (period !== undefined && age > period);
    const ageText = age === null ? 'never succeeded' : `${formatAge(age)} ago`;
    return `<tr><td>${esc(job)}</td><td class="${late ? 'late' : 'ok'}">${esc(ageText)}${late ? ' (late)' : ''}</td>
<td>${period === undefined ? '<span class="muted">not scheduled here</span>' : esc(`every ${formatAge(period)}`)}</td>
<td class="${esc(lastStatus)}">${esc(lastStatus)}</td></tr>`;
  });
  return `<section aria-labelledby="fresh"><h2 id="fresh">Freshness per job</h2>
<table aria-labelledby="fresh"><thead><tr><th>Job</th><th>Last success</th><th>Schedule</th><th>Last run</th></tr></thead>
<tbody>${rows.join('') || '<tr><td colspan="4" class="muted">No run yet.</td></tr>'}</tbody></table></section>`;
}

function runs(list: StatusRun[]): string {
  const rows = list.map((r) => {
    const seconds = r.durationMs === null ? null : r.durationMs / 1000;
    const rate =
      seconds === null || seconds <= 0 ? '' : Math.round(r.recordsRead / seconds).toLocaleString('en');
    return `<tr><td>${esc(new Date(r.startedMs).toISOString().replace('T', ' ').slice(0, 19))}</td>
<td>${esc(r.job)}</td><td class="${esc(r.status)}">${esc(r.status)}</td>
<td class="n">${seconds === null ? 'running' : esc(`${seconds.toFixed(1)} s`)}</td><td class="n">${rate}</td>
<td class="n">${n(r.inserted)}</td><td class="n">${n(r.updated)}</td><td class="n">${n(r.removed)}</td>
<td class="n">${n(r.rejected)}</td><td class="muted">${esc(r.runId)}</td></tr>`;
  });
  return `<section aria-labelledby="runs"><h2 id="runs">Last ${list.length} runs</h2>
<table aria-labelledby="runs"><thead><tr><th>Started (UTC)</th><th>Job</th><th>Outcome</th><th class="n">Duration</th>
<th class="n">Records/s</th><th class="n">Inserted</th><th class="n">Updated</th><th class="n">Removed</th>
<th class="n">Rejected</th><th>Run</th></tr></thead><tbody>${rows.join('')}</tbody></table></section>`;
}

function rejects(data: StatusData): string {
  const rows = data.rejects.map(
    (r) =>
      `<tr><td>${esc(r.reason)}</td><td class="n">${n(r.count)}</td><td>${esc(r.location)}</td><td class="muted">${esc(r.runId)}</td></tr>`,
  );
  return `<section aria-labelledby="rejects"><h2 id="rejects">Top reject reasons</h2>
<table aria-labelledby="rejects"><thead><tr><th>Reason</th><th class="n">Records</th><th>Example location</th><th>Run</th></tr></thead>
<tbody>${rows.join('') || '<tr><td colspan="4" class="muted">No rejected records.</td></tr>'}</tbody></table></section>`;
}

function quality(data: StatusData): string {
  const rows = data.quality.map((q) => `<tr><td>${esc(q.rule)}</td><td class="n">${n(q.count)}</td></tr>`);
  return `<section aria-labelledby="quality"><h2 id="quality">Data quality</h2>
<table aria-labelledby="quality"><thead><tr><th>Rule</th><th class="n">Current reports</th></tr></thead>
<tbody>${rows.join('') || '<tr><td colspan="2" class="muted">No current report holds an impossible value.</td></tr>'}</tbody></table>
<p class="muted">Reports loaded with values that cannot be true (the view current_quality_flags lists them).</p></section>`;
}

function drift(data: StatusData): string {
  const d = data.drift;
  const body =
    d === null
      ? '<p class="muted">No /stats comparison yet.</p>'
      : `<table aria-labelledby="drift"><tbody>
<tr><th>Upstream /stats total</th><td class="n">${n(d.upstream)}</td></tr>
<tr><th>Warehouse total</th><td class="n">${n(d.warehouse)}</td></tr>
<tr><th>Drift</th><td class="n ${d.diff === 0 ? 'ok' : 'late'}">${d.diff > 0 ? '+' : ''}${n(d.diff)}</td></tr>
<tr><th>Compared</th><td class="n">${esc(new Date(d.atMs).toISOString().replace('T', ' ').slice(0, 19))} UTC</td></tr>
</tbody></table>`;
  return `<section aria-labelledby="drift"><h2 id="drift">Upstream vs warehouse</h2>${body}</section>`;
}

function unknown(data: StatusData): string {
  const rows = data.unknown.map(
    (u) => `<tr><td>${esc(u.field)}</td><td>${esc(u.value)}</td><td class="n">${n(u.count)}</td></tr>`,
  );
  return `<section aria-labelledby="unknown"><h2 id="unknown">Unknown values seen</h2>
<table aria-labelledby="unknown"><thead><tr><th>Field</th><th>Value</th><th class="n">Reports</th></tr></thead>
<tbody>${rows.join('') || '<tr><td colspan="3" class="muted">None: every status is known, no new destination.</td></tr>'}</tbody></table>
<p class="muted">Statuses outside the known lifecycle; destinations that appeared after the first run.</p></section>`;
}

/** An inline SVG line chart: one line per status, x = run time, y = reports; a legend with the latest counts. */
function chart(series: StatusData['series']): string {
  if (series.length === 0) return '<p class="muted">No successful run yet.</p>';
  const statuses = [...new Set(series.flatMap((p) => Object.keys(p.counts)))].sort();
  const W = 760;
  const H = 240;
  const left = 56;
  const right = 12;
  const top = 12;
  const bottom = 28;
  // Round ticks (1, 2 or 5 × a power of ten) and an axis that ends on one.
  const peak = Math.max(1, ...series.flatMap((p) => Object.values(p.counts)));
  const raw = peak / 4;
  const pow = 10 ** Math.floor(Math.log10(raw));
  const step = Math.max(1, [1, 2, 5, 10].map((m) => m * pow).find((v) => v >= raw) ?? 10 * pow);
  const max = Math.ceil(peak / step) * step;
  const t0 = series[0]!.atMs;
  const t1 = series[series.length - 1]!.atMs;
  const x = (t: number) =>
    t1 === t0 ? left + (W - left - right) / 2 : left + ((t - t0) / (t1 - t0)) * (W - left - right);
  const y = (v: number) => top + (1 - v / max) * (H - top - bottom);
  const ticks = Array.from({ length: Math.round(max / step) + 1 }, (_, i) => i * step);
  const grid = ticks
    .map(
      (v) =>
        `<line x1="${left}" x2="${W - right}" y1="${y(v)}" y2="${y(v)}" stroke="#eceef2"/><text x="${left - 6}" y="${y(v) + 4}" text-anchor="end">${n(v)}</text>`,
    )
    .join('');
  const lines = statuses
    .map((status, i) => {
      const color = PALETTE[i % PALETTE.length]!;
      const pts = series.map((p) => `${x(p.atMs).toFixed(1)},${y(p.counts[status] ?? 0).toFixed(1)}`);
      const dots = pts.map(
        (pt) => `<circle cx="${pt.split(',')[0]}" cy="${pt.split(',')[1]}" r="2.5" fill="${color}"/>`,
      );
      return `<polyline fill="none" stroke="${color}" stroke-width="2" points="${pts.join(' ')}"/>${dots.join('')}`;
    })
    .join('');
  const date = (t: number) => new Date(t).toISOString().replace('T', ' ').slice(0, 16);
  const axis = `<text x="${left}" y="${H - 8}">${esc(date(t0))}</text>${t1 === t0 ? '' : `<text x="${W - right}" y="${H - 8}" text-anchor="end">${esc(date(t1))}</text>`}`;
  const last = series[series.length - 1]!.counts;
  const legend = statuses
    .map(
      (s, i) =>
        `<li><span style="display:inline-block;width:10px;height:10px;background:${PALETTE[i % PALETTE.length]};margin-right:6px"></span>${esc(s)}: ${n(last[s] ?? 0)}</li>`,
    )
    .join('');
  return `<svg role="img" aria-label="Reports by status at each of the last ${series.length} successful runs" viewBox="0 0 ${W} ${H}" width="100%" style="max-width:${W}px">${grid}${lines}${axis}</svg>
<ul style="list-style:none;padding:0;display:flex;gap:18px;flex-wrap:wrap;margin:6px 0 0">${legend}</ul>`;
}

function n(value: number): string {
  return value.toLocaleString('en');
}

/** HTML-escapes text for element content and double-quoted attributes. */
function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
