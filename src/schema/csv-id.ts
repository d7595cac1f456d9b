/**
 * A CSV `id` cell as its JSON reading gives it: an integer written with a zero fraction (`17.0`, as pandas
 * writes an id column that once held a NaN, so a float column) is the integer (`17`), as `"id": 17.0` in
 * NDJSON reads as 17. Any other text is kept as sent (`0017`, `2.10`, `1e3`: ids, not numbers).
 */
export function csvIdCell<T extends string | null | undefined>(cell: T): T | string {
  if (typeof cell !== 'string') return cell;
  const m = /^(-?)(0|[1-9]\d*)\.0+$/.exec(cell);
  if (m === null) return cell;
  return m[2] === '0' ? '0' : `${m[1]}${m[2]}`;
}
