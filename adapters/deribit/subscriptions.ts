/**
 * Deribit's subscriptions on one socket (docs.deribit.com: public/subscribe, public/unsubscribe), for the feed's
 * description (adapters/deribit/feed.ts).
 */
import type { ExchangeFeed, FeedConnection } from '../shared/exchangeFeed.js';
import type { JsonRpcClient } from '../shared/jsonRpc.js';
import { SubscribeResultSchema } from './wire.js';

/**
 * public/unsubscribe then public/subscribe of one socket's changes, in paced batches; `confirmed` keeps what Deribit
 * confirmed. A channel not confirmed when a call fails is taken out of `conn.sent`, so that the next sync (the
 * listing refresh) asks for it again. @throws the failing call's error (the session or the sync reports it)
 */
export async function subscribeOnSocket(
  feed: ExchangeFeed,
  conn: FeedConnection,
  c: JsonRpcClient,
  o: { toSub: readonly string[]; toUnsub: readonly string[]; confirmed: Set<string>; batchSize: number; paceMs: number },
): Promise<void> {
  const { toSub, toUnsub, confirmed } = o;
  toSub.forEach((t) => conn.sent.add(t)), toUnsub.forEach((t) => conn.sent.delete(t));
  try {
    await c.callInBatches('public/unsubscribe', toUnsub, o.batchSize, o.paceMs, (b) => b.forEach((x) => confirmed.delete(x)));
    await c.callInBatches('public/subscribe', toSub, o.batchSize, o.paceMs, (batch, result) => {
      const ok = SubscribeResultSchema.safeParse(result);
      if (!ok.success) throw new Error('public/subscribe: result is not a list of channels');
      for (const ch of ok.data) confirmed.add(ch);
      const missing = batch.filter((x) => !ok.data.includes(x));
      if (missing.length > 0) feed.logger.warn({ source: feed.source, missing: missing.length, example: missing[0] }, 'Deribit did not confirm some channels');
    });
  } catch (err) {
    for (const t of toSub) if (!confirmed.has(t)) conn.sent.delete(t);
    throw err;
  }
}
