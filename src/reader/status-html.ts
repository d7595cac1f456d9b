import type { AlertEvent } from '../alerts/alert-event.js';
import { formatAge } from '../util/format-age.js';
import { esc, htmlPage, n, tableSection, td, utc } from './html-parts.js';
import type { StatusData, StatusRun } from './status-data.js';
import { lineChart, PALETTE } from './svg-chart.js';

/** One job of the daemon's schedule, as the status page shows it. */
export interface ScheduledJob {
  job: string;
  /** Its cron expression. */
  schedule: string;
  /** Its next run (epoch ms); null when disabled. */
  nextMs: number | null;
  /** Its schedule's period (ms); null when disabled. */
  periodMs: number | null;
  /** Its freshness objective (ms): older last success is late (red), and raises `freshness.breached`. */
  objectiveMs: number | null;
  disabledReason?: string | undefined;
}

/** What the status page renders besides the warehouse figures. */
export interface StatusContext {
  /** Render time, epoch ms (ages are relative to it). */
  nowMs: number;
  /** The daemon's jobs (`serve` has none) and the time zone of their cron expressions. */
  schedule: { timezone: string; jobs: readonly ScheduledJob[] } | undefined;
  /** The open alerts (alert_events), newest first. */
  alerts: readonly AlertEvent[];
  /** Seconds between automatic reloads. */
  refreshSeconds: number;
  /** Pool occupancy, as `/healthz` reports it. */
  pool: { size: number; inUse: number; waiting: number; saturated: boolean };
}

/**
 * The status page (`GET /`): open alerts at the top, each job's freshness and schedule (cron expression,
 * next run), reports over time by status, charts over each job's last runs (records read, duration,
 * rejects) and of the upstream `/stats` total against the warehouse, drift, unknown values, top reject
 * reasons, data quality, and the last runs, each linked to its page (`/runs/<run id>`). One
 * self-contained HTML document (html-parts.ts); every value from the warehouse is HTML-escaped.
 */
export function renderStatusPage(data: StatusData, ctx: StatusContext): string {
  const pool = ctx.pool.saturated
    ? `<span class="late">saturated</span> (${ctx.pool.inUse}/${ctx.pool.size} in use, ${ctx.pool.waiting} waiting)`
    : `${ctx.pool.inUse}/${ctx.pool.size} connections in use`;
  const header = `<h1>reports-sync status</h1>
<p>Rendered ${esc(new Date(ctx.nowMs).toISOString())} · reloads every ${ctx.refreshSeconds} s · reader: ${pool}</p>`;
  const main = `${openAlerts(ctx)}
${freshness(data, ctx)}
<section aria-labelledby="chart"><h2 id="chart">Reports over time by status</h2>${statusChart(data.series)}</section>
${runCharts(data)}
<div class="grid">${drift(data)}${unknown(data)}</div>
${rejects(data)}
${quality(data)}
${runs(data.runs)}`;
  return htmlPage('reports-sync status', header, main, ctx.refreshSeconds);
}

/** A link to a run's page. */
export function runLink(runId: string): string {
  return `<a href="/runs/${encodeURIComponent(runId)}">${esc(runId)}</a>`;
}

function openAlerts(ctx: StatusContext): string {
  if (ctx.alerts.length === 0) {
    return `<section aria-labelledby="alerts"><h2 id="alerts">Open alerts</h2><p class="muted">None.</p></section>`;
  }
  const items = ctx.alerts.map(
    (a) =>
      `<li><strong>${esc(a.type)}</strong> ${esc(a.summary)} <span class="muted">since ${esc(utc(a.at.getTime()))} UTC` +
      `${a.runId === null ? '' : ` · run ${runLink(a.runId)}`}</span></li>`,
  );
  return `<section class="alerts" aria-labelledby="alerts"><h2 id="alerts">Open alerts (${ctx.alerts.length})</h2><ul>${items.join('')}</ul></section>`;
}

