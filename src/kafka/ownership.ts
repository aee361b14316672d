/**
 * Pair ownership of sharded calibrators (PAIRS set; docs/events.md "Sharded calibrators").
 *
 * Mechanism: Kafka's own consumer-group protocol, no home-made cluster protocol. Every calibrator of a deployment
 * joins one consumer group (`<prefix>volsurf-calibrators`) subscribed to the topic `<prefix>calibrator-assignments`,
 * which has one partition per supported (source, pair) (partition i = {@link ALL_SOURCE_PAIRS}[i]; nothing is ever
 * produced to it: the partitions are only the unit of assignment). The group coordinator (broker) gives each
 * partition to at most one live member per generation; a member's pairs are the partitions assigned to it.
 * The assignment strategy ({@link pairOwnershipAssigner}, run by the group leader as any kafkajs assigner) gives a
 * partition only to a member whose PAIRS name it, keeps it with its current holder (sticky: a calibrator joining
 * never takes a pair from a live owner), and otherwise to the eligible member with the fewest pairs so far.
 *
 * Exactly one owner at a time:
 * - a member stops publishing a pair BEFORE it (re)joins the group (the assigner's `protocol()` is called at every
 *   JoinGroup, and it revokes everything first), and on any rebalance, crash, stop or disconnect event; the new
 *   assignment is only computed after every member has rejoined (eager rebalance) or been evicted;
 * - a member that cannot reach the coordinator stops publishing once its last successful heartbeat is older than
 *   {@link LEASE_FRACTION} of the session timeout, i.e. before the coordinator evicts it and gives its pairs away.
 * The remaining window is a member whose process is paused longer than that (a stop-the-world of seconds) and then
 * publishes one batch before noticing: Kafka's transactional fencing would close it, at the price of transactional
 * publishing; documented as a limit.
 * A calibrator stopped for good leaves the group (LeaveGroup): its pairs are reassigned at once to any other
 * calibrator whose PAIRS name them (a hot standby), otherwise nobody publishes them and API replicas turn them stale.
 */
import kafkajs, { type Admin, type Consumer, type Kafka } from 'kafkajs';
import { Counter, Gauge, Registry } from 'prom-client';
import { ALL_SOURCE_PAIRS, pairKey, type Pair, type Source, type SourcePair } from '../domain/markets.js';
import { backoffMs, sleep, silentLogger, type KafkaLogger } from './topics.js';

// kafkajs is CommonJS: take the assigner protocol codecs from the default export.
const { AssignerProtocol } = kafkajs;

/** Name of the assignment strategy (every member must offer the same one). */
export const PAIR_ASSIGNER_NAME = 'VolsurfPairOwnership';
/** A member releases its pairs when its last successful heartbeat is older than this fraction of the session timeout. */
export const LEASE_FRACTION = 0.6;

/** Topic and group names of a deployment prefix. */
export function ownershipNames(prefix = ''): { readonly topic: string; readonly groupId: string } {
  return { topic: `${prefix}calibrator-assignments`, groupId: `${prefix}volsurf-calibrators` };
}

/** Partition index of a (source, pair) in the assignments topic; -1 when unsupported. */
export function pairPartition(source: Source, pair: Pair): number {
  return ALL_SOURCE_PAIRS.findIndex((p) => p.source === source && p.pair.base === pair.base && p.pair.quote === pair.quote);
}

/** What a member tells the group leader (JSON in the member metadata's userData). */
interface MemberClaim {
  /** Partitions (pair indices) its PAIRS name. */
  readonly wants: number[];
  /** Partitions it held after the previous generation (stickiness). */
  readonly holds: number[];
}

/**
 * The kafkajs partition assigner of pair ownership (see the module docstring for the rule).
 * @param claim this member's claim, read at every JoinGroup
 * @param onJoin called at every JoinGroup before the claim is sent (the member revokes its pairs there)
 */
