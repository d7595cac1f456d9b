import { describe, expect, it } from 'vitest';
import { validateCsvReport, validateWireReport } from '../../src/schema/report.js';
import { canonicalJson, contentHash, toWire } from '../../src/schema/wire-format.js';
import { validateWireLine } from '../../src/schema/wire-line.js';
import { extraObjectJson } from '../../src/schema/json-text.js';

const base = {
  id: '1',
  status: 'SUBMITTED',
  destination: 'ROAD_CONTROL',
  category: 'Pothole',
  description: 'Loch in der Straße\r\nbitte reparieren',
  location: { lat: 50.94, lng: 6.96 },
  address: 'Domkloster 4',
  createdAt: '2016-02-16T21:26:00+01:00',
  updatedAt: '2016-02-17T08:00:00+01:00',
};

describe('validateWireReport', () => {
  it('normalises timestamps to UTC, keeps text byte for byte and unknown fields in extra', () => {
    const r = validateWireReport({ ...base, ward: '12' });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.report.createdAt).toBe('2016-02-16T20:26:00.000Z');
    expect(r.report.description).toBe(base.description);
    expect(r.report.extra).toEqual({ ward: '12' });
    expect(toWire(r.report)).toMatchObject({ location: { lat: 50.94, lng: 6.96 }, ward: '12' });
  });

  it('accepts the location aliases and numeric ids', () => {
    const { location: _location, ...rest } = base;
    for (const alias of [
      { latitude: 50.94, longitude: 6.96 },
      { lat: '50.94', lon: '6.96' },
      { location: { latitude: 50.94, longitude: 6.96 } },
    ]) {
      const r = validateWireReport({ ...rest, ...alias, id: 42 });
      expect(r.ok && r.report.lat === 50.94 && r.report.lng === 6.96 && r.report.id === '42').toBe(true);
    }
  });

  it("reads Open311's `long` as the longitude, in a line, a location object and a CSV row", () => {
    // GeoReport v2 names the coordinates `lat` and `long` (Chicago's and Köln's request lists).
    const { location: _location, ...rest } = base;
    const line = JSON.stringify({ ...rest, lat: 41.74685764200721, long: -87.6536401592609 });
    const r = validateWireLine(line, JSON.parse(line));
    expect(r.ok && [r.report.lat, r.report.lng, r.report.extra]).toEqual([
      41.74685764200721,
      -87.6536401592609,
      null,
    ]);
    const nested = validateWireReport({ ...rest, location: { lat: 50.9384079215, long: 6.83454483747 } });
    expect(nested.ok && [nested.report.lat, nested.report.lng, nested.report.extra]).toEqual([
      50.9384079215,
      6.83454483747,
      null,
    ]);
    const row = { id: '1', status: 'open', destination: 'CDOT', createdAt: base.createdAt };
    const csv = validateCsvReport({ ...row, lat: '41.746857', long: '-87.65364' });
    expect(csv.ok && [csv.report.lat, csv.report.lng, csv.report.extra]).toEqual([
      41.746857,
      -87.65364,
      null,
    ]);
    expect(validateCsvReport({ ...row, lat: '', long: '' }).ok).toBe(true);
    const twice = validateWireReport({ ...rest, lat: 41.7, lng: -87.6, long: -88 });
    expect(!twice.ok && twice.issues[0]?.path).toBe('location');
  });

  it.each([
    ['missing id', { id: undefined }, 'id'],
    ['blank id', { id: '  ' }, 'id'],
    ['impossible latitude', { location: { lat: 169492, lng: 6.9 } }, 'lat'],
    ['unparseable date', { createdAt: '16.02.2016, 21:26 Uhr' }, 'createdAt'],
    ['date without offset', { createdAt: '2016-02-16T21:26:00' }, 'createdAt'],
    ['impossible day', { createdAt: '2016-02-30T21:26:00Z' }, 'createdAt'],
    ['missing status', { status: null }, 'status'],
    ['half a location', { location: { lat: 50.9 } }, 'location'],
  ])('rejects %s with the issue path', (_name, patch, path) => {
    const r = validateWireReport({ ...base, ...patch });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.issues.map((i) => i.path)).toContain(path);
  });

  it('reads an updatedAt that is null like a missing one: the report was never updated (createdAt)', () => {
    const { updatedAt: _u, ...missing } = base;
    const absent = validateWireReport(missing);
    expect(absent.ok && absent.report.updatedAt).toBe('2016-02-16T20:26:00.000Z');
    expect(validateWireReport({ ...base, updatedAt: null })).toEqual(absent);
    const csv = { ...missing, lat: '50.94', lng: '6.96', location: undefined };
    delete csv.location;
    expect(validateCsvReport({ ...csv, updatedAt: null })).toEqual(validateCsvReport(csv));
    expect(validateCsvReport({ ...csv, updatedAt: null }).ok).toBe(true);
  });

  it('drops nothing of a location unseen: its other keys go to extra, a second value for it is an issue', () => {
    const { location: _location, ...rest } = base;
    const ok = (v: unknown) => {
      const r = validateWireReport(v);
      if (!r.ok) throw new Error(JSON.stringify(r.issues));
      return [r.report.lat, r.report.lng, r.report.extra === null ? null : { ...r.report.extra }];
    };
    // NYC 311 (Socrata): top-level copies of the coordinates beside a location with a human_address.
    const nyc = {
      ...rest,
      latitude: '40.847',
      longitude: '-73.935',
      location: { latitude: '40.847', longitude: '-73.935', human_address: '{"address": ""}' },
    };
    expect(ok(nyc)).toEqual([40.847, -73.935, { 'location.human_address': '{"address": ""}' }]);
    // A GeoJSON point: [lng, lat].
    expect(ok({ ...rest, location: { type: 'Point', coordinates: [-73.9, 40.7] } })).toEqual([
      40.7,
      -73.9,
      null,
    ]);
    expect(ok({ ...rest, location: { lat: 1, lng: 2, accuracy: 5 } })).toEqual([
      1,
      2,
      { 'location.accuracy': 5 },
    ]);
    for (const twice of [
      { ...rest, location: { lat: 40.7, lng: -73.9 }, latitude: 41 },
      { ...rest, lat: 40.7, lng: -73.9, lon: -74 },
      { ...rest, location: { lat: 40.7, lng: -73.9, longitude: '-74' } },
      { ...rest, location: { type: 'Point', coordinates: [-73.9, 40.7] }, lat: 1 },
    ]) {
      const r = validateWireReport(twice);
      expect(r.ok, JSON.stringify(twice)).toBe(false);
      if (!r.ok)
        expect(r.issues[0]).toMatchObject({ path: 'location', message: /differs from the coordinate read/ });
    }
  });

  it('reads a negative integer id as its decimal text, as the CSV cell of the same id reads', () => {
    for (const digits of ['-5', '-9007199254740991', '-12345678901234567890', '-12345678901234567890.0']) {
      const line = `{"id":${digits},"status":"S","destination":"D","createdAt":"2024-01-01T00:00:00Z"}`;
      const json = validateWireLine(line, JSON.parse(line));
      const csv = validateCsvReport({
        id: digits,
        status: 'S',
        destination: 'D',
        createdAt: '2024-01-01T00:00:00Z',
      });
      expect(json.ok && csv.ok, digits).toBe(true);
      if (json.ok && csv.ok) expect(json.report.id).toBe(csv.report.id);
      if (json.ok) expect(json.report.id).toBe(digits.replace(/\.0+$/, ''));
    }
  });

  it('says why a numeric id past 2^53 − 1 is refused (a double cannot hold it) and how to send it', () => {
    const r = validateWireReport({ ...base, id: 2 ** 60 });
    expect(r.ok).toBe(false);
    if (!r.ok)
      expect(r.issues).toEqual([
        {
          path: 'id',
          message: expect.stringMatching(/at most 2\^53 − 1.*as a string/),
          code: 'invalid_union',
        },
      ]);
  });

  it('reads an integer id past 2^53 − 1 from the line as its digits (as a CSV cell of it reads)', () => {
    const line = (id: string) => JSON.stringify({ ...base, id: 0 }).replace('"id":0', `"id":${id}`);
    const big = validateWireLine(line('12345678901234567890'), JSON.parse(line('12345678901234567890')));
    expect(big.ok && big.report.id).toBe('12345678901234567890');
    // Two such ids JSON.parse reads as one double stay two reports.
    const next = validateWireLine(line('12345678901234567891'), JSON.parse(line('12345678901234567891')));
    expect(next.ok && next.report.id).toBe('12345678901234567891');
    // Not plain digits: no text to take the id from, refused as before.
    expect(validateWireLine(line('1.5e20'), JSON.parse(line('1.5e20'))).ok).toBe(false);
  });

  it('reads an integer id past 2^53 − 1 with a zero fraction as its digits, as the CSV cell of the same text reads', () => {
    const line = (id: string) => JSON.stringify({ ...base, id: 0 }).replace('"id":0', `"id":${id}`);
    const { location: _location, ...row } = base;
    for (const id of ['12345678901234567890.0', '9007199254740993.00', '17.0']) {
      const wire = validateWireLine(line(id), JSON.parse(line(id)));
      const csv = validateCsvReport({ ...row, id });
      expect(csv.ok && csv.report.id, id).toBe(id.replace(/\.0+$/, ''));
      expect(wire.ok && wire.report.id, id).toBe(csv.ok && csv.report.id);
    }
  });

  it('says what a coordinate must be when it is no number at all (hex text, a boolean, an object)', () => {
    for (const lat of ['0x10', true, 'north', {}, [1]]) {
      const r = validateWireReport({ ...base, location: undefined, lat, lng: 6.96 });
      expect(r.ok, JSON.stringify(lat)).toBe(false);
      if (!r.ok)
        expect(r.issues).toEqual([
          {
            path: 'lat',
            message: expect.stringMatching(/^expected a number of degrees/),
            code: 'invalid_union',
          },
        ]);
    }
    // Text in decimal or exponent form is a number; out of range is told as such.
    const ok = validateWireReport({ ...base, location: undefined, lat: '1e1', lng: '-0' });
    expect(ok.ok && [ok.report.lat, ok.report.lng]).toEqual([10, -0]);
    const far = validateWireReport({ ...base, location: undefined, lat: 91, lng: 6.96 });
    expect(!far.ok && far.issues[0]?.code).toBe('too_big');
  });

  it('keeps the number text of a location key it does not read, as it does for top-level fields', () => {
    const text = JSON.stringify({ ...base, location: undefined }).replace(
      /}$/,
      ',"location":{"lat":1,"lng":2,"acc":1.0,"big":12345678901234567890},"top":1.0}',
    );
    const r = validateWireLine(text, JSON.parse(text));
    expect(r.ok).toBe(true);
    if (r.ok)
      expect(canonicalJson(r.report)).toMatch(
        /"top":1\.0,"location\.acc":1\.0,"location\.big":12345678901234567890}$/,
      );
  });

  it('keeps the number text of a location key it does not read when no top-level field holds a number', () => {
    for (const location of [
      '{"lat":47.5,"lng":8.25,"acc":1.50,"far":1e400,"big":12345678901234567890}',
      '{"type":"Point","coordinates":[8.25,47.5],"acc":1.50,"far":1e400,"big":12345678901234567890}',
    ]) {
      const text = `{"id":"r","status":"S","destination":"D","location":${location},"createdAt":"2024-01-01T00:00:00Z"}`;
      const r = validateWireLine(text, JSON.parse(text));
      expect(r.ok).toBe(true);
      if (r.ok)
        expect(canonicalJson(r.report)).toMatch(
          /"location\.acc":1\.50,"location\.far":1e400,"location\.big":12345678901234567890}$/,
        );
    }
  });

  it('bounds the unknown fields by the size of their text as stored, numbers as sent (REPORTS_EXTRA_MAX_BYTES)', () => {
    const limits = { maxDepth: 64, maxKeys: 1000, maxBytes: 64 };
    const line = (extra: string) => {
      const text = `{"id":"r","status":"S","destination":"D","createdAt":"2024-01-01T00:00:00Z",${extra}}`;
      return validateWireLine(text, JSON.parse(text), limits);
    };
    // Stored as `{"x":1.000…}` (108 bytes), though the double it names writes as `1`.
    const long = line(`"x":1.${'0'.repeat(100)}`);
    expect(long.ok).toBe(false);
    if (!long.ok) expect(long.issues[0]?.message).toMatch(/^unknown fields of 108 bytes exceed 64 bytes/);
    // Stored as `{"x":[1e21,…]}` (62 bytes), though the doubles write as `1e+21` (73 bytes).
    const short = line(`"x":[${Array(11).fill('1e21').join(',')}]`);
    expect(short.ok).toBe(true);
    if (short.ok) expect(Buffer.byteLength(extraObjectJson(short.report.extra!))).toBe(62);
  });

  it('rejects a value that is not an object', () => {
    expect(validateWireReport([1, 2]).ok).toBe(false);
  });
});

