/**
 * Dashboard sessions (issue 14 section 4): what a browser holds in its `volsurf_session` cookie after
 * logging in at /login with an API key. Never the key itself: a token signed with a secret derived from
 * the key the user logged in with:
 *
 *   token  = `v1.<keyId>.<expiresAtS>.<nonce>.<mac>`
 *   secret = HMAC-SHA256(apiKey, "vol-surface-service dashboard session v1")
 *   mac    = base64url(HMAC-SHA256(secret, "v1.<keyId>.<expiresAtS>.<nonce>"))
 *
 * `keyId` is the key's public id (12 hex digits of its SHA-256, as in the logs), `expiresAtS` Unix
 * seconds, `nonce` 16 random bytes (base64url). Stateless on purpose: every replica configured with the
 * same keys accepts the token (no sticky sessions behind a load balancer), removing a key from the
 * configuration ends its sessions at the next restart, and a restart does not log anyone out.
 * Logout revokes the token in this process (kept until its expiry) and clears the cookie. A long-lived
 * response opened with a session (the dashboard's event stream) is ended when the session expires or is
 * revoked ({@link DashboardSessions.watch}), so a logged-out browser does not keep receiving data.
 * MACs are compared with `crypto.timingSafeEqual` on equal-length buffers.
 * Source: RFC 2104 (HMAC), RFC 6265bis (cookies, SameSite), OWASP Session Management Cheat Sheet.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** Name of the session cookie. */
export const SESSION_COOKIE = 'volsurf_session';

/** Default session lifetime, s (12 h: a working day; the user logs in again afterwards). */
export const DEFAULT_SESSION_TTL_S = 12 * 3600;

/** Most revoked tokens remembered at once (oldest expiry evicted first); bounds memory under logout floods. */
const MAX_REVOKED = 100_000;

const DERIVATION_LABEL = 'vol-surface-service dashboard session v1';

/** Public id of an API key: the first 12 hex digits of its SHA-256 (what logs and rate-limit buckets show). */
export function keyIdOf(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest().subarray(0, 6).toString('hex');
}

/** Options of {@link DashboardSessions}. */
export interface SessionOptions {
  /** Lifetime of a session from login, s (default {@link DEFAULT_SESSION_TTL_S}). */
  readonly ttlS?: number;
  /** Clock in Unix ms (default Date.now); tests move it to expire sessions. */
  readonly now?: () => number;
}

/** A session just issued: the cookie value and when it expires (Unix s). */
export interface IssuedSession {
  readonly token: string;
  readonly expiresAtS: number;
}

/**
 * Issues and verifies dashboard session tokens for a set of API keys (see the module docstring).
 * @throws Error from the constructor when `ttlS` is not a positive finite number.
 */
export class DashboardSessions {
  readonly ttlS: number;
  private readonly now: () => number;
  private readonly secrets = new Map<string, Buffer>();
  /** mac -> expiresAtS of revoked tokens. */
  private readonly revoked = new Map<string, number>();
  /** mac -> callbacks ending the responses served with that token (see watch). */
  private readonly watchers = new Map<string, Set<() => void>>();

  constructor(keys: readonly string[], opts: SessionOptions = {}) {
    this.ttlS = opts.ttlS ?? DEFAULT_SESSION_TTL_S;
    if (!(this.ttlS > 0) || !Number.isFinite(this.ttlS)) throw new Error(`session ttlS must be a positive number of seconds (got ${this.ttlS})`);
    this.now = opts.now ?? Date.now;
    for (const k of keys) this.secrets.set(keyIdOf(k), createHmac('sha256', k).update(DERIVATION_LABEL).digest());
  }