export function pairOwnershipAssigner(claim: () => MemberClaim, onJoin: () => void) {
  return () => ({
    name: PAIR_ASSIGNER_NAME,
    version: 0,
    async assign({ members, topics }: { members: Array<{ memberId: string; memberMetadata: Buffer }>; topics: string[] }) {
      const claims = members
        .map((m) => {
          let c: MemberClaim = { wants: [], holds: [] };
          try {
            const meta = AssignerProtocol.MemberMetadata.decode(m.memberMetadata);
            if (meta?.userData && meta.userData.length > 0) c = JSON.parse(meta.userData.toString('utf8')) as MemberClaim;
          } catch {
            /* a member with unreadable metadata claims nothing */
          }
          return { memberId: m.memberId, wants: new Set(c.wants), holds: new Set(c.holds) };
        })
        .sort((a, b) => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0));
      const assigned = new Map<string, number[]>(claims.map((c) => [c.memberId, []]));
      for (let i = 0; i < ALL_SOURCE_PAIRS.length; i++) {
        const eligible = claims.filter((c) => c.wants.has(i));
        if (eligible.length === 0) continue;
        const holder = eligible.find((c) => c.holds.has(i));
        const owner = holder ?? eligible.reduce((best, c) => (assigned.get(c.memberId)!.length < assigned.get(best.memberId)!.length ? c : best));
        assigned.get(owner.memberId)!.push(i);
      }
      const topic = topics[0]!;
      return claims.map((c) => ({
        memberId: c.memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 0, assignment: { [topic]: assigned.get(c.memberId)! }, userData: Buffer.alloc(0) }),
      }));
    },
    protocol({ topics }: { topics: string[] }) {
      onJoin();
      return {
        name: PAIR_ASSIGNER_NAME,
        metadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics, userData: Buffer.from(JSON.stringify(claim())) }),
      };
    },
  });
}

/** Inputs of {@link PairOwnership}. */
export interface PairOwnershipOptions {
  readonly kafka: Kafka;
  /** The pairs this calibrator may own (PAIRS). */
  readonly pairs: readonly SourcePair[];
  readonly prefix?: string;
  readonly replicationFactor?: number;
  /** Group session timeout, ms (default 6000: the broker's group.min.session.timeout.ms). */
  readonly sessionTimeoutMs?: number;
  readonly logger?: KafkaLogger;
  /** Called with the owned pairs whenever they change. */
  readonly onChange?: (owned: readonly SourcePair[]) => void;
}

/** Ownership state, for /ready and logs. */
export interface OwnershipStats {
  /** True once a first assignment was received. */
  readonly assigned: boolean;
  readonly owned: readonly string[];
  /** PAIRS this member may own but does not (another calibrator holds them). */
  readonly standby: readonly string[];
  readonly generations: number;
  readonly lastError: string | null;
}

/**
 * A calibrator's membership in the ownership group. `owns()` says whether it may publish a pair now.
 * Start with {@link PairOwnership.start}; the broker may be absent (retries in the background).
 */
export class PairOwnership {
  private readonly names: ReturnType<typeof ownershipNames>;
  private readonly logger: KafkaLogger;
  private readonly sessionTimeoutMs: number;
  private readonly wants: number[];
  private active = new Set<number>();
  private held = new Set<number>();
  private everAssigned = false;
  private generations = 0;
  private lastLeaseAt = 0;
  private lastError: string | null = null;
  private consumer: Consumer | null = null;
  private stopped = false;
  private readonly abort = new AbortController();
  private loopDone: Promise<void> | null = null;
  private leaseTimer: NodeJS.Timeout | null = null;
  private restartRequested = false;
  private generationsSeen = 0;
  /**
   * Prometheus series of the ownership (exposed on the calibrator's /metrics):
   * `volsurf_calibrator_pair_owned{source,pair}` 1 when this calibrator owns the pair now, 0 for a pair of its PAIRS
   * it does not own (standby); `volsurf_calibrator_ownership_generations_total`: group generations joined
   * (rebalances).
   */
  readonly registry = new Registry();