describe('validateCsvReport', () => {
  it('loads the same report as the NDJSON form (parity of the two wire formats)', () => {
    const json = validateWireReport({ ...base, ward: '12' });
    const csv = validateCsvReport({
      id: '1',
      status: 'SUBMITTED',
      destination: 'ROAD_CONTROL',
      category: 'Pothole',
      description: base.description,
      lat: '50.94',
      lng: '6.96',
      address: 'Domkloster 4',
      createdAt: base.createdAt,
      updatedAt: base.updatedAt,
      ward: '12',
      empty: null,
    });
    expect(csv).toEqual(json);
  });

  it('keeps the number text of the location keys it does not read from a location cell of JSON, as a line does', () => {
    const location = '{"lat":47.5,"lng":8.25,"acc":1.50,"far":1e400,"big":12345678901234567890}';
    const known = { id: '1', status: 'S', destination: 'D', createdAt: '2024-01-01T00:00:00Z' };
    const csv = validateCsvReport({ ...known, lat: null, lng: null, location });
    const line = `${JSON.stringify(known).slice(0, -1)},"location":${location}}`;
    const json = validateWireLine(line, JSON.parse(line));
    expect(csv.ok && json.ok).toBe(true);
    if (csv.ok && json.ok) {
      expect(canonicalJson(csv.report)).toBe(canonicalJson(json.report));
      expect(canonicalJson(csv.report)).toMatch(
        /"location\.acc":1\.50,"location\.far":1e400,"location\.big":12345678901234567890}$/,
      );
    }
  });

  it('reads a GeoJSON Point with an altitude (RFC 7946 §3.1.1) and keeps its position whole in extra', () => {
    const location = '{"type":"Point","coordinates":[8.25,47.5,420.50]}';
    const known = { id: '1', status: 'S', destination: 'D', createdAt: '2024-01-01T00:00:00Z' };
    const line = `${JSON.stringify(known).slice(0, -1)},"location":${location}}`;
    const json = validateWireLine(line, JSON.parse(line));
    expect(json.ok).toBe(true);
    if (json.ok) {
      expect([json.report.lat, json.report.lng]).toEqual([47.5, 8.25]);
      expect(canonicalJson(json.report)).toMatch(/,"location\.coordinates":\[8\.25,47\.5,420\.50\]}$/);
    }
    const csv = validateCsvReport({ ...known, lat: null, lng: null, location });
    expect(csv.ok && [csv.report.lat, csv.report.lng, csv.report.extra?.['location.coordinates']]).toEqual([
      47.5,
      8.25,
      [8.25, 47.5, 420.5],
    ]);
  });

  it('reads coordinate text without a leading zero or with a sign, as Oracle and printf write it', () => {
    const known = { id: '1', status: 'S', destination: 'D', createdAt: '2024-01-01T00:00:00Z' };
    for (const [lat, lng] of [
      ['51.5072', '-.1276'],
      ['.5', '+51.'],
      ['+51.5072', '-0.1276e0'],
    ]) {
      const csv = validateCsvReport({ ...known, lat, lng });
      expect(csv.ok && [csv.report.lat, csv.report.lng], `${lat} ${lng}`).toEqual([Number(lat), Number(lng)]);
      const json = validateWireReport({ ...known, location: { lat, lng } });
      expect(json).toEqual(csv);
    }
    for (const bad of ['.', '-.', '+', '1..2', '.e5', '0x10', '1,5']) {
      expect(validateCsvReport({ ...known, lat: bad, lng: '1' }).ok, bad).toBe(false);
    }
  });

  it('reads the location aliases as NDJSON does, and drops none of them unseen', () => {
    const row = {
      id: '1',
      status: 'SUBMITTED',
      destination: 'ROAD_CONTROL',
      createdAt: base.createdAt,
    };
    const aliased = validateCsvReport({ ...row, latitude: '40.7', longitude: '-73.9' });
    expect(aliased.ok && [aliased.report.lat, aliased.report.lng, aliased.report.extra]).toEqual([
      40.7,
      -73.9,
      null,
    ]);
    for (const twice of [
      { ...row, lat: '40.7', lng: '-73.9', latitude: '41' },
      { ...row, lat: '40.7', lng: '-73.9', location: '(41, -73.9)' },
      { ...row, lat: '40.7', lng: '-73.9', location: 'POINT (-73.9 41)' },
      { ...row, location: 'corner of 5th and Main' },
    ]) {
      const r = validateCsvReport(twice);
      expect(r.ok, JSON.stringify(twice)).toBe(false);
      if (!r.ok) expect(r.issues[0]?.path).toBe('location');
    }
    // A location cell as text: a Socrata pair, WKT, JSON of {lat, lng} or of a GeoJSON Point, alone or
    // beside the same lat/lng; keys of the object it does not read are kept in extra.
    for (const [cells, extra] of [
      [{ location: '(40.7, -73.9)' }, null],
      [{ lat: '40.7', lng: '-73.9', location: '(40.7, -73.9)' }, null],
      [{ location: 'POINT (-73.9 40.7)' }, null],
      [{ location: '{"type":"Point","coordinates":[-73.9,40.7]}', lat: '40.7' }, null],
      [{ location: '{"lat":40.7,"lng":-73.9,"accuracy":5}' }, { 'location.accuracy': 5 }],
      // A writer quoting every cell leaves `""` in the coordinate columns beside the location.
      [{ lat: '', lng: '', location: '(40.7, -73.9)' }, null],
      // NYC 311's CSV captures: Socrata's older form (address lines, then the pair), and its location
      // object printed as a Python dict, beside the same latitude and longitude.
      [{ location: '\n,  \n(40.7, -73.9)' }, null],
      [
        { location: 'Main St 1\nNew York, NY 10001\n(40.7, -73.9)' },
        { 'location.human_address': 'Main St 1\nNew York, NY 10001' },
      ],
      [
        {
          latitude: '40.7',
          longitude: '-73.9',
          location: `{'latitude': '40.7', 'longitude': '-73.9', 'human_address': '{"address": "", "zip": ""}'}`,
        },
        { 'location.human_address': '{"address": "", "zip": ""}' },
      ],
    ] as const) {
      const r = validateCsvReport({ ...row, ...cells });
      expect(r.ok && [r.report.lat, r.report.lng, r.report.extra], JSON.stringify(cells)).toEqual([
        40.7,
        -73.9,
        extra,
      ]);
    }
    expect(validateCsvReport({ ...row, lat: '1', lng: '2', location: null }).ok).toBe(true);
    // An empty alias cell (quoted or not) is no value: a CSV cannot leave a column out.
    expect(validateCsvReport({ ...row, lat: '1', lng: '2', location: '', latitude: '' }).ok).toBe(true);
  });

  it('tells NULL (unquoted empty cell) from the empty string (quoted ""), as PostgreSQL COPY CSV does', () => {
    const row = { id: '1', status: 'S', destination: 'D', createdAt: base.createdAt };
    const r = validateCsvReport({ ...row, category: '', description: null, note: '', gone: null });
    expect(r.ok && r.report).toMatchObject({ category: '', description: null, extra: { note: '' } });
    const json = validateWireReport({ ...row, category: '', description: null, note: '' });
    expect(r).toEqual(json);
  });

  it('treats empty cells as null and rejects a half location', () => {
    const r = validateCsvReport({
      id: '1',
      status: 'S',
      destination: 'D',
      lat: '',
      lng: '',
      createdAt: base.createdAt,
    });
    expect(r.ok && r.report.lat === null && r.report.category === null).toBe(true);
    expect(
      validateCsvReport({
        id: '1',
        status: 'S',
        destination: 'D',
        lat: '1',
        lng: '',
        createdAt: base.createdAt,
      }).ok,
    ).toBe(false);
  });
});

describe('contentHash', () => {
  it('changes with any business field and not otherwise', () => {
    const a = validateWireReport(base);
    const b = validateWireReport({ ...base });
    const c = validateWireReport({ ...base, status: 'RESOLVED' });
    if (!a.ok || !b.ok || !c.ok) throw new Error('fixture invalid');
    expect(contentHash(a.report)).toBe(contentHash(b.report));
    expect(contentHash(a.report)).not.toBe(contentHash(c.report));
  });
});
