#!/usr/bin/env node
// Builds the real sample dataset: data/sample/reports.ndjson from the public NYC 311 extracts and the
// Open311 captures in ../shared/data/real. Every mapping rule used here is documented in
// data/sample/SOURCE.md; change both together. The output is deterministic (byte-identical on reruns).
//
//   node scripts/build-sample.mjs [--input ../shared/data/real] [--out data/sample]
//
// Dependencies: csv-parse (CSV) and stream-json (a token stream, so that duplicate keys in the
// San Francisco capture can be seen; JSON.parse silently keeps the last copy of a duplicated key).
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { createReadStream } from 'node:fs';
import path from 'node:path';
import { Buffer } from 'node:buffer';
import { fileURLToPath } from 'node:url';
import { parse as parseCsv } from 'csv-parse/sync';
import Parser from 'stream-json/Parser.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

// ---------------------------------------------------------------------------------------------------
// Inputs. `records` is the count SOURCE.md documents: a changed input makes the script fail loudly.
// nyc311_2024-05-27_anthonyupf.csv is deliberately NOT read: the .json holds the same 1,000 requests
// with every value kept as a string (the CSV is a pandas re-export that turned 10033 into 10033.0).
const NYC_INPUTS = [
  { file: 'nyc311/nyc311_2013-12-25_nikeiubel.csv', source: 'nyc311-2013-12-25', records: 2386 },
  { file: 'nyc311/nyc311_2022-05-01_fedhere.csv', source: 'nyc311-2022-05-01', records: 924 },
  { file: 'nyc311/nyc311_2024-04-16_yangzixinjas.csv', source: 'nyc311-2024-04-16', records: 1000 },
  { file: 'nyc311/nyc311_2024-05-27_anthonyupf.json', source: 'nyc311-2024-05-27', records: 1000 },
];
const OPEN311_INPUTS = {
  chicago: {
    file: 'open311-samples/chicago_open311_requests_with_notes_2014.json',
    source: 'open311-chicago',
    records: 50,
  },
  koeln: {
    file: 'open311-samples/koeln_sagsuns_open311_requests_2016-02.json',
    source: 'open311-koeln',
    records: 50,
  },
  sf: { file: 'open311-samples/sf_open311_requests_2010-11.json', source: 'open311-sf', records: 1001 },
};
const LICENCE_FILES = [
  { from: 'nyc311/SOURCE.md', to: 'sources/nyc311-SOURCE.md' },
  { from: 'open311-samples/SOURCE.md', to: 'sources/open311-SOURCE.md' },
];
const NYC_TIME_ZONE = 'America/New_York';
const SF_TIME_ZONE = 'America/Los_Angeles';

// ---------------------------------------------------------------------------------------------------
// Status vocabulary.
const NYC_STATUS = {
  Open: 'SUBMITTED',
  Assigned: 'IN_PROGRESS',
  Pending: 'IN_PROGRESS',
  Started: 'IN_PROGRESS',
  'In Progress': 'IN_PROGRESS',
  Closed: 'RESOLVED',
};
// A closed request becomes REJECTED when the authority's closing note says it declined the request
// itself (duplicate, not its jurisdiction or not a supported category, no action necessary,
// administratively closed, not responded to). Notes reporting an attempt ("observed no evidence",
// "those responsible were gone", "unable to gain entry") stay RESOLVED.
const NYC_REJECTED_NOTES = [
  /determined that this complaint is a duplicate of a previously filed complaint/,
  /does not fall under the Police Department's jurisdiction/,
  /determined that police action was not necessary/,
  /has determined that this request should now be administratively closed/,
  /unable to respond to this complaint because they allocated resources to other critical services/,
];
const CHICAGO_REJECTED_NOTES = [/^Duplicate$/];
const KOELN_REJECTED_NOTES = [
  /Ihr eingebrachtes Anliegen ist derzeit leider noch nicht Bestandteil dieses Verfahrens/,
];