  constructor(private readonly opts: PairOwnershipOptions) {
    this.names = ownershipNames(opts.prefix);
    this.logger = opts.logger ?? silentLogger;
    this.sessionTimeoutMs = opts.sessionTimeoutMs ?? 6000;
    this.wants = opts.pairs.map((p) => pairPartition(p.source, p.pair)).filter((i) => i >= 0);
    const self = this;
    new Gauge({
      name: 'volsurf_calibrator_pair_owned',
      help: 'Whether this calibrator owns the pair now (1) or is its standby (0), for each pair of its PAIRS',
      labelNames: ['source', 'pair'],
      registers: [this.registry],
      collect() {
        for (const i of self.wants) {
          const p = ALL_SOURCE_PAIRS[i]!;
          this.set({ source: p.source, pair: `${p.pair.base}/${p.pair.quote}` }, self.active.has(i) ? 1 : 0);
        }
      },
    });
    new Counter({
      name: 'volsurf_calibrator_ownership_generations_total',
      help: 'Consumer-group generations this calibrator joined in the ownership group (each rebalance adds one)',
      registers: [this.registry],
      collect() {
        this.inc(self.generations - self.generationsSeen);
        self.generationsSeen = self.generations;
      },
    });
  }

  /** Join the group in the background (returns at once). */
  start(): this {
    if (this.loopDone) throw new Error('PairOwnership.start called twice');
    this.leaseTimer = setInterval(() => this.checkLease(), 250);
    this.leaseTimer.unref();
    this.loopDone = this.loop().catch((err: unknown) => this.logger.error({ err }, 'pair ownership loop crashed (bug)'));
    return this;
  }

  /** Whether this calibrator owns (source, pair) now (may publish it). */
  owns(source: Source, pair: Pair): boolean {
    return this.active.has(pairPartition(source, pair));
  }

  /** The pairs owned now. */
  owned(): SourcePair[] {
    return [...this.active].sort((a, b) => a - b).map((i) => ALL_SOURCE_PAIRS[i]!);
  }

  stats(): OwnershipStats {
    const label = (i: number): string => pairKey(ALL_SOURCE_PAIRS[i]!.source, ALL_SOURCE_PAIRS[i]!.pair);
    return {
      assigned: this.everAssigned,
      owned: [...this.active].sort((a, b) => a - b).map(label),
      standby: this.wants.filter((i) => !this.active.has(i)).map(label),
      generations: this.generations,
      lastError: this.lastError,
    };
  }

  /** Release every pair and leave the group (its pairs go to a standby at once). Bounded: ~5 s. */
  async close(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    this.setActive(new Set());
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    const c = this.consumer;
    this.consumer = null;
    if (c) await Promise.race([c.disconnect().catch(() => {}), sleep(5000)]);
    if (this.loopDone) await Promise.race([this.loopDone, sleep(1000)]);
  }

  private setActive(next: Set<number>): void {
    const same = next.size === this.active.size && [...next].every((i) => this.active.has(i));
    this.active = next;
    if (!same) {
      this.logger.info({ owned: this.stats().owned, standby: this.stats().standby }, 'calibrator pair ownership changed');
      this.opts.onChange?.(this.owned());
    }
  }

  private checkLease(): void {
    if (this.active.size > 0 && Date.now() - this.lastLeaseAt > LEASE_FRACTION * this.sessionTimeoutMs) {
      this.logger.warn({ lastHeartbeatMsAgo: Date.now() - this.lastLeaseAt }, 'no heartbeat from the group coordinator: releasing owned pairs');
      this.setActive(new Set());
    }
  }

