const NL = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;

/**
 * `body` with its unquoted lone CRs turned into LFs when the page ends its header row with a lone CR (the
 * line end of classic Mac OS, which RFC 4180 does not name but CSV writers still produce); otherwise `body`
 * itself. The page parser splits rows at LF and CRLF only, so such a page would read as one header row
 * holding every row. A CR inside quotes is data and is kept. The copy has the same length, so every
 * offset and line number found in it holds for `body`.
 */
export function loneCrAsLf(body: Buffer): Buffer {
  const first = firstUnquotedBreak(body);
  if (first === -1 || body[first] !== CR || body[first + 1] === NL) return body;
  const out = Buffer.from(body);
  let quoted = false;
  for (let i = 0; i < out.length; i++) {
    const c = out[i];
    if (c === QUOTE) quoted = !quoted;
    else if (c === CR && !quoted && out[i + 1] !== NL) out[i] = NL;
  }
  return out;
}

/** Offset of the first CR or LF outside quotes (the end of the header row), or -1. */
function firstUnquotedBreak(body: Buffer): number {
  let quoted = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c === QUOTE) quoted = !quoted;
    else if (!quoted && (c === CR || c === NL)) return i;
  }
  return -1;
}
