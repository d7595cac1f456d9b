import { describe, expect, it } from 'vitest';
import { simulatorForSuite } from '../helpers/simulator.js';

type Item = { id: string; status: string; destination: string; createdAt: string; location: unknown };

describe('GET /reports', () => {
  const sim = simulatorForSuite({ fixture: 'small.ndjson' });
  const list = async (query = ''): Promise<Item[]> => {
    const res = await fetch(sim().api(`/reports${query}`));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    return (await res.json()) as Item[];
  };

  it('returns the latest published reports, newest first, ties by id (seed rule 3)', async () => {
    const items = await list();
    expect(items.map((r) => r.id)).toEqual(['A10', 'A7', 'A3', 'A4', 'A2', 'A8', 'A1', 'A9', 'A6', 'A5']);
    expect(Object.keys(items[0] ?? {})).toEqual([
      'id', 'status', 'destination', 'category', 'description', 'location', 'address', 'createdAt', 'updatedAt', 'channel',
    ]); // prettier-ignore
  });

  it('ANDs destination and status (seed rule 1)', async () => {
    expect((await list('?destination=ROAD_CONTROL&status=SUBMITTED')).map((r) => r.id)).toEqual([
      'A7',
      'A4',
      'A1',
      'A9',
    ]);
    expect((await list('?destination=ROAD_CONTROL')).map((r) => r.id)).toEqual([
      'A7',
      'A3',
      'A4',
      'A1',
      'A9',
    ]);
    expect((await list('?status=IN_PROGRESS')).map((r) => r.id)).toEqual(['A3', 'A8']);
    expect(await list('?destination=ROAD_CONTROL&status=REJECTED')).toEqual([]);
    expect(await list('?destination=UNKNOWN_AUTHORITY')).toEqual([]);
  });

  it('pages 1-based and answers [] past the end', async () => {
    expect((await list('?pageSize=3')).map((r) => r.id)).toEqual(['A10', 'A7', 'A3']);
    expect((await list('?pageSize=3&page=2')).map((r) => r.id)).toEqual(['A4', 'A2', 'A8']);
    expect((await list('?pageSize=3&page=4')).map((r) => r.id)).toEqual(['A5']);
    expect(await list('?pageSize=3&page=5')).toEqual([]);
    expect(
      (await list('?destination=ROAD_CONTROL&status=SUBMITTED&pageSize=2&page=2')).map((r) => r.id),
    ).toEqual(['A1', 'A9']);
  });

  it('never lists warts', async () => {
    const ids = (await list('?pageSize=1000')).map((r) => r.id);
    expect(ids).not.toContain('W-LAT');
    expect(ids).not.toContain('W-DATE');
    expect(ids).not.toContain('broken');
  });
});
