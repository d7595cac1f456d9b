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
 * `text` with every line longer than `width` columns wrapped at word boundaries (long words broken),
 * continuation lines indented two columns past the line's own indentation, so a terminal never wraps a
 * line itself. `width` undefined: `text` unchanged (not a terminal).
 */
export function wrapToWidth(text: string, width: number | undefined): string {
  if (width === undefined) return text;
  return text
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