function freshness(data: StatusData, ctx: StatusContext): string {
  const scheduled = new Map((ctx.schedule?.jobs ?? []).map((j) => [j.job, j]));
  const names = [...new Set([...scheduled.keys(), ...data.jobs.map((j) => j.job)])];
  const rows = names.map((job) => {
    const seen = data.jobs.find((j) => j.job === job);
    const s = scheduled.get(job);
    const age = seen?.lastSuccessMs == null ? null : ctx.nowMs - seen.lastSuccessMs;
    const limit = s?.objectiveMs ?? s?.periodMs ?? undefined;
    const late =
      age === null
        ? s !== undefined && s.nextMs !== null
        : limit !== undefined && limit !== null && age > limit;
    const ageText = age === null ? (seen ? 'never succeeded' : 'no run yet') : `${formatAge(age)} ago`;
    const schedule =
      s === undefined
        ? '<span class="muted">not scheduled here</span>'
        : `<code>${esc(s.schedule)}</code>${s.periodMs === null ? '' : ` <span class="muted">every ${esc(formatAge(s.periodMs))}</span>`}`;
    const next =
      s === undefined
        ? ''
        : s.nextMs === null
          ? `<span class="muted">disabled${s.disabledReason ? `: ${esc(s.disabledReason)}` : ''}</span>`
          : `${esc(utc(s.nextMs).slice(0, 16))} UTC <span class="muted">in ${esc(formatAge(s.nextMs - ctx.nowMs))}</span>`;
    const objective = s?.objectiveMs == null ? '' : esc(formatAge(s.objectiveMs));
    return [
      td(job),
      td(`${ageText}${late ? ' (late)' : ''}`, late ? 'late' : 'ok'),
      td(schedule, '', true),
      td(next, '', true),
      td(objective),
      td(seen?.lastStatus ?? '', seen?.lastStatus ?? ''),
    ];
  });
  const zone = ctx.schedule ? ` Cron expressions in the time zone ${esc(ctx.schedule.timezone)}.` : '';
  return tableSection(
    'fresh',
    'Freshness per job',
    ['Job', 'Last success', 'Schedule', 'Next run', 'Objective', 'Last run'],
    rows,
    'No run yet.',
    `<p class="muted">Late: no successful run within the job's freshness objective (twice its schedule period unless set).${zone}</p>`,
  );
}

function runCharts(data: StatusData): string {
  const { jobs, totals } = data.charts;
  const perJob = (
    title: string,
    pick: (r: StatusData['charts']['jobs'][number]['runs'][number]) => number,
    format?: (y: number) => string,
  ) =>
    lineChart({
      title,
      format,
      series: jobs.map((j, i) => ({
        name: j.job,
        color: PALETTE[i % PALETTE.length]!,
        points: j.runs.map((r) => ({ x: r.atMs, y: pick(r), label: `run ${r.runId}, ${r.status}` })),
      })),
    });
  const seconds = (y: number) => `${(y / 1000).toFixed(y < 10_000 ? 1 : 0)} s`;
  const figure = (id: string, title: string, body: string) =>
    `<section aria-labelledby="${id}"><h2 id="${id}">${esc(title)}</h2>${body}</section>`;
  return `<div class="grid">
${figure(
  'c-read',
  'Records read per run',
  perJob('Records read by each run of each job', (r) => r.recordsRead),
)}
${figure(
  'c-duration',
  'Duration per run',
  perJob('Duration of each run of each job', (r) => r.durationMs, seconds),
)}
${figure(
  'c-rejects',
  'Rejected records per run',
  perJob('Records rejected by each run of each job', (r) => r.rejected),
)}
${figure(
  'c-totals',
  'Upstream /stats total vs warehouse',
  lineChart({
    title: 'Upstream /stats total and warehouse total at each comparison',
    series: [
      {
        name: 'upstream /stats',
        color: PALETTE[0]!,
        points: totals.map((t) => ({ x: t.atMs, y: t.upstream, label: `run ${t.runId}` })),
      },
      {
        name: 'warehouse',
        color: PALETTE[2]!,
        points: totals.map((t) => ({ x: t.atMs, y: t.warehouse, label: `run ${t.runId}` })),
      },
    ],
  }),
)}
</div>`;
}

