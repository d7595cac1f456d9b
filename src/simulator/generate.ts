import type { Report } from '../schema/wire-format.js';
import { DAY_MS } from './advance.js';
import { Dataset } from './dataset.js';
import type { DatasetSource, SourceEntry } from './dataset-snapshot.js';
import { seededRandom, unitHash, type Rng } from './seeded-random.js';

/** The simulated "now" of every generated dataset: its reports were created before this instant. */
export const GENERATED_NOW_MS = Date.UTC(2025, 0, 1);
/** Extra wire fields of generated reports (strings), after the modelled ones: `extra` keys and CSV columns. */
export const GENERATED_EXTRA_COLUMNS = ['channel', 'district'] as const;
/** Largest `n` accepted by {@link generateDataset}. */
export const GENERATED_MAX = 100_000_000;

const SALT_STATUS = 11;
const SALT_DESTINATION = 12;
const SALT_JITTER = 13;
const SALT_UPDATED = 14;
const SALT_RECORD = 15;

/**
 * A synthetic dataset of `n` reports for benchmarks and tests (up to millions), in constant memory: report
 * `i` is derived from `(seed, i)` whenever it is needed, nothing is stored.
 *
 * Shape: ids `R-00000000`…; `createdAt` strictly increasing with `i`, spread over the year before
 * 2025-01-01 (at most one report per second … one per day for tiny `n`); ~93 % with a location in one of
 * six cities; seven destinations (30 % `ROAD_CONTROL`); statuses by age (recent ones mostly `SUBMITTED`/
 * `IN_PROGRESS`, old ones mostly `RESOLVED`/`REJECTED`); German/English text with umlauts; two extra string
 * fields `channel` and `district`. An NDJSON line is 400–520 bytes.
 *
 * Advancing days adds reports at the same creation rate (`n` per year, at least one per day).
 *
 * @throws RangeError when `n` is not an integer from 0 to {@link GENERATED_MAX}
 */
export function generateDataset(n: number, seed = 1): Dataset {
  if (!Number.isInteger(n) || n < 0 || n > GENERATED_MAX) {
    throw new RangeError(`n must be an integer from 0 to ${GENERATED_MAX}, got ${n}`);
  }
  if (!Number.isInteger(seed)) throw new RangeError(`seed must be an integer, got ${seed}`);
  return new Dataset(new GeneratedSource(n, seed), seed);
}

class GeneratedSource implements DatasetSource {
  readonly kind = 'generated';
  readonly label: string;
  readonly fingerprint: string;
  readonly count: number;
  readonly nowMs = GENERATED_NOW_MS;
  readonly extraColumns: readonly string[] = GENERATED_EXTRA_COLUMNS;
  readonly #seed: number;
  readonly #stepMs: number;
  readonly #wholeSeconds: boolean;

  constructor(n: number, seed: number) {
    this.count = n;
    this.#seed = seed;
    this.label = `generated n=${n} seed=${seed}`;
    this.fingerprint = `gen${n}`;
    const spanDays = Math.min(365, Math.max(1, n));
    this.#stepMs = Math.max(1, Math.floor((spanDays * DAY_MS) / Math.max(1, n)));
    // With at least 2 s between reports, truncating to whole seconds keeps createdAt strictly increasing.
    this.#wholeSeconds = this.#stepMs >= 2000;
  }