// ---------------------------------------------------------------------------------------------------
// Destinations (the authority a report is sent to). Unknown agency or service name: OTHER.
const NYC_AGENCY_DESTINATION = {
  NYPD: 'POLICE',
  HPD: 'HOUSING',
  DOT: 'ROAD_CONTROL',
  DEP: 'ENVIRONMENT',
  DSNY: 'SANITATION',
  DOHMH: 'HEALTH',
  DOB: 'BUILDINGS',
  DPR: 'PARKS',
  DHS: 'SOCIAL_SERVICES',
  HRA: 'SOCIAL_SERVICES',
  // TLC, DOF, EDC, DCA, DCWP, FDNY: OTHER
};
const CHICAGO_AGENCY_DESTINATION = {
  'DOB - Conservation': 'BUILDINGS',
  'DIM, Public Way Management - CDOT': 'ROAD_CONTROL',
  'Division of Electrical Operations CDOT': 'ROAD_CONTROL',
  'Division of In-House Construction CDOT': 'ROAD_CONTROL',
  'Bureau of Traffic Services - S/S': 'ROAD_CONTROL',
};
const KOELN_SERVICE_DESTINATION = {
  'Ampel defekt': 'ROAD_CONTROL',
  'Straßenlaterne defekt': 'ROAD_CONTROL',
  Straßenbaustellen: 'ROAD_CONTROL',
  'Schrottfahrzeuge/Fahrräder': 'ROAD_CONTROL',
  'Wilder Müll': 'SANITATION',
  Altkleidercontainer: 'SANITATION',
};
// San Francisco: first matching rule wins; `prefix` rules match the start of service_name.
const SF_SERVICE_DESTINATION = [
  { prefix: 'SFHA - ', destination: 'HOUSING' },
  { prefix: 'Sign - ', destination: 'ROAD_CONTROL' },
  { prefix: 'RCS - DPT - ', destination: 'ROAD_CONTROL' },
  { prefix: 'RCS - SFMTA - ', destination: 'ROAD_CONTROL' },
  { prefix: 'RCS - DPW - Bureau of Street Use and Mapping', destination: 'ROAD_CONTROL' },
  { prefix: 'RCS - DPW BSM Queue', destination: 'ROAD_CONTROL' },
  { prefix: 'RCS - DPW - Bureau of Street Environmental Services', destination: 'SANITATION' },
  { prefix: 'RCS - DPW - Bureau of Urban Forestry', destination: 'PARKS' },
  { prefix: 'RCS - PUC - ', destination: 'ENVIRONMENT' },
  { prefix: 'RCS - DBI ', destination: 'BUILDINGS' },
  { prefix: 'RCS - DPH - ', destination: 'HEALTH' },
  { prefix: 'RCS - Animal Care and Control', destination: 'HEALTH' },
  { prefix: 'RCS - Police Department', destination: 'POLICE' },
  { prefix: 'RCS - HSA - ', destination: 'SOCIAL_SERVICES' },
  ...[
    'Pavement_Defect',
    'Sidewalk_Defect',
    'Lifted_sidewalk_other',
    'Collapsed_sidewalk',
    'Sidewalk_or_Curb_Issues',
    'Damaged_curb_or_ramp',
    'Construction_Plate_Shifted',
    'Utility_Excavation',
    'Abandoned Vehicle',
  ].map((name) => ({ name, destination: 'ROAD_CONTROL' })),
  ...[
    'Sidewalk_Cleaning',
    'Street_Cleaning',
    'Illegal_Dumping',
    'Graffiti',
    'Garbage',
    'Cans_Left_Out_24x7',
    'Overflowing_City_Receptacle_or_Dumpster',
    'Damaged_City_Can',
    'City_Can_Other',
    'New_Litter_Receptacle',
  ].map((name) => ({ name, destination: 'SANITATION' })),
  ...['Sewage_Back_Up', 'Side_Sewer_Issues', 'Flooding', 'Catch_Basin_Other', 'Water_Main_Break'].map(
    (name) => ({
      name,
      destination: 'ENVIRONMENT',
    }),
  ),
  ...['Overgrown_Tree', 'Damaged_Tree', 'Tree_Other', 'Landscaping'].map((name) => ({
    name,
    destination: 'PARKS',
  })),
];