function runs(list: StatusRun[]): string {
  const rows = list.map((r) => {
    const seconds = r.durationMs === null ? null : r.durationMs / 1000;
    const rate = seconds === null || seconds <= 0 ? '' : n(Math.round(r.recordsRead / seconds));
    return [
      td(utc(r.startedMs)),
      td(r.job),
      td(r.status, r.status),
      td(seconds === null ? 'running' : `${seconds.toFixed(1)} s`, 'n'),
      td(rate, 'n'),
      td(n(r.inserted), 'n'),
      td(n(r.updated), 'n'),
      td(n(r.removed), 'n'),
      td(n(r.rejected), 'n'),
      td(runLink(r.runId), 'muted', true),
    ];
  });
  return tableSection(
    'runs',
    `Last ${list.length} runs`,
    [
      'Started (UTC)',
      'Job',
      'Outcome',
      '#Duration',
      '#Records/s',
      '#Inserted',
      '#Updated',
      '#Removed',
      '#Rejected',
      'Run',
    ],
    rows,
    'No run yet.',
  );
}

function rejects(data: StatusData): string {
  const rows = data.rejects.map((r) => [
    td(r.reason, 'wrap'),
    td(n(r.count), 'n'),
    td(r.location),
    td(runLink(r.runId), 'muted', true),
  ]);
  return tableSection(
    'rejects',
    'Top reject reasons',
    ['Reason', '#Records', 'Example location', 'Run'],
    rows,
    'No rejected records.',
  );
}

function quality(data: StatusData): string {
  const rows = data.quality.map((q) => [td(q.rule), td(n(q.count), 'n')]);
  return tableSection(
    'quality',
    'Data quality',
    ['Rule', '#Current reports'],
    rows,
    'No current report holds an impossible value.',
    '<p class="muted">Reports loaded with values that cannot be true (the view current_quality_flags lists them).</p>',
  );
}

function drift(data: StatusData): string {
  const d = data.drift;
  const body =
    d === null
      ? '<p class="muted">No /stats comparison yet.</p>'
      : `<div class="scroll"><table aria-labelledby="drift"><tbody>
<tr><th>Upstream /stats total</th><td class="n">${n(d.upstream)}</td></tr>
<tr><th>Warehouse total</th><td class="n">${n(d.warehouse)}</td></tr>
<tr><th>Drift</th><td class="n ${d.diff === 0 ? 'ok' : 'late'}">${d.diff > 0 ? '+' : ''}${n(d.diff)}</td></tr>
<tr><th>Compared</th><td class="n">${esc(utc(d.atMs))} UTC</td></tr>
</tbody></table></div>`;
  return `<section aria-labelledby="drift"><h2 id="drift">Upstream vs warehouse</h2>${body}</section>`;
}

function unknown(data: StatusData): string {
  const rows = data.unknown.map((u) => [td(u.field), td(u.value, 'wrap'), td(n(u.count), 'n')]);
  return tableSection(
    'unknown',
    'Unknown values seen',
    ['Field', 'Value', '#Reports'],
    rows,
    'None: every status is known, no new destination.',
    '<p class="muted">Statuses outside the known lifecycle; destinations that appeared after the first run.</p>',
  );
}

/** Reports by status at each of the last successful runs: one line per status, the latest counts in the legend. */
function statusChart(series: StatusData['series']): string {
  if (series.length === 0) return '<p class="muted">No successful run yet.</p>';
  const statuses = [...new Set(series.flatMap((p) => Object.keys(p.counts)))].sort();
  return lineChart({
    title: `Reports by status at each of the last ${series.length} successful runs`,
    width: 760,
    height: 240,
    series: statuses.map((status, i) => ({
      name: status,
      color: PALETTE[i % PALETTE.length]!,
      points: series.map((p) => ({ x: p.atMs, y: p.counts[status] ?? 0 })),
    })),
  });
}
