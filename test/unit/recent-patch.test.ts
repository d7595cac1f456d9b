import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { validateWireReport } from '../../src/schema/report.js';
import { canonicalJson, isModelledKey, type Report } from '../../src/schema/wire-format.js';
import { patchElement } from '../../src/sync/sources/recent-patch.js';

// A `recent` run changes only the fields the list gives: the element completed from the stored report
// validates to the stored report with the list's fields laid over it (its new unknown fields left out).

const text = fc.option(fc.constantFrom('a', 'b', '', 'Straße'), { nil: null });
const instant = fc.constantFrom(
  '2024-01-01T00:00:00.000Z',
  '2024-01-02T00:00:00.000Z',
  '2024-01-03T00:00:00.000Z',
);
const extraValue = fc.constantFrom<unknown>(1, 'x', '', null, true, [1], { k: 2 });

const stored: fc.Arbitrary<Report> = fc
  .record({
    status: fc.constantFrom('SUBMITTED', 'RESOLVED'),
    category: text,
    description: text,
    location: fc.option(fc.constantFrom([52.5, 13.4], [40.7, -74]), { nil: null }),
    address: text,
    createdAt: instant,
    updatedAt: instant,
    extra: fc.uniqueArray(
      fc.tuple(fc.constantFrom('ward', 'url', 'zip', 'x.y', 'location.accuracy'), extraValue),
      {
        selector: ([k]) => k,
        maxLength: 3,
      },
    ),
  })
  .map(({ location, extra, ...r }) => ({
    id: 'R-1',
    destination: 'ROAD_CONTROL',
    ...r,
    lat: location?.[0] ?? null,
    lng: location?.[1] ?? null,
    extra: extra.length === 0 ? null : (Object.fromEntries(extra) as Record<string, unknown>),
  }));

/** What the list gives of each field: left out, or a value (the stored one or another). */
const given = fc.record({
  status: fc.constantFrom('SUBMITTED', 'RESOLVED'),
  createdAt: instant,
  category: fc.option(text, { nil: undefined }),
  description: fc.option(text, { nil: undefined }),
  address: fc.option(text, { nil: undefined }),
  updatedAt: fc.option(instant, { nil: undefined }),
  location: fc.option(
    fc.oneof(
      fc.constant({ location: null }),
      fc.constant({ location: { lat: 1, lng: 2 } }),
      // A key of location besides the coordinates (stored as `location.accuracy`).
      fc.constant({ location: { lat: 1, lng: 2, accuracy: 5 } }),
      fc.constant({ lat: 3, lng: 4 }),
      fc.constant({ latitude: 52.5, longitude: 13.4 }),
    ),
    { nil: undefined },
  ),
  extra: fc.uniqueArray(fc.tuple(fc.constantFrom('ward', 'url', 'new', 'zip'), extraValue), {
    selector: ([k]) => k,
    maxLength: 3,
  }),
});

describe('patchElement (recent-patch.ts)', () => {
  it('validates to the stored report with the given fields laid over it (property)', () => {
    fc.assert(
      fc.property(stored, given, fc.boolean(), (report, g, fromCsv) => {
        const { location, extra, ...fields } = g;
        const element: Record<string, unknown> = { id: report.id, destination: report.destination };
        for (const [k, v] of Object.entries(fields)) if (v !== undefined) element[k] = v;
        Object.assign(element, location ?? {});
        for (const [k, v] of extra) element[k] = v;
        const storedText = canonicalJson(report);
        const elementText = JSON.stringify(element);

        // The model: the stored wire object (without its unknown `null` and `""` fields when a CSV run wrote it), its
        // location replaced by any the element gives (with the keys of it kept as `location.<key>` when it gives
        // a location object), then every
        // field of the element laid over it but for unknown fields the stored report lacks (all of the
        // element's when a CSV run wrote it). Fields keep the stored order, new ones follow, once completed.
        const model = JSON.parse(storedText) as Record<string, unknown>;
        if (fromCsv)
          for (const k of Object.keys(model))
            if (!isModelledKey(k) && (model[k] === null || model[k] === '')) delete model[k];
        if (location !== undefined) delete model.location;
        if (location !== undefined && 'location' in location)
          for (const k of Object.keys(model)) if (k.startsWith('location.')) delete model[k];
        for (const [k, v] of Object.entries(element)) {
          if (isModelledKey(k) || k in model || fromCsv) model[k] = v;
        }

        const patched = patchElement(elementText, { text: storedText, fromCsv })?.text ?? elementText;
        const actual = validateWireReport(JSON.parse(patched));
        const expected = validateWireReport(model);
        expect(actual).toEqual(expected);
        // Completed, the same content hash: unknown fields in the stored order (a CSV run's is its header's).
        if (actual.ok && expected.ok && !fromCsv && patched !== elementText)
          expect(canonicalJson(actual.report)).toBe(canonicalJson(expected.report));
      }),
      { numRuns: 2000 },
    );
  });

  it('leaves an element that gives every field as it is', () => {
    const report: Report = {
      id: 'R-1',
      status: 'SUBMITTED',
      destination: 'ROAD_CONTROL',
      category: null,
      description: 'd',
      lat: 1,
      lng: 2,
      address: null,
      createdAt: '2024-01-01T00:00:00.000Z',
      updatedAt: '2024-01-01T00:00:00.000Z',
      extra: { ward: 7 },
    };
    const element = JSON.stringify({
      id: 'R-1',
      status: 'RESOLVED',
      destination: 'ROAD_CONTROL',
      description: 'e',
      lat: 1,
      lng: 2,
      createdAt: report.createdAt,
      ward: 8,
    });
    expect(patchElement(element, { text: canonicalJson(report), fromCsv: false })).toBeUndefined();
  });
});