// ---------------------------------------------------------------------------------------------------
// Injected warts: real records with exactly one field broken, replacing the record they derive from
// (so ids stay unique and the total stays the real count). Listed in SOURCE.md.
const INJECTED_WARTS = [
  {
    source: 'nyc311-2013-12-25',
    sourceId: '26984072',
    field: 'location',
    value: { lat: 169492, lng: 1006307 },
    wart: 'location: NY State Plane feet (y, x) written as lat/lng; latitude 169492 is outside [-90, 90]',
  },
  {
    source: 'open311-sf',
    sourceId: '771952',
    field: 'location',
    value: { lat: 37.71271, lng: 237.597885 },
    wart: 'location: longitude in the 0..360 convention (-122.402115 + 360); 237.597885 is outside [-180, 180]',
  },
  {
    source: 'nyc311-2024-04-16',
    sourceId: '60879417',
    field: 'createdAt',
    value: '2024-04-16T03:0',
    wart: 'createdAt: truncated timestamp (was 2024-04-16T03:03:15-04:00), unparseable',
  },
  {
    source: 'open311-koeln',
    sourceId: 'A-1627',
    field: 'updatedAt',
    value: '16.02.2016, 21:26 Uhr',
    wart: 'updatedAt: German display format instead of ISO 8601 (was 2016-02-16T21:26:17+01:00), unparseable',
  },
  {
    source: 'nyc311-2022-05-01',
    sourceId: '54046813',
    field: 'id',
    value: '',
    wart: 'id: empty string (was "54046813")',
  },
];

// ---------------------------------------------------------------------------------------------------
// Small helpers.

/** A present value: null for undefined, null, '' (text is otherwise kept exactly, never trimmed). */
function present(value) {
  return value === undefined || value === null || value === '' ? null : value;
}

/** San Francisco writes the string "null" for JSON null. */
function sfValue(value) {
  return value === 'null' ? null : present(value);
}

function matchesAny(patterns, text) {
  return typeof text === 'string' && patterns.some((re) => re.test(text));
}

/** {lat, lng} from two values (numbers or numeric strings); null when missing or SF's 0/0. */
function toLocation(lat, lng) {
  const la = present(lat);
  const lo = present(lng);
  if (la === null || lo === null || la === 'null' || lo === 'null') return null;
  const latNum = typeof la === 'number' ? la : Number(la);
  const lngNum = typeof lo === 'number' ? lo : Number(lo);
  if (!Number.isFinite(latNum) || !Number.isFinite(lngNum)) {
    throw new Error(`non-numeric coordinate ${JSON.stringify([lat, lng])}: add a rule to build-sample.mjs`);
  }
  if (latNum === 0 && lngNum === 0) return null;
  return { lat: latNum, lng: lngNum };
}

// ---------------------------------------------------------------------------------------------------
// Time: local wall-clock times to ISO 8601 with the zone's UTC offset (DST-aware, via Intl).

const timeStats = { ambiguous: 0, gap: 0 };
const formatters = new Map();

/** UTC offset in minutes of `timeZone` at the instant `utcMs`. */
function offsetMinutes(timeZone, utcMs) {
  let fmt = formatters.get(timeZone);
  if (!fmt) {
    fmt = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(timeZone, fmt);
  }
  const parts = Object.fromEntries(fmt.formatToParts(new Date(utcMs)).map((p) => [p.type, p.value]));
  const wallAsUtc = Date.UTC(
    +parts.year,
    +parts.month - 1,
    +parts.day,
    +parts.hour,
    +parts.minute,
    +parts.second,
  );
  return Math.round((wallAsUtc - Math.floor(utcMs / 1000) * 1000) / 60000);
}

const pad = (n, width = 2) => String(n).padStart(width, '0');

