import { toWire, type Report } from './wire-format.js';

/**
 * The GeoJSON feature of a report that has a location (RFC 7946 §3.2): `Point` geometry with
 * `coordinates: [lng, lat]` (§3.1.1: longitude first), the report id as feature `id`, and the wire report
 * without `location` as `properties` (docs/sources.md). The simulator and the reader both serialise through
 * this, so their GeoJSON bodies are byte-equal. Callers leave out reports without a location.
 */
export function toFeature(report: Report): Record<string, unknown> {
  const { location: _location, ...properties } = toWire(report);
  return {
    type: 'Feature',
    id: report.id,
    geometry: { type: 'Point', coordinates: [report.lng, report.lat] },
    properties,
  };
}

/** Text before the first feature of a streamed `FeatureCollection` (features are joined by `,`). */
export const FEATURE_COLLECTION_OPEN = '{"type":"FeatureCollection","features":[';
/** Text after the last feature of a streamed `FeatureCollection`, with the closing line break. */
export const FEATURE_COLLECTION_CLOSE = ']}\n';