  /**
   * A new session for the key of id `keyId` (from KeyRing.match).
   * @throws Error when `keyId` is not one of the configured keys.
   */
  issue(keyId: string): IssuedSession {
    const secret = this.secrets.get(keyId);
    if (!secret) throw new Error('unknown key id');
    const expiresAtS = Math.floor(this.now() / 1000) + Math.round(this.ttlS);
    const payload = `v1.${keyId}.${expiresAtS}.${randomBytes(16).toString('base64url')}`;
    return { token: `${payload}.${mac(secret, payload)}`, expiresAtS };
  }

  /** The key id of a valid, unexpired, unrevoked token; null otherwise (never throws). */
  verify(token: unknown): string | null {
    const parsed = this.parse(token);
    if (!parsed) return null;
    if (parsed.expiresAtS * 1000 <= this.now()) return null;
    if (this.revoked.has(parsed.mac)) return null;
    return parsed.keyId;
  }

  /**
   * Call `end` once when the (valid) session `token` expires or is revoked in this process; the returned
   * function cancels it (call it when the response ends by itself). Expiry is timed with setTimeout from
   * this instance's clock (a timer that does not keep the process alive). An invalid token ends at once.
   */
  watch(token: unknown, end: () => void): () => void {
    const parsed = this.parse(token);
    if (!parsed || this.verify(token) === null) {
      end();
      return () => {};
    }
    let done = false;
    const fire = () => {
      if (done) return;
      done = true;
      cancel();
      end();
    };
    const set = this.watchers.get(parsed.mac) ?? new Set<() => void>();
    set.add(fire);
    this.watchers.set(parsed.mac, set);
    const timer = setTimeout(fire, Math.min(2 ** 31 - 1, Math.max(0, parsed.expiresAtS * 1000 - this.now())));
    timer.unref();
    const cancel = () => {
      done = true;
      clearTimeout(timer);
      set.delete(fire);
      if (set.size === 0 && this.watchers.get(parsed.mac) === set) this.watchers.delete(parsed.mac);
    };
    return cancel;
  }

  /** Revoke a token in this process (logout): it no longer verifies and its watched responses end. A token that does not verify is ignored. */
  revoke(token: unknown): void {
    const parsed = this.parse(token);
    if (!parsed) return;
    for (const fire of [...(this.watchers.get(parsed.mac) ?? [])]) fire();
    this.prune();
    if (this.revoked.size >= MAX_REVOKED) {
      // evict the revocation that expires first (it is the least useful)
      let first: string | null = null;
      let min = Infinity;
      for (const [m, e] of this.revoked) if (e < min) [first, min] = [m, e];
      if (first) this.revoked.delete(first);
    }
    this.revoked.set(parsed.mac, parsed.expiresAtS);
  }

  /** Number of revocations remembered (expired ones are forgotten). */
  revokedCount(): number {
    this.prune();
    return this.revoked.size;
  }

  private prune(): void {
    const nowS = this.now() / 1000;
    for (const [m, e] of this.revoked) if (e <= nowS) this.revoked.delete(m);
  }

  private parse(token: unknown): { keyId: string; expiresAtS: number; mac: string } | null {
    if (typeof token !== 'string' || token.length > 256) return null;
    const parts = token.split('.');
    if (parts.length !== 5 || parts[0] !== 'v1') return null;
    const [, keyId, exp, nonce, presented] = parts as [string, string, string, string, string];
    if (!/^[0-9a-f]{12}$/.test(keyId) || !/^[0-9]{1,12}$/.test(exp) || !/^[A-Za-z0-9_-]{22}$/.test(nonce)) return null;
    const secret = this.secrets.get(keyId);
    if (!secret) return null;
    const expected = Buffer.from(mac(secret, `v1.${keyId}.${exp}.${nonce}`), 'utf8');
    const got = Buffer.from(presented, 'utf8');
    if (got.length !== expected.length || !timingSafeEqual(got, expected)) return null;
    return { keyId, expiresAtS: Number(exp), mac: presented };
  }
}

function mac(secret: Buffer, payload: string): string {
  return createHmac('sha256', secret).update(payload, 'utf8').digest('base64url');
}