function formatOffset(minutes) {
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  return `${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

/** ISO string of the instant `utcMs` as wall-clock time in a zone with `offset` minutes. */
function isoWithOffset(utcMs, offset) {
  const d = new Date(utcMs + offset * 60000);
  return (
    `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}` +
    `T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}${formatOffset(offset)}`
  );
}

/**
 * Wall-clock fields in `timeZone` to ISO 8601 with offset, or null if the fields are not a real date.
 * Ambiguous times (DST fall-back) take the earlier instant; times in a spring-forward gap move
 * forward by the gap (Temporal's "compatible" disambiguation).
 */
function zonedToIso({ year, month, day, hour, minute, second }, timeZone) {
  const wall = Date.UTC(year, month - 1, day, hour, minute, second);
  const check = new Date(wall);
  if (
    check.getUTCFullYear() !== year ||
    check.getUTCMonth() !== month - 1 ||
    check.getUTCDate() !== day ||
    check.getUTCHours() !== hour ||
    check.getUTCMinutes() !== minute ||
    check.getUTCSeconds() !== second
  ) {
    return null;
  }
  const before = offsetMinutes(timeZone, wall - 86400000);
  const after = offsetMinutes(timeZone, wall + 86400000);
  const valid = [...new Set([before, after])].filter((o) => offsetMinutes(timeZone, wall - o * 60000) === o);
  if (valid.length === 0) {
    timeStats.gap += 1;
    const utc = wall - before * 60000;
    return isoWithOffset(utc, offsetMinutes(timeZone, utc));
  }
  if (valid.length > 1) timeStats.ambiguous += 1;
  const offset = Math.max(...valid); // the larger offset is the earlier instant
  return isoWithOffset(wall - offset * 60000, offset);
}

// Fractional seconds are truncated (never rounded): output has seconds precision everywhere.
const US_LOCAL = /^(\d{2})\/(\d{2})\/(\d{4}) (\d{2}):(\d{2}):(\d{2}) (AM|PM)$/; // NYC portal CSV
const ISO_LOCAL = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?$/; // SODA, SF
const ISO_OFFSET = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.\d+)?([+-]\d{2}:\d{2})$/; // Chicago, Köln

/** Local time without zone to ISO with offset; an unparseable value is returned as it is (a wart). */
function localToIso(value, timeZone) {
  if (value === null) return null;
  let m = US_LOCAL.exec(value);
  if (m) {
    const hour12 = +m[4];
    if (hour12 < 1 || hour12 > 12) return value;
    const hour = (hour12 % 12) + (m[7] === 'PM' ? 12 : 0);
    return (
      zonedToIso({ year: +m[3], month: +m[1], day: +m[2], hour, minute: +m[5], second: +m[6] }, timeZone) ??
      value
    );
  }
  m = ISO_LOCAL.exec(value);
  if (m) {
    const fields = {
      year: +m[1],
      month: +m[2],
      day: +m[3],
      hour: +m[4],
      minute: +m[5],
      second: +(m[6] ?? 0),
    };
    return zonedToIso(fields, timeZone) ?? value;
  }
  return value;
}

/** ISO with an offset as given (Chicago, Köln); fractional seconds dropped; anything else as it is. */
function offsetIso(value) {
  if (value === null) return null;
  const m = ISO_OFFSET.exec(value);
  if (!m || Number.isNaN(Date.parse(value))) return value;
  return m[1] + m[2];
}

const instant = (iso) => (typeof iso === 'string' && ISO_OFFSET.test(iso) ? Date.parse(iso) : Number.NaN);

// ---------------------------------------------------------------------------------------------------
// Readers.

/** CSV header to snake_case: `X Coordinate (State Plane)` -> `x_coordinate_state_plane`. */
function normalizeHeader(name) {
  if (name.startsWith(':@')) return name;
  return name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
}

async function readCsv(file) {
  return parseCsv(await readFile(file), {
    columns: (header) => header.map(normalizeHeader),
    bom: true,
  });
}

/**
 * JSON through stream-json's token stream, assembled by hand so that a duplicated key keeps its FIRST
 * value (JSON.parse keeps the last). Later copies are counted in `duplicates` (key -> count).
 */
async function readJsonKeepFirst(file) {
  const tokens = [];
  const parser = new Parser({ packValues: true, streamValues: false });
  parser.on('data', (token) => tokens.push(token));
  await new Promise((resolve, reject) => {
    parser.on('end', resolve);
    parser.on('error', reject);
    createReadStream(file).on('error', reject).pipe(parser);
  });
  const duplicates = new Map();
  let i = 0;
  const value = () => {
    const token = tokens[i++];
    switch (token.name) {
      case 'startObject': {
        const object = {};
        for (let key = tokens[i++]; key.name !== 'endObject'; key = tokens[i++]) {
          const v = value();
          if (Object.hasOwn(object, key.value))
            duplicates.set(key.value, (duplicates.get(key.value) ?? 0) + 1);
          else object[key.value] = v;
        }
        return object;
      }
      case 'startArray': {
        const array = [];
        while (tokens[i].name !== 'endArray') array.push(value());
        i += 1;
        return array;
      }
      case 'stringValue':
        return token.value;
      case 'numberValue':
        return Number(token.value);
      case 'nullValue':
        return null;
      case 'trueValue':
        return true;
      case 'falseValue':
        return false;
      default:
        throw new Error(`unexpected JSON token ${token.name} in ${file}`);
    }
  };
  return { value: value(), duplicates };
}

// ---------------------------------------------------------------------------------------------------
// Mappers: one source record to one report. Key order is the output order.

const fallbackStats = { nycUpdatedFromClosed: 0, nycUpdatedFromCreated: 0, nycActionBeforeCreated: 0 };

function mapNyc(row, source) {
  const status = NYC_STATUS[row.status];
  if (!status) throw new Error(`${source} ${row.unique_key}: unknown status ${JSON.stringify(row.status)}`);
  const note = present(row.resolution_description);
  const createdAt = localToIso(present(row.created_date), NYC_TIME_ZONE);
  const closedAt = localToIso(present(row.closed_date), NYC_TIME_ZONE);
  const actionAt = localToIso(present(row.resolution_action_updated_date), NYC_TIME_ZONE);
  // HPD writes a date-only action date (00:00) on open complaints, i.e. before created_date: not usable.
  const usable = (iso) => iso !== null && instant(iso) >= instant(createdAt);
  if (actionAt !== null && !usable(actionAt)) fallbackStats.nycActionBeforeCreated += 1;
  let updatedAt = createdAt;
  if (usable(actionAt)) updatedAt = actionAt;
  else if (usable(closedAt)) {
    updatedAt = closedAt;
    fallbackStats.nycUpdatedFromClosed += 1;
  } else fallbackStats.nycUpdatedFromCreated += 1;

  const i1 = present(row.intersection_street_1);
  const i2 = present(row.intersection_street_2);
  const address = present(row.incident_address) ?? (i1 !== null && i2 !== null ? `${i1} & ${i2}` : null);
  const agency = present(row.agency);
  return {
    id: present(row.unique_key),
    status: status === 'RESOLVED' && matchesAny(NYC_REJECTED_NOTES, note) ? 'REJECTED' : status,
    destination: NYC_AGENCY_DESTINATION[agency] ?? 'OTHER',
    category: present(row.complaint_type),
    description: present(row.descriptor),
    location: toLocation(row.latitude, row.longitude),
    address,
    createdAt,
    updatedAt,
    source,
    sourceId: present(row.unique_key),
    agency,
    borough: present(row.borough) ?? undefined,
    closedAt: closedAt ?? undefined,
    authorityNote: note ?? undefined,
  };
}

function open311Status(raw, note, rejectedNotes) {
  if (raw === null) return null;
  const status = raw.toLowerCase();
  if (status === 'open') return note === null ? 'SUBMITTED' : 'IN_PROGRESS';
  if (status === 'closed') return matchesAny(rejectedNotes, note) ? 'REJECTED' : 'RESOLVED';
  throw new Error(`unknown Open311 status ${JSON.stringify(raw)}`);
}

function mapChicago(r) {
  const note = present(r.status_notes);
  const notes = Array.isArray(r.notes) ? r.notes : [];
  const closed = notes.filter((n) => n.type === 'closed').at(-1);
  const agency = present(r.agency_responsible);
  return {
    id: `CHI-${r.service_request_id}`,
    status: open311Status(present(r.status), note, CHICAGO_REJECTED_NOTES),
    destination: agency === null ? 'OTHER' : (CHICAGO_AGENCY_DESTINATION[agency] ?? 'OTHER'),
    category: present(r.service_name),
    description: null,
    location: toLocation(r.lat, r.long),
    address: present(r.address),
    createdAt: offsetIso(present(r.requested_datetime)),
    updatedAt: offsetIso(present(r.updated_datetime) ?? present(r.requested_datetime)),
    source: OPEN311_INPUTS.chicago.source,
    sourceId: r.service_request_id,
    agency: agency ?? undefined,
    closedAt: closed ? offsetIso(closed.datetime) : undefined,
    authorityNote: note ?? undefined,
    historyEvents: String(notes.length), // a string: extra fields must survive the CSV export unchanged
  };
}

function mapKoeln(r) {
  const note = present(r.status_notes);
  const service = present(r.service_name);
  return {
    id: `KOE-${r.service_request_id}`,
    status: open311Status(present(r.status), note, KOELN_REJECTED_NOTES),
    destination: service === null ? null : (KOELN_SERVICE_DESTINATION[service] ?? 'OTHER'),
    category: service,
    description: present(r.description),
    location: toLocation(r.lat, r.long),
    address: present(r.address),
    createdAt: offsetIso(present(r.requested_datetime)),
    updatedAt: offsetIso(present(r.updated_datetime) ?? present(r.requested_datetime)),
    source: OPEN311_INPUTS.koeln.source,
    sourceId: r.service_request_id,
    authorityNote: note ?? undefined,
  };
}

function sfDestination(service) {
  if (service === null) return null;
  const rule = SF_SERVICE_DESTINATION.find((r) =>
    r.prefix ? service.startsWith(r.prefix) : service === r.name,
  );
  return rule ? rule.destination : 'OTHER';
}

function mapSf(r) {
  const id = sfValue(r.service_request_id);
  const service = sfValue(r.service_name);
  const requested = sfValue(r.requested_datetime);
  // r.updated_datetime is the FIRST occurrence of the duplicated key (see readJsonKeepFirst).
  const updated = sfValue(r.updated_datetime) ?? requested;
  return {
    id: id === null ? null : `SF-${id}`,
    status: open311Status(sfValue(r.status), null, []),
    destination: sfDestination(service),
    category: service,
    description: null,
    location: toLocation(sfValue(r.lat), sfValue(r.lon)),
    address: sfValue(r.address),
    createdAt: localToIso(requested, SF_TIME_ZONE),
    updatedAt: localToIso(updated, SF_TIME_ZONE),
    source: OPEN311_INPUTS.sf.source,
    sourceId: String(r.service_request_id),
  };
}

// ---------------------------------------------------------------------------------------------------
// Checks mirroring the downstream validator's reject rules (used for the printed wart list).

function problems(report) {
  const out = [];
  if (typeof report.id !== 'string' || report.id === '') out.push('missing/empty id');
  const loc = report.location;
  if (loc !== null && (typeof loc.lat !== 'number' || loc.lat < -90 || loc.lat > 90))
    out.push('latitude out of range');
  if (loc !== null && (typeof loc.lng !== 'number' || loc.lng < -180 || loc.lng > 180))
    out.push('longitude out of range');
  if (Number.isNaN(instant(report.createdAt))) out.push('unparseable createdAt');
  if (Number.isNaN(instant(report.updatedAt))) out.push('unparseable updatedAt');
  if (typeof report.status !== 'string' || report.status === '') out.push('missing status');
  if (typeof report.destination !== 'string' || report.destination === '') out.push('missing destination');
  return out;
}

// ---------------------------------------------------------------------------------------------------

function parseArgs(argv) {
  const args = {
    input: path.resolve(repoRoot, '../shared/data/real'),
    out: path.resolve(repoRoot, 'data/sample'),
  };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s, 2);
    if (flag !== '--input' && flag !== '--out') throw new Error(`unknown argument ${argv[i]}`);
    const value = inline ?? argv[++i];
    if (!value) throw new Error(`${flag} needs a path`);
    args[flag.slice(2)] = path.resolve(value);
  }
  return args;
}

async function writeAtomically(file, data) {
  await writeFile(`${file}.tmp`, data, { mode: 0o644 });
  await rename(`${file}.tmp`, file);
}

function expectCount(input, n) {
  if (n !== input.records) throw new Error(`${input.file}: expected ${input.records} records, read ${n}`);
}

function tally(reports, key) {
  const counts = new Map();
  for (const r of reports) {
    const k = key(r) ?? '(null)';
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
}

function printTable(title, rows) {
  console.log(`\n${title}\n| value | records |\n|---|---:|`);
  for (const [k, n] of rows) console.log(`| ${k} | ${n.toLocaleString('en-US')} |`);
}

async function main() {
  const { input, out } = parseArgs(process.argv.slice(2));
  const reports = [];
  const duplicateKeys = [];

  for (const nyc of NYC_INPUTS) {
    const file = path.join(input, nyc.file);
    let rows;
    if (file.endsWith('.json')) {
      const { value, duplicates } = await readJsonKeepFirst(file);
      rows = value;
      if (duplicates.size) duplicateKeys.push([nyc.file, duplicates]);
    } else rows = await readCsv(file);
    expectCount(nyc, rows.length);
    for (const row of rows) reports.push(mapNyc(row, nyc.source));
  }

  const open311 = {};
  for (const [name, spec] of Object.entries(OPEN311_INPUTS)) {
    const { value, duplicates } = await readJsonKeepFirst(path.join(input, spec.file));
    open311[name] = Array.isArray(value) ? value : value.requests;
    expectCount(spec, open311[name].length);
    if (duplicates.size) duplicateKeys.push([spec.file, duplicates]);
  }
  for (const r of open311.chicago) reports.push(mapChicago(r));
  for (const r of open311.koeln) reports.push(mapKoeln(r));
  for (const r of open311.sf) reports.push(mapSf(r));

  for (const w of INJECTED_WARTS) {
    const target = reports.find((r) => r.source === w.source && r.sourceId === w.sourceId);
    if (!target) throw new Error(`wart target ${w.source} ${w.sourceId} not found`);
    target[w.field] = w.value;
    target._wart = w.wart;
  }

  // Drop absent optional extras so a key is either present with a value or missing.
  const clean = reports.map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined)));

  const ids = new Map();
  for (const r of clean) if (r.id) ids.set(r.id, (ids.get(r.id) ?? 0) + 1);
  const repeated = [...ids].filter(([, n]) => n > 1);
  if (repeated.length) throw new Error(`duplicate ids: ${repeated.map(([id]) => id).join(', ')}`);

  // Oldest first by instant; unparseable createdAt last; then id, source, sourceId (plain code-unit order).
  const sortKey = (r) => {
    const t = instant(r.createdAt);
    return Number.isNaN(t) ? Number.POSITIVE_INFINITY : t;
  };
  const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
  // (Infinity - Infinity is NaN, which is falsy: two unparseable dates fall through to the id.)
  clean.sort(
    (a, b) =>
      sortKey(a) - sortKey(b) ||
      cmp(a.id ?? '', b.id ?? '') ||
      cmp(a.source, b.source) ||
      cmp(String(a.sourceId), String(b.sourceId)),
  );

  const body = clean.map((r) => JSON.stringify(r)).join('\n') + '\n';
  await mkdir(path.join(out, 'sources'), { recursive: true });
  const target = path.join(out, 'reports.ndjson');
  await writeAtomically(target, body);
  // Byte-for-byte copies, written fresh (the inputs are read-only; copyFile would carry the mode over).
  for (const f of LICENCE_FILES)
    await writeAtomically(path.join(out, f.to), await readFile(path.join(input, f.from)));

  // ----- report -----
  console.log(
    `wrote ${path.relative(repoRoot, target) || target}: ${clean.length} records, ${Buffer.byteLength(body)} bytes`,
  );
  for (const [file, dups] of duplicateKeys) {
    console.log(
      `duplicate keys (first occurrence kept) in ${file}: ${[...dups].map(([k, n]) => `${k} x${n}`).join(', ')}`,
    );
  }
  console.log(
    `NYC updatedAt: resolution_action_updated_date before created_date (not used) ${fallbackStats.nycActionBeforeCreated}; ` +
      `fell back to closed_date ${fallbackStats.nycUpdatedFromClosed}, to created_date ${fallbackStats.nycUpdatedFromCreated}`,
  );
  console.log(`local times: DST-ambiguous ${timeStats.ambiguous}, in a DST gap ${timeStats.gap}`);
  printTable(
    'records per source',
    tally(clean, (r) => r.source),
  );
  printTable(
    'records per status',
    tally(clean, (r) => r.status),
  );
  printTable(
    'records per destination',
    tally(clean, (r) => r.destination),
  );
  printTable(
    'status per source family',
    tally(clean, (r) => `${r.source.startsWith('nyc311') ? 'nyc311' : r.source} ${r.status ?? '(null)'}`),
  );
  printTable(
    'destination per source family',
    tally(
      clean,
      (r) => `${r.source.startsWith('nyc311') ? 'nyc311' : r.source} ${r.destination ?? '(null)'}`,
    ),
  );
  const bad = clean.filter((r) => problems(r).length > 0);
  console.log(
    `\nbad records (validator would reject): ${bad.length}\n| id | source | sourceId | problems | injected |\n|---|---|---|---|---|`,
  );
  for (const r of bad) {
    console.log(
      `| ${JSON.stringify(r.id)} | ${r.source} | ${r.sourceId} | ${problems(r).join('; ')} | ${r._wart ? 'yes' : 'no (real)'} |`,
    );
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
