/**
 * The book of a simulated exchange listing that the three chains (chains.ts, okxChains.ts, bybitChains.ts) keep: the
 * live instruments by name and the instruments expired within the last 3 days (what an exchange still answers for
 * expired instruments).
 */

const EXPIRED_KEPT_MS = 3 * 86_400_000;

/** Live instruments by name, and those expired within the last 3 days with the time they left (Unix ms). */
export class ListingBook<I> {
  /** Live instruments by name, in listing order. */
  readonly active = new Map<string, I>();
  private readonly expiredList: Array<{ inst: I; atMs: number }> = [];

  /** Instruments expired within the last 3 days, in the order they left. */
  expired(): I[] {
    return this.expiredList.map((e) => e.inst);
  }

  /**
   * Move every live instrument that `hasExpired` says has expired at nowMs (Unix ms) to the expired list, and forget
   * those that left more than 3 days before nowMs.
   * @returns the instruments moved now, in listing order
   */
  expire(nowMs: number, hasExpired: (inst: I) => boolean): I[] {
    const expired: I[] = [];
    for (const [name, inst] of this.active) {
      if (hasExpired(inst)) {
        this.active.delete(name);
        this.expiredList.push({ inst, atMs: nowMs });
        expired.push(inst);
      }
    }
    while (this.expiredList.length > 0 && this.expiredList[0]!.atMs < nowMs - EXPIRED_KEPT_MS) this.expiredList.shift();
    return expired;
  }
}