  /** `createdAt` of slot `i` (also past `count`: days continue the same timeline). Strictly increasing. */
  createdAtMs(slot: number): number {
    const jitter = Math.floor(unitHash(this.#seed, slot, SALT_JITTER) * Math.floor(this.#stepMs / 2));
    const ms = GENERATED_NOW_MS - (this.count - slot) * this.#stepMs + jitter;
    return this.#wholeSeconds ? Math.floor(ms / 1000) * 1000 : ms;
  }

  entry(slot: number): SourceEntry {
    return { kind: 'report', report: this.report(slot), inDatabase: true };
  }

  statusAt(slot: number): string {
    if (slot >= this.count) return 'SUBMITTED';
    const ageDays = (GENERATED_NOW_MS - this.createdAtMs(slot)) / DAY_MS;
    const u = unitHash(this.#seed, slot, SALT_STATUS);
    if (ageDays < 2) return u < 0.75 ? 'SUBMITTED' : 'IN_PROGRESS';
    if (ageDays < 21)
      return u < 0.25 ? 'SUBMITTED' : u < 0.6 ? 'IN_PROGRESS' : u < 0.9 ? 'RESOLVED' : 'REJECTED';
    return u < 0.02 ? 'SUBMITTED' : u < 0.05 ? 'IN_PROGRESS' : u < 0.85 ? 'RESOLVED' : 'REJECTED';
  }

  destinationAt(slot: number): string {
    return pickWeighted(DESTINATIONS, unitHash(this.#seed, slot, SALT_DESTINATION)).code;
  }

  /** The full report of a slot. */
  report(slot: number): Report {
    const createdAtMs = this.createdAtMs(slot);
    const status = this.statusAt(slot);
    let updatedAtMs = createdAtMs;
    if (status !== 'SUBMITTED') {
      const ageMs = GENERATED_NOW_MS - createdAtMs;
      const delay = unitHash(this.#seed, slot, SALT_UPDATED) * Math.min(ageMs, 20 * DAY_MS);
      updatedAtMs = createdAtMs + Math.floor(delay / 1000) * 1000;
    }
    return syntheticReport(this.#seed, slot, {
      id: generatedId(slot),
      status,
      destination: this.destinationAt(slot),
      createdAtMs,
      updatedAtMs,
      extras: true,
    });
  }

  *newestFirst(): Generator<number> {
    for (let slot = this.count - 1; slot >= 0; slot--) yield slot;
  }

  slotOfId(id: string): number | undefined {
    const m = /^R-(\d{8,})$/.exec(id);
    if (!m) return undefined;
    const slot = Number(m[1]);
    return slot < this.count ? slot : undefined;
  }

  sameIdSlots(): readonly number[] {
    return [];
  }

  newReports(_seed: number, _day: number, fromMs: number, toMs: number, firstSlot: number): Report[] {
    const out: Report[] = [];
    for (let slot = firstSlot; ; slot++) {
      const createdAtMs = this.createdAtMs(slot);
      if (createdAtMs >= toMs) break;
      // Slots are consumed in order; a report of an earlier window cannot be left behind, but stay safe.
      if (createdAtMs < fromMs) continue;
      out.push(this.report(slot));
    }
    return out;
  }
}

/** Id of generated slot `i`: `R-` and at least eight digits. */
export function generatedId(slot: number): string {
  return `R-${String(slot).padStart(8, '0')}`;
}

/** The fields {@link syntheticReport} takes from its caller; the rest is derived from `(seed, slot)`. */
export interface SyntheticFields {
  id: string;
  status: string;
  /** Destination code; derived from `(seed, slot)` when left out. */
  destination?: string;
  /** Category code; derived from `(seed, slot)` and the destination when left out. */
  category?: string | null;
  createdAtMs: number;
  updatedAtMs: number;
  /** Whether to add the extra fields `channel` and `district`. */
  extras: boolean;
}

/**
 * A plausible report for `(seed, slot)`: category, description, address and location are derived from the
 * pair. Used by the generator and for the reports a file dataset gains when days advance.
 */
export function syntheticReport(seed: number, slot: number, fields: SyntheticFields): Report {
  const rng = seededRandom(seed, slot, SALT_RECORD);
  const destination =
    DESTINATIONS.find((d) => d.code === fields.destination) ??
    pickWeighted(DESTINATIONS, unitHash(seed, slot, SALT_DESTINATION));
  const category = rng.pick(destination.categories);
  const city = rng.pick(CITIES);
  const hasLocation = rng.next() >= 0.07;
  const lat = round6(city.lat + (rng.next() - 0.5) * 0.12);
  const lng = round6(city.lng + (rng.next() - 0.5) * 0.18);
  const district = rng.pick(city.districts);
  return {
    id: fields.id,
    status: fields.status,
    destination: fields.destination ?? destination.code,
    category: fields.category === undefined ? category.code : fields.category,
    description: describe(rng, category.sentence),
    lat: hasLocation ? lat : null,
    lng: hasLocation ? lng : null,
    address: `${rng.pick(STREETS)} ${1 + rng.int(180)}, ${city.zip + rng.int(90)} ${city.name}`,
    createdAt: isoString(fields.createdAtMs),
    updatedAt: isoString(fields.updatedAtMs),
    extra: fields.extras ? { channel: rng.pick(CHANNELS), district } : null,
  };
}

function describe(rng: Rng, opening: string): string {
  // Two distinct remarks after the category sentence: ~120–220 characters.
  const first = rng.int(REMARKS.length);
  const second = (first + 1 + rng.int(REMARKS.length - 1)) % REMARKS.length;
  return `${opening} ${REMARKS[first]} ${REMARKS[second]}`;
}

const TWO_DIGITS = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0'));
const dayPrefixes = new Map<number, string>();

/**
 * `new Date(ms).toISOString()` for years 1970–9999, several times faster: the date part of each day is
 * cached (a year of reports has a few hundred days) and only the time is formatted (measured:
 * `toISOString` alone cost 0.4 µs a call, a fifth of an export line).
 */
export function isoString(ms: number): string {
  const day = Math.floor(ms / DAY_MS);
  let prefix = dayPrefixes.get(day);
  if (prefix === undefined) {
    if (dayPrefixes.size > 10_000) dayPrefixes.clear();
    prefix = new Date(day * DAY_MS).toISOString().slice(0, 11);
    dayPrefixes.set(day, prefix);
  }
  const inDay = ms - day * DAY_MS;
  const seconds = Math.floor(inDay / 1000);
  const millis = inDay - seconds * 1000;
  return (
    `${prefix}${TWO_DIGITS[Math.floor(seconds / 3600)]}:${TWO_DIGITS[Math.floor(seconds / 60) % 60]}:` +
    `${TWO_DIGITS[seconds % 60]}.${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}Z`
  );
}

function round6(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}

function pickWeighted<T extends { weight: number }>(items: readonly T[], u: number): T {
  let acc = 0;
  for (const item of items) {
    acc += item.weight;
    if (u < acc) return item;
  }
  return items[items.length - 1] as T;
}

interface Destination {
  code: string;
  weight: number;
  categories: ReadonlyArray<{ code: string; sentence: string }>;
}

const DESTINATIONS: readonly Destination[] = [
  {
    code: 'ROAD_CONTROL',
    weight: 0.3,
    categories: [
      { code: 'POTHOLE', sentence: 'Tiefes Schlagloch auf der Fahrbahn.' },
      { code: 'DAMAGED_ROAD_SIGN', sentence: 'Verkehrsschild umgefahren und kaum noch lesbar.' },
      { code: 'TRAFFIC_LIGHT_FAULT', sentence: 'Traffic light stuck on red for all directions.' },
      { code: 'ILLEGAL_PARKING', sentence: 'Cars parked on the cycle lane every weekday morning.' },
    ],
  },
  {
    code: 'WASTE_MANAGEMENT',
    weight: 0.2,
    categories: [
      { code: 'ILLEGAL_DUMPING', sentence: 'Sperrmüll illegal am Straßenrand abgeladen.' },
      { code: 'OVERFLOWING_BIN', sentence: 'Public bin overflowing, rubbish blown across the square.' },
      { code: 'GLASS_CONTAINER', sentence: 'Glascontainer voll, Flaschen stehen daneben.' },
    ],
  },
  {
    code: 'STREET_LIGHTING',
    weight: 0.12,
    categories: [
      { code: 'STREETLIGHT_OUT', sentence: 'Straßenlaterne seit Tagen defekt.' },
      { code: 'FLICKERING_LIGHT', sentence: 'Street lamp flickering all night long.' },
    ],
  },
  {
    code: 'PARKS_AND_GREENERY',
    weight: 0.12,
    categories: [
      { code: 'FALLEN_TREE', sentence: 'Ast nach dem Sturm auf den Gehweg gestürzt.' },
      { code: 'DAMAGED_PLAYGROUND', sentence: 'Swing on the playground has a broken chain.' },
      { code: 'OVERGROWN_PATH', sentence: 'Hecke wuchert über den Fußweg, Durchgang blockiert.' },
    ],
  },
  {
    code: 'PUBLIC_TRANSPORT',
    weight: 0.08,
    categories: [
      { code: 'BUS_SHELTER_DAMAGE', sentence: 'Glass panel of the bus shelter smashed.' },
      { code: 'TIMETABLE_MISSING', sentence: 'Fahrplanaushang an der Haltestelle fehlt.' },
    ],
  },
  {
    code: 'WATER_AND_SEWER',
    weight: 0.1,
    categories: [
      { code: 'BLOCKED_DRAIN', sentence: 'Gully verstopft, bei Regen steht das Wasser knöcheltief.' },
      { code: 'WATER_LEAK', sentence: 'Water bubbling up between the paving stones.' },
    ],
  },
  {
    code: 'NOISE_CONTROL',
    weight: 0.08,
    categories: [
      { code: 'CONSTRUCTION_NOISE', sentence: 'Baulärm schon vor 6 Uhr morgens.' },
      { code: 'NIGHT_NOISE', sentence: 'Loud music from the bar until 3 am.' },
    ],
  },
];

const REMARKS = [
  'Seit mehreren Tagen unverändert, bitte prüfen.',
  'Große Gefahr für Radfahrer, besonders bei Dunkelheit.',
  'Reported again by residents; the situation is getting worse.',
  'Anwohner haben sich bereits beschwert – dringend!',
  'Near the school entrance, many children pass here every morning.',
  'Foto in der App angehängt. Danke für die schnelle Bearbeitung!',
  'Der Schaden ist etwa 40 cm breit und 10 cm tief.',
  'Next to the bakery at the corner (Bäckerei Müller).',
  'Happens mostly at night, after 22:00.',
  'Zufahrt für Rettungsfahrzeuge ist eingeschränkt.',
  'Older people with walkers can hardly get past.',
  'Bitte auch die Nachbarstraße überprüfen, dort sieht es ähnlich aus.',
  'Already reported last month, nothing happened so far.',
  'Übergang zur Straßenbahnhaltestelle betroffen.',
];

const CITIES = [
  {
    name: 'Köln',
    zip: 50667,
    lat: 50.9375,
    lng: 6.9603,
    districts: ['Innenstadt', 'Ehrenfeld', 'Mülheim', 'Nippes'],
  },
  { name: 'Berlin', zip: 10115, lat: 52.52, lng: 13.405, districts: ['Mitte', 'Friedrichshain', 'Neukölln'] },
  {
    name: 'München',
    zip: 80331,
    lat: 48.1374,
    lng: 11.5755,
    districts: ['Altstadt', 'Schwabing', 'Giesing'],
  },
  { name: 'Hamburg', zip: 20095, lat: 53.5511, lng: 9.9937, districts: ['Altona', 'Eimsbüttel', 'Harburg'] },
  { name: 'Zürich', zip: 8001, lat: 47.3769, lng: 8.5417, districts: ['Altstetten', 'Oerlikon', 'Wiedikon'] },
  {
    name: 'Düsseldorf',
    zip: 40213,
    lat: 51.2277,
    lng: 6.7735,
    districts: ['Bilk', 'Derendorf', 'Oberkassel'],
  },
];

const STREETS = [
  'Hauptstraße',
  'Bahnhofstraße',
  'Königsallee',
  'Müllerstraße',
  'Grüner Weg',
  'Schillerstraße',
  'Am Mühlenbach',
  'Lindenallee',
  'Friedrich-Ebert-Platz',
  'Goethestraße',
];

const CHANNELS = ['APP', 'WEB', 'PHONE', 'EMAIL'];
