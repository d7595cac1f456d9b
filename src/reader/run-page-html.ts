import { describe as describeDrift } from '../sync/drift-hooks.js';
import { formatAge } from '../util/format-age.js';
import { esc, htmlPage, n, tableSection, td, utc } from './html-parts.js';
import type { RunDetail } from './run-details.js';
import { alsoIssuesText } from '../warehouse/reject-reasons.js';

/**
 * The page of one run (`GET /runs/<run id>`): its outcome with the error code and message, counters,
 * timings, the `/stats` comparison, its rejects grouped by issue code and path with a few raw examples,
 * its drift, its data-quality flags and the alerts it raised. Self-contained like the status page.
 */
export function renderRunPage(r: RunDetail, nowMs: number): string {
  const header = `<h1>Run ${esc(r.runId)}</h1>
<p><a href="/">← status</a> · ${esc(r.job)} · source ${esc(r.source)} · <span class="${esc(r.status)}">${esc(r.status)}</span></p>`;
  const main = [
    `<div class="grid">${outcome(r, nowMs)}${counters(r)}</div>`,
    rejects(r),
    drift(r),
    quality(r),
    alerts(r),
  ];
  return htmlPage(`run ${r.runId}`, header, main.join('\n'));
}

/** The 404 page of a run id the run log does not hold. */
export function renderRunNotFound(runId: string): string {
  return htmlPage(
    'run not found',
    `<h1>No run ${esc(runId)}</h1><p><a href="/">← status</a></p>`,
    `<section><p>The run log (sync_runs) holds no run with this id. The status page lists the last runs;
<code>reports-sync runs</code> lists them on a terminal.</p></section>`,
  );
}

function outcome(r: RunDetail, nowMs: number): string {
  const started = Date.parse(r.startedAt);
  const facts: [string, string][] = [
    ['Outcome', `<span class="${esc(r.status)}">${esc(r.status)}</span>`],
    ['Job', esc(r.job)],
    ['Source', esc(r.source)],
    ['Started', `${esc(utc(started))} UTC <span class="muted">${esc(formatAge(nowMs - started))} ago</span>`],
    ['Finished', r.finishedAt === null ? 'still running' : `${esc(utc(Date.parse(r.finishedAt)))} UTC`],
    ['Duration', r.durationMs === null ? '–' : `${(r.durationMs / 1000).toFixed(1)} s`],
    ['Attempts', n(r.attempts)],
  ];
  if (r.upstreamUrl) facts.push(['Upstream', esc(r.upstreamUrl)]);
  if (r.complete !== null) facts.push(['Read to its end', r.complete ? 'yes' : 'no']);
  if (r.notModified) facts.push(['Export', 'not modified (304): nothing read or merged']);
  if (r.tombstonesNote) facts.push(['Tombstones', esc(r.tombstonesNote)]);
  if (r.stats) {
    const d = r.stats.difference;
    facts.push([
      'Upstream /stats vs warehouse',
      `${r.stats.upstreamTotal === null ? 'unknown' : n(r.stats.upstreamTotal)} vs ${n(r.stats.warehouseTotal)}` +
        (d === null
          ? ''
          : ` <span class="${d === 0 ? 'ok' : 'late'}">(difference ${d > 0 ? '+' : ''}${n(d)})</span>`),
    ]);
  }
  const error =
    r.errorCode === null
      ? ''
      : `<h3>Error <code id="error-code">${esc(r.errorCode)}</code></h3><pre id="error-message">${esc(r.errorMessage ?? '')}</pre>`;
  const dl = facts.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${v}</dd>`).join('');
  return `<section aria-labelledby="outcome"><h2 id="outcome">Outcome</h2><dl class="facts">${dl}</dl>${error}</section>`;
}

function counters(r: RunDetail): string {
  const seconds = r.durationMs === null ? 0 : r.durationMs / 1000;
  const rows: [string, number][] = [
    ['records read', r.recordsRead],
    ['records loaded (merged)', r.recordsLoaded],
    ['records staged', r.counters.records_loaded ?? 0],
    ['records rejected', r.recordsRejected],
    ['inserted', r.inserted],
    ['updated', r.updated],
    ['unchanged', r.counters.unchanged ?? 0],
    ['refined', r.counters.refined ?? 0],
    ['removed', r.removed],
    ['revived', r.counters.revived ?? 0],
    ['duplicates', r.counters.duplicates ?? 0],
    ['data-quality flags', r.qualityFlags],
    ['bytes read', r.bytesRead],
    ['bytes over the wire', r.bytesWire],
    ['pages', r.pages],
  ];
  if (seconds > 0) rows.push(['records per second', Math.round(r.recordsRead / seconds)]);
  return tableSection(
    'counters',
    'Counters',
    ['Counter', '#Value'],
    rows.map(([k, v]) => [td(k), td(n(v), 'n')]),
    '',
  );
}

function rejects(r: RunDetail): string {
  const rows = r.rejects.map((g) => {
    const examples = g.examples
      .map(
        (e) =>
          `<div class="muted">${esc(e.location)}${e.encoding === 'base64' ? ' (bytes, base64)' : ''}${e.truncated ? ' (cut)' : ''}</div><pre>${esc(e.raw)}</pre>`,
      )
      .join('');
    return [
      td(g.code),
      td(g.path === '' ? '(record)' : g.path),
      td(n(g.records), 'n'),
      td(
        g.alsoIssues.length === 0 ? g.message : `${g.message} (also: ${alsoIssuesText(g.alsoIssues)})`,
        'wrap',
      ),
      td(examples || esc(g.locations.join(', ')), 'wrap', true),
    ];
  });
  return tableSection(
    'rejects',
    'Rejects by issue code and path',
    ['Code', 'Path', '#Records', 'Message', 'Examples (raw)'],
    rows,
    'No record of this run was rejected.',
    '<p class="muted">Each rejected record counts once, under its first issue; all of them are in rejected_records.</p>',
  );
}

function drift(r: RunDetail): string {
  const rows = r.drift.map((d) => [
    td(d.kind),
    td(d.field),
    td(d.value ?? ''),
    td(n(d.count), 'n'),
    td(describeDrift(d), 'wrap'),
  ]);
  return tableSection(
    'drift',
    'Schema drift',
    ['Kind', 'Field', 'Value', '#Records', 'What'],
    rows,
    'No drift in this run.',
  );
}

function quality(r: RunDetail): string {
  const rows = r.qualityByRule.map((q) => [td(q.rule), td(n(q.reports), 'n')]);
  return tableSection(
    'quality',
    'Data-quality flags',
    ['Rule', '#Reports'],
    rows,
    'No impossible value in the versions this run wrote.',
  );
}

function alerts(r: RunDetail): string {
  const rows = r.alerts.map((a) => [td(utc(a.at.getTime())), td(a.type), td(a.state), td(a.summary, 'wrap')]);
  return tableSection(
    'alerts',
    'Alerts raised',
    ['At (UTC)', 'Type', 'State', 'Summary'],
    rows,
    'This run raised no alert.',
  );
}