  private async loop(): Promise<void> {
    let attempt = 0;
    while (!this.stopped) {
      if (!this.consumer || this.restartRequested) {
        this.restartRequested = false;
        this.setActive(new Set());
        const old = this.consumer;
        this.consumer = null;
        if (old) await Promise.race([old.disconnect().catch(() => {}), sleep(5000)]);
        try {
          await this.connect();
          attempt = 0;
        } catch (err) {
          this.lastError = (err as Error)?.message ?? String(err);
          this.logger.warn({ err: this.lastError }, 'cannot join the calibrator ownership group yet; retrying');
          await sleep(backoffMs(attempt++), this.abort.signal);
          continue;
        }
      }
      await sleep(500, this.abort.signal);
    }
  }

  private async ensureTopic(admin: Admin): Promise<void> {
    const n = ALL_SOURCE_PAIRS.length;
    const existing = new Set(await admin.listTopics());
    if (!existing.has(this.names.topic)) {
      try {
        await admin.createTopics({
          waitForLeaders: true,
          topics: [
            {
              topic: this.names.topic,
              numPartitions: n,
              replicationFactor: this.opts.replicationFactor ?? 1,
              configEntries: [{ name: 'retention.ms', value: String(3_600_000) }],
            },
          ],
        });
      } catch (err) {
        // another calibrator created it meanwhile
        if (!/already exists/i.test((err as Error)?.message ?? '')) throw err;
      }
    }
    const offsets = await admin.fetchTopicOffsets(this.names.topic);
    if (offsets.length !== n) {
      throw new Error(`topic ${this.names.topic} has ${offsets.length} partitions; pair ownership needs exactly ${n} (one per supported pair): delete it and let a calibrator recreate it`);
    }
  }

  private async connect(): Promise<void> {
    const admin = this.opts.kafka.admin();
    await admin.connect();
    try {
      await this.ensureTopic(admin);
    } finally {
      await admin.disconnect().catch(() => {});
    }
    const consumer = this.opts.kafka.consumer({
      groupId: this.names.groupId,
      sessionTimeout: this.sessionTimeoutMs,
      rebalanceTimeout: 2 * this.sessionTimeoutMs,
      heartbeatInterval: Math.max(200, Math.floor(this.sessionTimeoutMs / 6)),
      maxWaitTimeInMs: 200,
      allowAutoTopicCreation: false,
      partitionAssigners: [
        pairOwnershipAssigner(
          () => ({ wants: this.wants, holds: [...this.held] }),
          () => this.setActive(new Set()),
        ),
      ],
      retry: { retries: 10, initialRetryTime: 200, maxRetryTime: 2000 },
    });
    const { GROUP_JOIN, HEARTBEAT, REBALANCING, CRASH, STOP, DISCONNECT } = consumer.events;
    consumer.on(GROUP_JOIN, (e) => {
      const parts = new Set<number>((e.payload.memberAssignment[this.names.topic] ?? []).map(Number));
      this.generations++;
      this.everAssigned = true;
      this.held = parts;
      this.lastLeaseAt = Date.now();
      this.lastError = null;
      this.setActive(parts);
    });
    consumer.on(HEARTBEAT, () => {
      this.lastLeaseAt = Date.now();
    });
    consumer.on(REBALANCING, () => this.setActive(new Set()));
    consumer.on(STOP, () => this.setActive(new Set()));
    consumer.on(DISCONNECT, () => this.setActive(new Set()));
    consumer.on(CRASH, (e) => {
      this.setActive(new Set());
      this.lastError = (e.payload.error as Error)?.message ?? 'crash';
      const restart = (e.payload as { restart?: boolean }).restart;
      this.logger.warn({ err: this.lastError, restart }, 'calibrator ownership consumer crashed');
      if (!restart) this.restartRequested = true;
    });
    await consumer.connect();
    await consumer.subscribe({ topics: [this.names.topic], fromBeginning: false });
    await consumer.run({ autoCommit: false, eachMessage: async () => {} });
    this.consumer = consumer;
    this.logger.info({ group: this.names.groupId, topic: this.names.topic, pairs: this.stats().standby }, 'joined the calibrator ownership group');
  }
}
