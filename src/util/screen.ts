import stringWidth from 'string-width';
import wrapAnsi from 'wrap-ansi';

export { stringWidth };

/**
 * The width of the terminal `stream` writes to, in columns, or `undefined` when it is no terminal (a pipe or
 * a file: output for programs, where values are printed whole). A terminal that does not tell its width
 * counts as 80 columns.
 */
export function screenWidth(stream: { isTTY?: boolean; columns?: number }): number | undefined {
  if (!stream.isTTY) return undefined;
  return stream.columns && stream.columns > 0 ? stream.columns : 80;
}

/**
 * `text` cut to at most `width` terminal columns, ending in `…` when cut (as the DuckDB CLI does). Widths
 * are display columns (string-width: a CJK character or an emoji takes two), so a cut never splits one.
 */
export function truncateToWidth(text: string, width: number): string {
  if (stringWidth(text) <= width) return text;
  if (width <= 0) return '';
  let kept = '';
  let used = 0;
  // Whole graphemes (a flag, a family emoji, e + combining accent) until the ellipsis' column is reached.
  for (const { segment } of graphemes.segment(text)) {
    const w = stringWidth(segment);
    if (used + w > width - 1) break;
    kept += segment;
    used += w;
  }
  return `${kept}…`;
}

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * Control characters that would act on a terminal rather than show: C0 (but line feed and tab), DEL, C1 (ESC
 * and CSI sequences clear a screen or set a window title, a lone CR overwrites a line) and the bidirectional
 * overrides and isolates that reorder what is shown (Unicode TR #36, "Trojan Source").
 */
const CONTROL_CLASS = '[\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069]';
const CONTROLS = new RegExp(CONTROL_CLASS, 'g');
/** A colour (SGR) sequence, as a log formatter writes it, or a control character. */
const COLOUR_OR_CONTROL = new RegExp(`(\\u001b\\[[0-9;]*m)|${CONTROL_CLASS}`, 'g');

const escaped = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * `text` with every {@link CONTROLS} character written as its JSON escape (`\u001b`), so text from the
 * upstream or the warehouse (a field name, a status, an error message) printed on a terminal shows as text
 * and cannot move the cursor, clear the screen or reorder a line. Line feeds and tabs are kept; with
 * `keepColours`, so are colour sequences (SGR, `ESC [ … m`: a log formatter's own).
 */
export function escapeControls(text: string, keepColours = false): string {
  return keepColours
    ? text.replace(COLOUR_OR_CONTROL, (c, colour?: string) => colour ?? escaped(c))
    : text.replace(CONTROLS, escaped);
}

/**
 * `text` with every line longer than `width` columns wrapped at word boundaries (long words broken),
 * continuation lines indented two columns past the line's own indentation, so a terminal never wraps a
 * line itself. `width` undefined: `text` whole (not a terminal). Control characters are escaped either way
({@link escapeControls}): a report read by a person or a program holds no terminal commands.
 */
export function wrapToWidth(text: string, width: number | undefined): string {
  if (width === undefined) return escapeControls(text);
  return escapeControls(text)
    .split('\n')
    .map((line) => {
      if (stringWidth(line) <= width) return line;
      const indent = Math.min(/^ */.exec(line)![0].length + 2, Math.floor(width / 2));
      const pad = ' '.repeat(indent);
      const [first = '', ...rest] = wrapAnsi(line, width, { hard: true, trim: false }).split('\n');
      if (rest.length === 0) return first;
      const tail = wrapAnsi(rest.join(' ').trimStart(), width - indent, { hard: true }).split('\n');
      return [first.trimEnd(), ...tail.map((l) => pad + l)].join('\n');
    })
    .join('\n');
}
