/**
 * Fault injection shared by the three exchange simulators (Deribit, OKX, Bybit): the switches each
 * server consults (silence window, subscription refusal, REST failures) and the test-facing hooks
 * built over a server's connections. Each server keeps its own protocol-specific reactions (which
 * error a refused subscribe gets, what a failed REST call answers, the garbage frames it sends).
 */
import { performance } from 'node:perf_hooks';
import type { WebSocket } from 'ws';

/** The mutable fault state of one simulator. Times on performance.now() (ms). */
export class FaultSwitches {
  private silencedUntil = 0;
  private restFailuresLeft = 0;
  /** While true, subscribe requests are refused (each protocol answers its own error). */
  rejecting = false;

  /** True inside a silence window: send nothing, ignore requests, close nothing. */
  silenced(): boolean {
    return performance.now() < this.silencedUntil;
  }

  /** Extend the silence window to at least `ms` from now; returns its end (performance.now() ms). */
  silenceFor(ms: number): number {
    this.silencedUntil = Math.max(this.silencedUntil, performance.now() + Math.max(0, ms));
    return this.silencedUntil;
  }

  /** Make the next `n` REST requests fail (n < 0 counts as 0). */
  failRest(n: number): void {
    this.restFailuresLeft = Math.max(0, n);
  }

  /** Consume one pending REST failure; true when this request must fail. */
  takeRestFailure(): boolean {
    if (this.restFailuresLeft <= 0) return false;
    this.restFailuresLeft--;
    return true;
  }
}

/** Test hooks of a simulator (every exchange). */
export interface SimulatorFaults {
  /** The server closes every socket abruptly (TCP reset, close code 1006 on the client). */
  dropAllConnections(): void;
  /** For `ms`: send nothing (no notifications, responses or heartbeats), ignore requests, close nothing. */
  silence(ms: number): void;
  /** While on, subscribe requests are answered with the exchange's rate-limit error. */
  rejectSubscriptions(on: boolean): void;
  /** Send `n` garbage frames (truncated JSON, text, binary, wrong shapes) to every connection. */
  malformedFrames(n: number): void;
  /** The next `n` REST requests fail with the exchange's rate-limit answer (no-op without REST). */
  restFailures(n: number): void;
  /** Open connections. */
  connections(): number;
  /** Subscriptions summed over connections. */
  subscriptions(): number;
}

/** What {@link simulatorFaults} needs of a server. */
export interface FaultTarget<C extends { readonly ws: WebSocket }> {
  readonly switches: FaultSwitches;
  readonly conns: ReadonlySet<C>;
  /** The server's own send (it drops frames while silenced or backed up); returns whether sent. */
  readonly send: (c: C, frame: string | Buffer) => boolean;
  /** Garbage frames of that protocol, sent in turn by malformedFrames. */
  readonly garbage: readonly (string | Buffer)[];
  /** Subscriptions held by one connection. */
  readonly subscriptionsOf: (c: C) => number;
  /** Extra reaction when a silence starts (e.g. forget a pending heartbeat), with its end time. */
  readonly onSilence?: (until: number) => void;
}

/** The test-facing fault hooks of one simulator over its connections and switches. */
export function simulatorFaults<C extends { readonly ws: WebSocket }>(t: FaultTarget<C>): SimulatorFaults {
  return {
    dropAllConnections: () => {
      for (const c of t.conns) c.ws.terminate();
    },
    silence: (ms) => {
      const until = t.switches.silenceFor(ms);
      t.onSilence?.(until);
    },
    rejectSubscriptions: (on) => {
      t.switches.rejecting = on;
    },
    malformedFrames: (n) => {
      for (const c of t.conns) for (let i = 0; i < n; i++) t.send(c, t.garbage[i % t.garbage.length]!);
    },
    restFailures: (n) => t.switches.failRest(n),
    connections: () => t.conns.size,
    subscriptions: () => {
      let n = 0;
      for (const c of t.conns) n += t.subscriptionsOf(c);
      return n;
    },
  };
}

/**
 * The garbage frames of one protocol for {@link SimulatorFaults.malformedFrames}, in the order sent: a truncated frame
 * of the protocol, plain text, binary bytes, a frame of the protocol with a wrong body (unknown instrument, garbage
 * data), a JSON array.
 */
export function garbageFrames(truncated: string, wrongBody: string): Array<string | Buffer> {
  return [truncated, 'not json at all', Buffer.from([0xde, 0xad, 0xbe, 0xef, 0x00, 0xff]), wrongBody, '[1,2,3]'];
}
