/**
 * What the dashboard's event stream sends to one tab: the full state once, then only what changed, so that
 * an open tab stays light on the wire (issue 13: under 10 KB/s at the default rate).
 *
 * Events (Server-Sent Events, WHATWG HTML "Server-sent events"; data = one JSON document):
 * - `state`: the whole {@link DashboardState} plus `focusExpiry`, at connection and whenever the selection,
 *   the set of models held or the presence of a surface changes;
 * - `patch`: the changes since the last event: top-level members whose value changed (`unavailable`,
 *   `market`, `options`, `forwardCurve`, `selection` never: that is a new `state`), the surface header and
 *   term structure when the surface changed, the smiles that changed (the focused expiry at every check,
 *   the other expiries at most every `overviewEveryMs`, 10 s: the small multiples and the heatmap refresh slower),
 *   the listed order of expiries, and new funding points only (appended by the page);
 * - `feeds`: the feed-status rows that changed (a row is the whole {@link FeedPanel} of one exchange).
 * Smiles carry the selected model's fitted curve only (`fits`, `fitDeltas`): the overview cards and the heatmap
 * draw that model; the focused smile carries every model's curve when the tab asks for them (`others`).
 * Apply a patch with {@link applyPatch} (the page does the same in dashboard.js).
 */
import type { DashboardState, FeedPanel, SmileView } from './state.js';

/** One Server-Sent Event to write. */
export interface StreamEvent {
  readonly event: 'state' | 'patch' | 'feeds';
  readonly data: string;
}

type Surface = NonNullable<DashboardState['surface']>;

/** A `patch` event's document. */
export interface DashboardPatch {
  readonly generatedAt: number;
  readonly unavailable?: DashboardState['unavailable'];
  readonly market?: DashboardState['market'];
  readonly options?: DashboardState['options'];
  readonly forwardCurve?: DashboardState['forwardCurve'];
  /** Changed surface members; `smiles` holds the changed smiles only, `order` the listed expiries in order. */
  readonly surface?: Partial<Omit<Surface, 'smiles'>> & { smiles?: SmileView[]; order?: number[] };
  /** New funding points per instrument (oldest first), and the instrument's period. */
  readonly funding?: ReadonlyArray<{ instrumentId: string; intervalHours: number; periodsPerYear: number; append: ReadonlyArray<{ timestamp: number; interest: number }> }>;
}

/** Options of {@link DashboardDiffer}. */
export interface DashboardDifferOptions {
  /** Smiles other than the focused expiry are sent at most this often, ms. Default 10 000. */
  readonly overviewEveryMs?: number;
  /** Send every model's curve for the focused smile (the page's "other models"); default false. */
  readonly others?: boolean;
}

/** The expiry to focus by default: the listed expiry nearest 30 days (a trader's usual first look), or null. */
export function defaultFocusExpiry(smiles: ReadonlyArray<{ expirationTimestamp: number; T: number }>): number | null {
  let best: { e: number; d: number } | null = null;
  for (const s of smiles) {
    const d = Math.abs(s.T * 365 - 30);
    if (!best || d < best.d) best = { e: s.expirationTimestamp, d };
  }
  return best?.e ?? null;
}

/** Per-tab change tracker of the dashboard stream (module docstring). */
export class DashboardDiffer {
  private readonly overviewEveryMs: number;
  private readonly others: boolean;
  private structureKey: string | null = null;
  private top = new Map<string, string>();
  private header = new Map<string, string>();
  private smileJson = new Map<number, string>();
  private order = '';
  private fundingLast = new Map<string, number>();
  private overviewAt = -Infinity;
  private feedRows = new Map<string, string>();

  constructor(opts: DashboardDifferOptions = {}) {
    this.overviewEveryMs = opts.overviewEveryMs ?? 10_000;
    this.others = opts.others ?? false;
  }

