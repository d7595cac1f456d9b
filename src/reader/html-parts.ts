/** A count as people read it: `300,000`. */
export function n(value: number): string {
  return value.toLocaleString('en');
}

/** HTML-escapes text for element content and double-quoted attributes. */
export function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A UTC time as `2026-11-25 23:00:00`. */
export function utc(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
}

/**
 * The pages' one style sheet (inline: the Content-Security-Policy allows no external resource). Fits a
 * 1280 px screen and a 390 px phone: tables scroll inside their section, grids fold to one column, the SVG
 * charts scale to their width.
 */
const STYLE = `
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2430;background:#f5f6f8}
header{background:#1d2430;color:#fff;padding:12px 24px}header h1{font-size:20px;margin:0;overflow-wrap:anywhere}
header p{margin:2px 0 0;color:#c6ccd6}header a{color:#c6ccd6}main{padding:8px 24px 32px;max-width:1232px}
section{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:12px 16px;margin:14px 0;min-width:0}
h2{font-size:16px;margin:0 0 8px}h3{font-size:14px;margin:10px 0 4px}table{border-collapse:collapse;width:100%}
.scroll{overflow-x:auto;max-width:100%}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eceef2;white-space:nowrap;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}td.wrap{white-space:normal;overflow-wrap:anywhere;min-width:12em}
.ok,.succeeded{color:#17803d;font-weight:600}.late,.failed,.aborted{color:#c62828;font-weight:600}.running{color:#b26a00}
.muted{color:#6b7380}.grid{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:14px;margin:14px 0}.grid section{margin:0}
.alerts{border-color:#c62828;background:#fff5f5}.alerts li{margin:4px 0;overflow-wrap:anywhere}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f5f6f8;padding:6px 8px;border-radius:4px;margin:4px 0;font-size:12px}
svg{display:block;max-width:100%;height:auto}svg text{font-size:11px;fill:#4a5260}
.legend{list-style:none;padding:0;display:flex;gap:6px 18px;flex-wrap:wrap;margin:6px 0 0}
.swatch{display:inline-block;width:10px;height:10px;margin-right:6px}
dl.facts{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:2px 14px;margin:0}
dl.facts dt{color:#6b7380}dl.facts dd{margin:0;overflow-wrap:anywhere}
@media (max-width:760px){main{padding:4px 10px 24px}header{padding:10px 12px}.grid{grid-template-columns:minmax(0,1fr)}
section{padding:10px}}`;

/**
 * One self-contained HTML document: inline CSS, no script, no external asset (works offline and behind any
 * proxy). `refreshSeconds`: reloads itself that often.
 */
export function htmlPage(title: string, header: string, main: string, refreshSeconds?: number): string {
  const refresh =
    refreshSeconds === undefined ? '' : `<meta http-equiv="refresh" content="${refreshSeconds}">`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
${refresh}<title>${esc(title)}</title><style>${STYLE}</style></head>
<body><header>${header}</header>
<main>
${main}
</main></body></html>
`;
}

/**
 * A table in a section that scrolls sideways on a narrow screen. `id` names it (its heading labels the
 * table, so `getByRole('table', { name })` finds it). Cells are HTML already escaped.
 */
export function tableSection(
  id: string,
  title: string,
  head: string[],
  rows: string[][],
  empty: string,
  after = '',
): string {
  const th = head.map((h) =>
    h.startsWith('#') ? `<th class="n">${esc(h.slice(1))}</th>` : `<th>${esc(h)}</th>`,
  );
  const body =
    rows.length === 0
      ? `<tr><td colspan="${head.length}" class="muted">${esc(empty)}</td></tr>`
      : rows.map((r) => `<tr>${r.join('')}</tr>`).join('\n');
  return `<section aria-labelledby="${id}"><h2 id="${id}">${esc(title)}</h2>
<div class="scroll"><table aria-labelledby="${id}"><thead><tr>${th.join('')}</tr></thead><tbody>${body}</tbody></table></div>${after}</section>`;
}

/** A cell: `td` with a class (`n` right-aligned numbers) around escaped text or given HTML. */
export function td(text: string, cls = '', html = false): string {
  return `<td${cls ? ` class="${cls}"` : ''}>${html ? text : esc(text)}</td>`;
}
