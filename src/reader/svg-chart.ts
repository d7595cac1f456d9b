import { esc, n } from './html-parts.js';

/** One line of a chart: its name (legend), colour, and points (x epoch ms, y a count or a measure). */
export interface ChartSeries {
  name: string;
  color: string;
  points: { x: number; y: number; label?: string }[];
}

/** What {@link lineChart} draws. */
export interface ChartSpec {
  /** The accessible name of the image (`role="img"`). */
  title: string;
  series: ChartSeries[];
  /** How a y value reads in the legend, the tooltips and the axis (default: a count with digit groups). */
  format?: (y: number) => string;
  width?: number;
  height?: number;
  /** The legend shows each series' last value (default) or nothing. */
  legend?: boolean;
}

export const PALETTE = [
  '#1f77b4',
  '#d62728',
  '#2ca02c',
  '#ff7f0e',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#17becf',
];

/**
 * An inline SVG line chart, rendered on the server: no script, readable without JavaScript. Each point
 * carries a `<title>` with its exact value (a tooltip in any browser), the legend names each series with
 * its last value, and the y axis ends on a round tick (1, 2 or 5 × a power of ten). The SVG scales to its
 * container's width (phones included).
 */
export function lineChart(spec: ChartSpec): string {
  const all = spec.series.flatMap((s) => s.points);
  if (all.length === 0) return '<p class="muted">No data yet.</p>';
  const fmt = spec.format ?? ((y: number) => n(y));
  const W = spec.width ?? 560;
  const H = spec.height ?? 200;
  const [left, right, top, bottom] = [56, 12, 10, 26];
  const peak = Math.max(0, ...all.map((p) => p.y));
  const raw = Math.max(peak, 1e-9) / 4;
  const pow = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * pow).find((v) => v >= raw) ?? 10 * pow;
  const max = peak === 0 ? 1 : Math.ceil(peak / step) * step;
  const t0 = Math.min(...all.map((p) => p.x));
  const t1 = Math.max(...all.map((p) => p.x));
  const x = (t: number) =>
    t1 === t0 ? left + (W - left - right) / 2 : left + ((t - t0) / (t1 - t0)) * (W - left - right);
  const y = (v: number) => top + (1 - v / max) * (H - top - bottom);
  const ticks = peak === 0 ? [0, 1] : Array.from({ length: Math.round(max / step) + 1 }, (_, i) => i * step);
  const grid = ticks
    .map(
      (v) =>
        `<line x1="${left}" x2="${W - right}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#eceef2"/>` +
        `<text x="${left - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${esc(fmt(v))}</text>`,
    )
    .join('');
  const lines = spec.series
    .map((s) => {
      const pts = s.points.map((p) => [x(p.x).toFixed(1), y(p.y).toFixed(1)] as const);
      const dots = s.points
        .map(
          (p, i) =>
            `<circle cx="${pts[i]![0]}" cy="${pts[i]![1]}" r="3" fill="${s.color}"><title>${esc(
              `${s.name}: ${fmt(p.y)}${p.label ? ` (${p.label})` : ''}`,
            )}</title></circle>`,
        )
        .join('');
      return `<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${pts.map((p) => p.join(',')).join(' ')}"/>${dots}`;
    })
    .join('');
  const date = (t: number) => new Date(t).toISOString().replace('T', ' ').slice(0, 16);
  const axis =
    `<text x="${left}" y="${H - 6}">${esc(date(t0))}</text>` +
    (t1 === t0 ? '' : `<text x="${W - right}" y="${H - 6}" text-anchor="end">${esc(date(t1))}</text>`);
  const legend =
    spec.legend === false
      ? ''
      : `<ul class="legend">${spec.series
          .map((s) => {
            const last = s.points.at(-1);
            return `<li><span class="swatch" style="background:${s.color}"></span>${esc(s.name)}: ${last ? esc(fmt(last.y)) : '–'}</li>`;
          })
          .join('')}</ul>`;
  return `<svg role="img" aria-label="${esc(spec.title)}" viewBox="0 0 ${W} ${H}" width="100%" style="max-width:${W}px" preserveAspectRatio="xMidYMid meet">${grid}${lines}${axis}</svg>${legend}`;
}
