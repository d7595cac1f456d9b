/**
 * Compares two strings by Unicode code points, which is the order of their UTF-8 bytes: DuckDB's and
 * PostgreSQL's (`COLLATE "C"`) order of text. JavaScript's `<` compares UTF-16 code units instead, which puts
 * a character past U+FFFF (a surrogate pair, D800–DFFF) before one in U+E000–U+FFFF: `'😀' < 'Ａ'`.
 *
 * @returns negative, 0 or positive, as `Array#sort` wants
 */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

/** A UTF-16 unit moved so that surrogates (code points past U+FFFF) rank above U+E000–U+FFFF. */
function codePointRank(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit <= 0xdfff ? unit + 0x2000 : unit - 0x800;
}
