/**
 * The history store's cache of rendered series text by UTC day (issue 24's "30 days of 1-minute series < 100 ms"):
 * a series answer is the concatenation of per-day fragments (src/history/seriesText.ts), and a whole day that the
 * store has not written to since its fragment was rendered is served from here instead of DuckDB. Measured on this
 * machine (2 cores), 30 days at 1 minute of one constant maturity (43,200 points, 11.4 MB of JSON): the query alone
 * 12 to 20 ms, moving its 11.4 MB string out of DuckDB 70 to 80 ms, the JSON built in JS from the columns 100 to 140 ms;
 * the text kept is what saves those.
 *
 * Correctness rests on versions, not on time: every committed write of iVSummary rows bumps the version of each
 * (key, UTC day) it touched (HistoryStore.write, after the commit), a deletion bumps the versions of the days it reached, and a fragment
 * is served only while the version it was rendered at is still the current one. A fragment rendered from data that
 * a later write changed is therefore never served, whatever the interleaving (the version is read before the query).
 *
 * Bounded by bytes (string lengths, the texts being ASCII, plus a fixed cost per entry: a range of empty days is not
 * free), least recently used first out.
 */

/** Counters of a {@link RenderedDays} cache (metrics). */
export interface RenderedDaysStats {
  readonly hits: number;
  readonly misses: number;
  readonly entries: number;
  readonly bytes: number;
}

/** Versions of the iVSummary rows by (key, UTC day), bumped on writes; see the module docstring. */
export class DayVersions {
  private counter = 0;
  /** Days up to this one (UTC day number) may have lost rows to a deletion, at version {@link deletedAt}. */
  private deletedThroughDay = -Infinity;
  private deletedAt = 0;
  private readonly last = new Map<string, number>();

  /** The version of (key, day): changes whenever a committed write or a deletion may have changed that day's rows. */
  version(key: string, day: number): number {
    const written = this.last.get(`${key}|${day}`) ?? 0;
    return day <= this.deletedThroughDay ? Math.max(written, this.deletedAt) : written;
  }

  /** Record a committed write of rows of `key` observed at `obsS` (Unix s). */
  touched(key: string, obsS: number): void {
    this.last.set(`${key}|${Math.floor(obsS / 86400)}`, ++this.counter);
  }

  /**
   * Record a deletion of rows observed before `obsS` (Unix s), any key (the compaction's retention): the days up to
   * the one holding `obsS` change version; later days keep theirs (a month's answer stays cached across compactions).
   */
  deletedBefore(obsS: number): void {
    this.deletedThroughDay = Math.max(this.deletedThroughDay, Math.floor(obsS / 86400));
    this.deletedAt = ++this.counter;
    for (const k of this.last.keys()) if (Number(k.slice(k.lastIndexOf('|') + 1)) <= this.deletedThroughDay) this.last.delete(k);
  }
}

/** What an entry costs beyond its text (its key, the map's entry, the object): counted so that empty days are not free. */
const ENTRY_OVERHEAD_BYTES = 160;

/** A byte-bounded LRU of rendered day fragments, each with the {@link DayVersions} version it was rendered at. */
export class RenderedDays {
  private readonly entries = new Map<string, { text: string; version: number }>();
  private bytes = 0;
  private hits = 0;
  private misses = 0;

  /** @param maxBytes the most text kept (string lengths); 0 keeps nothing */
  constructor(private readonly maxBytes: number) {}

  /** The fragment kept under `id` if it was rendered at `version`, else undefined (a stale one is dropped). */
  get(id: string, version: number): string | undefined {
    const e = this.entries.get(id);
    if (e && e.version === version) {
      this.entries.delete(id);
      this.entries.set(id, e); // most recently used last
      this.hits++;
      return e.text;
    }
    if (e) this.remove(id, e.text);
    this.misses++;
    return undefined;
  }

  /**
   * Keep `text` under `id`, rendered at `version`; evicts the least recently used beyond the byte bound (each entry
   * counted as its text plus its key and a fixed overhead). Nothing is kept larger than the bound, or with a bound of 0.
   */
  set(id: string, version: number, text: string): void {
    if (cost(id, text) > this.maxBytes) return;
    const old = this.entries.get(id);
    if (old) this.remove(id, old.text);
    this.entries.set(id, { text, version });
    this.bytes += cost(id, text);
    for (const [k, e] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.remove(k, e.text);
    }
  }

  /** Hits, misses, entries and bytes kept. */
  stats(): RenderedDaysStats {
    return { hits: this.hits, misses: this.misses, entries: this.entries.size, bytes: this.bytes };
  }

  private remove(id: string, text: string): void {
    this.entries.delete(id);
    this.bytes -= cost(id, text);
  }
}

/** Bytes an entry is counted for: its text, its key and {@link ENTRY_OVERHEAD_BYTES}. */
function cost(id: string, text: string): number {
  return text.length + id.length + ENTRY_OVERHEAD_BYTES;
}