  /**
   * The event for `state` at `nowMs`: a full `state` (first call, or the structure changed), a `patch`, or
   * null when nothing changed. `focus` is the expiry the tab looks at (null: {@link defaultFocusExpiry}).
   */
  next(state: DashboardState, nowMs: number, focus: number | null): StreamEvent | null {
    const sf = state.surface;
    const key = JSON.stringify([state.selection, sf ? sf.model : null, sf ? sf.models : null]);
    const focusExpiry = sf ? (focus !== null && sf.smiles.some((s) => s.expirationTimestamp === focus) ? focus : defaultFocusExpiry(sf.smiles)) : null;
    if (sf) state = { ...state, surface: { ...sf, smiles: sf.smiles.map((s) => (this.others && s.expirationTimestamp === focusExpiry ? s : selectedOnly(s, sf.model))) } };
    if (key !== this.structureKey) {
      this.structureKey = key;
      this.remember(state, nowMs);
      return { event: 'state', data: JSON.stringify({ ...state, focusExpiry }) };
    }
    const patch: { -readonly [K in keyof DashboardPatch]: DashboardPatch[K] } = { generatedAt: state.generatedAt };
    let changed = false;
    for (const k of ['unavailable', 'market', 'options', 'forwardCurve'] as const) {
      const j = JSON.stringify(state[k]);
      if (this.top.get(k) !== j) {
        this.top.set(k, j);
        (patch as Record<string, unknown>)[k] = state[k];
        changed = true;
      }
    }
    if (state.surface) {
      const sf = state.surface;
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(sf)) {
        if (k === 'smiles') continue;
        const j = JSON.stringify(v);
        if (this.header.get(k) !== j) {
          this.header.set(k, j);
          out[k] = v;
        }
      }
      const order = sf.smiles.map((s) => s.expirationTimestamp);
      const orderKey = order.join(',');
      if (orderKey !== this.order) {
        this.order = orderKey;
        out['order'] = order;
        for (const e of [...this.smileJson.keys()]) if (!order.includes(e)) this.smileJson.delete(e);
      }
      const focused = focusExpiry;
      const overview = nowMs - this.overviewAt >= this.overviewEveryMs;
      if (overview) this.overviewAt = nowMs;
      const smiles: SmileView[] = [];
      for (const s of sf.smiles) {
        if (!overview && s.expirationTimestamp !== focused && this.smileJson.has(s.expirationTimestamp)) continue;
        const j = JSON.stringify(s);
        if (this.smileJson.get(s.expirationTimestamp) === j) continue;
        this.smileJson.set(s.expirationTimestamp, j);
        smiles.push(s);
      }
      if (smiles.length) out['smiles'] = smiles;
      if (Object.keys(out).length) {
        patch.surface = out as DashboardPatch['surface'];
        changed = true;
      }
    }
    const funding: Array<{ instrumentId: string; intervalHours: number; periodsPerYear: number; append: Array<{ timestamp: number; interest: number }> }> = [];
    for (const f of state.funding) {
      const last = this.fundingLast.get(f.instrumentId) ?? -Infinity;
      const append = f.points.filter((p) => p.timestamp > last);
      if (append.length === 0) continue;
      this.fundingLast.set(f.instrumentId, append[append.length - 1]!.timestamp);
      funding.push({ instrumentId: f.instrumentId, intervalHours: f.intervalHours, periodsPerYear: f.periodsPerYear, append });
    }
    if (funding.length) {
      patch.funding = funding;
      changed = true;
    }
    return changed ? { event: 'patch', data: JSON.stringify(patch) } : null;
  }

  /** The `feeds` event with the rows that changed since the last one (null: none changed). */
  feeds(rows: readonly FeedPanel[], generatedAt: number): StreamEvent | null {
    const changed = rows.filter((r) => {
      const j = JSON.stringify(r);
      if (this.feedRows.get(r.source) === j) return false;
      this.feedRows.set(r.source, j);
      return true;
    });
    return changed.length ? { event: 'feeds', data: JSON.stringify({ generatedAt, feeds: changed }) } : null;
  }

  private remember(state: DashboardState, nowMs: number): void {
    this.top = new Map((['unavailable', 'market', 'options', 'forwardCurve'] as const).map((k) => [k, JSON.stringify(state[k])]));
    this.header = new Map();
    this.smileJson = new Map();
    this.order = '';
    const sf = state.surface;
    if (sf) {
      for (const [k, v] of Object.entries(sf)) if (k !== 'smiles') this.header.set(k, JSON.stringify(v));
      for (const s of sf.smiles) this.smileJson.set(s.expirationTimestamp, JSON.stringify(s));
      this.order = sf.smiles.map((s) => s.expirationTimestamp).join(',');
    }
    this.overviewAt = nowMs;
    this.fundingLast = new Map(state.funding.map((f) => [f.instrumentId, f.points.length ? f.points[f.points.length - 1]!.timestamp : -Infinity]));
    for (const r of state.feeds) this.feedRows.set(r.source, JSON.stringify(r));
  }
}

/** A smile with the fitted curve of `model` only. */
function selectedOnly(s: SmileView, model: string): SmileView {
  const pick = <T>(r: Readonly<Partial<Record<string, T>>>): Partial<Record<string, T>> => (r[model] === undefined ? {} : { [model]: r[model] });
  return { ...s, fits: pick(s.fits), fitDeltas: pick(s.fitDeltas) };
}

/** Maximum funding points the page keeps per instrument (as the full state sends). */
const FUNDING_KEEP = 240;

/**
 * Apply a `patch` to a state (a new object; `state` is not modified): what the page does on a patch event.
 * Smiles are replaced by expiry and ordered by `order`; funding points appended (newest {@link FUNDING_KEEP} kept).
 */
export function applyPatch(state: DashboardState, patch: DashboardPatch): DashboardState {
  const next: Record<string, unknown> = { ...state, generatedAt: patch.generatedAt };
  for (const k of ['unavailable', 'market', 'options', 'forwardCurve'] as const) if (k in patch) next[k] = patch[k];
  if (patch.surface && state.surface) {
    const { smiles: changed, order, ...rest } = patch.surface;
    const byExpiry = new Map(state.surface.smiles.map((s) => [s.expirationTimestamp, s]));
    for (const s of changed ?? []) byExpiry.set(s.expirationTimestamp, s);
    const keys = order ?? state.surface.smiles.map((s) => s.expirationTimestamp);
    next['surface'] = { ...state.surface, ...rest, smiles: keys.map((e) => byExpiry.get(e)).filter((s): s is SmileView => s !== undefined) };
  }
  if (patch.funding) {
    const funding = state.funding.map((f) => ({ ...f, points: [...f.points] }));
    for (const f of patch.funding) {
      let mine = funding.find((x) => x.instrumentId === f.instrumentId);
      if (!mine) funding.push((mine = { instrumentId: f.instrumentId, intervalHours: f.intervalHours, periodsPerYear: f.periodsPerYear, points: [] }));
      mine.points.push(...f.append);
      if (mine.points.length > FUNDING_KEEP) mine.points.splice(0, mine.points.length - FUNDING_KEEP);
    }
    next['funding'] = funding;
  }
  return next as unknown as DashboardState;
}
