/**
 * Messages per second of each exchange feed, from its cumulative message count (FeedStats.messages) sampled
 * whenever someone asks (a /metrics scrape, a dashboard tick): the rate is the count difference over the
 * time between the oldest and the newest sample of a sliding window. No timer of its own.
 */

/** One sample: wall-clock Unix seconds and the cumulative count then. */
interface Sample {
  readonly t: number;
  readonly n: number;
}

export class FeedRates {
  private readonly samples = new Map<string, Sample[]>();

  /**
   * @param windowS how far back samples are kept, seconds (default 10)
   * @param minSpanS the shortest span that gives a rate, seconds (default 0.5)
   * @param minStepS a new sample is kept only this long after the previous one, seconds (default 0.2)
   */
  constructor(
    private readonly windowS = 10,
    private readonly minSpanS = 0.5,
    private readonly minStepS = 0.2,
  ) {}

  /**
   * Record the cumulative message count `messages` of `key` at wall-clock `nowS` (Unix seconds) and return
   * the messages per second over the window, or null while the samples span less than `minSpanS`.
   * A count that goes down (a restarted feed) restarts the window.
   */
  rate(key: string, messages: number, nowS: number): number | null {
    let arr = this.samples.get(key);
    if (!arr) this.samples.set(key, (arr = []));
    const last = arr[arr.length - 1];
    if (last && messages < last.n) arr.length = 0;
    const newest = arr[arr.length - 1];
    if (!newest || nowS - newest.t >= this.minStepS) arr.push({ t: nowS, n: messages });
    while (arr.length > 2 && nowS - arr[0]!.t > this.windowS) arr.shift();
    const first = arr[0]!;
    const span = nowS - first.t;
    if (span < this.minSpanS) return null;
    return (messages - first.n) / span;
  }
}
