/**
 * The history store's cache of rendered series text by UTC day (issue 24's "30 days of 1-minute series < 100 ms"):
 * a series answer is the concatenation of per-day fragments (src/history/seriesText.ts), and a whole day that the
 * store has not written to since its fragment was rendered is served from here instead of DuckDB. Measured on this
 * machine (2 cores), 30 days at 1 minute of one constant maturity (43,200 points, 11.4 MB of JSON): the query alone
 * 12 to 20 ms, moving its 11.4 MB string out of DuckDB 70 to 80 ms, the JSON built in JS from the columns 100 to 140 ms;
 * the text kept is what saves those.
 *
 * Correctness rests on versions, not on time: every committed write of iVSummary rows bumps the version of each
 * (key, UTC day) it touched (HistoryStore.write, after the commit), a deletion bumps every version, and a fragment
 * is served only while the version it was rendered at is still the current one. A fragment rendered from data that
 * a later write changed is therefore never served, whatever the interleaving (the version is read before the query).
 *
 * Bounded by bytes (string lengths; the texts are ASCII), least recently used first out.
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
  private clearedAt = 0;
  private readonly last = new Map<string, number>();

  /** The version of (key, day): changes whenever a committed write or a deletion may have changed that day's rows. */
  version(key: string, day: number): number {
    return Math.max(this.last.get(`${key}|${day}`) ?? 0, this.clearedAt);
  }

  /** Record a committed write of rows of `key` observed at `obsS` (Unix s). */
  touched(key: string, obsS: number): void {
    this.last.set(`${key}|${Math.floor(obsS / 86400)}`, ++this.counter);
  }

  /** Record a deletion (or any change) that may touch any day of any key. */
  clearedAll(): void {
    this.clearedAt = ++this.counter;
    this.last.clear();
  }
}

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

  /** Keep `text` under `id`, rendered at `version`; evicts the least recently used beyond the byte bound. */
  set(id: string, version: number, text: string): void {
    if (text.length > this.maxBytes) return;
    const old = this.entries.get(id);
    if (old) this.remove(id, old.text);
    this.entries.set(id, { text, version });
    this.bytes += text.length;
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
    this.bytes -= text.length;
  }
}
