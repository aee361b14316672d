// Live dashboard of the vol-surface service. Plain browser JavaScript, no build step. It opens the
// Server-Sent Events stream /dashboard/api/stream for the chosen (source, pair, model, focused expiry): a full
// `state` first, then `patch`es with what changed (src/dashboard/stream.ts) and `feeds` rows; it draws with
// ECharts (/dashboard/vendor/echarts.min.js). Every number comes from the server's state
// (src/dashboard/state.ts), computed as the REST API computes it; the page only interpolates the fitted grid
// for the heatmap and places the 24 h-ago delta pillars (below). IVs arrive as fractions, shown in %.
// As of a past time (the "As of" picker, UTC; `asOf` in the URL): the stream is closed and the page shows the
// state GET /dashboard/api/state?asOf= builds from the history store (what was served then), with a banner saying
// so, until "live" reopens the stream; a time with nothing served shows the API's message and keeps what was shown.
'use strict';

(function () {
  const $ = (id) => document.getElementById(id);
  // The models come from the server (state.options[].models: the list of src/domain/volatilityModels.ts in its order,
  // those with a surface): a new model needs no edit here. Colours by the model's place in that list.
  const MODEL_PALETTE = ['#2f6fde', '#d9480f', '#2b8a3e', '#7048e8', '#e67700', '#0c8599', '#c2255c'];
  const knownModels = [];
  const modelColor = (m) => {
    if (!knownModels.includes(m)) knownModels.push(m);
    return MODEL_PALETTE[knownModels.indexOf(m) % MODEL_PALETTE.length];
  };
  const num = (x) => typeof x === 'number' && Number.isFinite(x);
  const pct = (x, d = 2) => (num(x) ? (100 * x).toFixed(d) : '-');
  const signed = (x, d = 2) => (num(x) ? `${x >= 0 ? '+' : ''}${(100 * x).toFixed(d)}` : '-');
  const fmtPrice = (x) => (!num(x) ? '-' : x >= 1000 ? x.toLocaleString('en-US', { maximumFractionDigits: 1 }) : x >= 1 ? x.toFixed(3) : x.toPrecision(4));
  const fmtStrike = (x) => x.toLocaleString('en-US', { maximumFractionDigits: 4 });
  const fmtDate = (s) => new Date(s * 1000).toISOString().slice(0, 10);
  const fmtTime = (s) => new Date(s * 1000).toISOString().slice(11, 19);
  const fmtDateTime = (s) => `${fmtDate(s)} ${fmtTime(s)} UTC`;
  /** An age in s, min, h or d. */
  const fmtAge = (s) => {
    if (!num(s)) return '-';
    if (s < 90) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
    if (s < 5400) return `${(s / 60).toFixed(1)} min`;
    if (s < 172800) return `${(s / 3600).toFixed(1)} h`;
    return `${(s / 86400).toFixed(1)} d`;
  };
  const deltaLabel = (d) => (Math.abs(d - 0.5) < 1e-9 ? '50Δ' : d > 0.5 ? `${Math.round((1 - d) * 100)}P` : `${Math.round(d * 100)}C`);
  const dark = () => window.matchMedia && window.matchMedia('(prefers-color-scheme: dark)').matches;
  const narrow = () => window.innerWidth < 640;
  /** A strike axis label (k above 1000, rounded: the axis ends at unround strikes). */
  const fmtAxisStrike = (v) => (v >= 1000 ? `${+(v / 1000).toPrecision(6)}k` : +v.toPrecision(6));

  /** Exposed for the end-to-end test and for curious users (window.dashboard). */
  const dash = {
    state: null, feeds: [], updates: 0, patches: 0, feedUpdates: 0, connected: false, focus: null, axis: 'strike', surfaceAxis: 'delta',
    showOthers: false, compare: '', snapshots: {}, history: null, asOf: null, status: { kind: 'connecting', text: 'connecting' }, firstRenderMs: null,
    charts: { smile: null, history: null, term: null, surface: null, forward: null, funding: null, smiles: {} }, errors: [],
  };
  window.dashboard = dash;

  // ------------------------------------------------------------------ selection, stream, errors
  const query = new URLSearchParams(location.search);
  let es = null;
  let retryMs = 1000;
  let retryAt = null;
  let retryTimer = null;
  let everOpened = false;

  function selectionParams(withFocus) {
    const p = new URLSearchParams();
    for (const k of ['source', 'baseCurrency', 'quoteCurrency', 'volatilityModel']) if (query.get(k)) p.set(k, query.get(k));
    if (withFocus && dash.focus) p.set('expiry', String(dash.focus));
    if (withFocus && dash.showOthers) p.set('others', '1');
    return p;
  }

  /** (Re)load what the page shows: the live stream, or the state as of the chosen past time. */
  function connect() {
    if (dash.asOf !== null) void loadAsOf(dash.asOf);
    else connectLive();
  }

  /** Unix s of a datetime-local value read as UTC ('YYYY-MM-DDTHH:MM[:SS]'), or null. */
  function parseUtc(v) {
    if (!v) return null;
    const t = Date.parse(`${v.length === 16 ? `${v}:00` : v}Z`);
    return Number.isFinite(t) ? t / 1000 : null;
  }
  /** The datetime-local value (UTC, to the second) of Unix s `t`. */
  const utcValue = (t) => new Date(Math.floor(t) * 1000).toISOString().slice(0, 19);

  let asOfSeq = 0;
  /**
   * Show the state as of Unix s `t`: closes the live stream, fetches GET /dashboard/api/state?asOf=t. A refusal
   * (404 nothing served then, 400 a future time) shows the API's message and leaves the page as it was (live
   * goes on streaming).
   */
  async function loadAsOf(t) {
    const mine = ++asOfSeq;
    const wasLive = dash.asOf === null;
    const p = selectionParams(false);
    p.set('asOf', String(t));
    let res = null;
    let body = {};
    try {
      res = await fetch(`/dashboard/api/state?${p.toString()}`, { headers: { accept: 'application/json' } });
      body = await res.json();
    } catch {
      body = { message: 'the service did not answer' };
    }
    if (mine !== asOfSeq) return; // a later choice won
    if (!res || !res.ok) {
      showNotice(`Nothing to show as of ${fmtDateTime(t)}: ${body.message || `HTTP ${res ? res.status : '?'}`}`);
      dash.errors.push(body.message || 'refused');
      $('asof-input').value = dash.asOf !== null ? utcValue(dash.asOf) : '';
      if (dash.asOf === null) {
        // still live: drop a refused asOf from the link, and make sure the stream runs (a link opened at that time)
        query.delete('asOf');
        history.replaceState(null, '', query.toString() ? `?${query.toString()}` : location.pathname);
        if (!es) connectLive();
      }
      if (res && res.status === 400 && body.details && body.details.some((d) => /source|Currency|volatilityModel/.test(String(d.path)))) fallBack(body);
      return;
    }
    $('notice').hidden = true;
    if (wasLive) {
      if (es) es.close();
      es = null;
      clearTimeout(retryTimer);
      retryAt = null;
      dash.connected = false;
      dash.history = null;
    }
    if (dash.asOf !== t) dash.history = null;
    dash.asOf = t;
    query.set('asOf', String(t));
    dash.state = body;
    const smiles = body.surface ? body.surface.smiles : [];
    if (!smiles.some((x) => x.expirationTimestamp === dash.focus)) {
      // the expiry nearest 30 days, as the stream chooses
      let best = null;
      for (const x of smiles) if (!best || Math.abs(x.T - 30 / 365) < Math.abs(best.T - 30 / 365)) best = x;
      dash.focus = best ? best.expirationTimestamp : null;
    }
    dash.updates++;
    pinSelection(body);
    render();
  }

  /** Back to live: drop `asOf`, reopen the stream. */
  function goLive() {
    asOfSeq++;
    dash.asOf = null;
    query.delete('asOf');
    history.replaceState(null, '', query.toString() ? `?${query.toString()}` : location.pathname);
    $('asof-input').value = '';
    dash.history = null;
    connectLive();
    render();
  }

  function connectLive() {
    if (es) es.close();
    clearTimeout(retryTimer);
    retryAt = null;
    es = new EventSource(`/dashboard/api/stream?${selectionParams(true).toString()}`);
    es.addEventListener('open', () => {
      everOpened = true;
      retryMs = 1000;
      dash.connected = true;
      updateStatus();
    });
    es.addEventListener('error', () => onStreamError());
    es.addEventListener('state', (ev) => {
      if (dash.asOf !== null) return;
      const s = JSON.parse(ev.data);
      dash.state = s;
      if (s.focusExpiry && (!dash.focus || !s.surface || !s.surface.smiles.some((x) => x.expirationTimestamp === dash.focus))) dash.focus = s.focusExpiry;
      dash.updates++;
      pinSelection(s);
      render();
    });
    es.addEventListener('patch', (ev) => {
      if (dash.asOf !== null) return;
      applyPatch(JSON.parse(ev.data));
      dash.updates++;
      dash.patches++;
      render();
    });
    es.addEventListener('feeds', (ev) => {
      const f = JSON.parse(ev.data);
      const rows = new Map(dash.feeds.map((r) => [r.source, r]));
      for (const r of f.feeds) rows.set(r.source, r);
      dash.feeds = [...rows.values()];
      dash.feedUpdates++;
      renderFeeds();
      renderAge(f.generatedAt);
      updateStatus();
    });
    es.addEventListener('error', (ev) => {
      if (ev.data) showNotice(`Server: ${JSON.parse(ev.data).message}`);
    });
  }

  /** The stream failed: find out why (the state endpoint answers the same query with a status and the API's message). */
  async function onStreamError() {
    if (dash.asOf !== null) return; // the stream was closed on purpose
    dash.connected = false;
    if (es) es.close();
    es = null;
    updateStatus();
    let res = null;
    try {
      res = await fetch(`/dashboard/api/state?${selectionParams(false).toString()}`, { headers: { accept: 'application/json' } });
    } catch {
      res = null;
    }
    if (res && res.status === 401) {
      dash.status = { kind: 'auth', text: 'sign-in required' };
      showNotice('This dashboard needs a sign-in. ', { href: `/login?next=${encodeURIComponent(location.pathname + location.search)}`, text: 'Sign in' });
      updateStatus();
      return;
    }
    if (res && res.status === 400) {
      let body = {};
      try {
        body = await res.json();
      } catch {
        body = {};
      }
      fallBack(body);
      return;
    }
    scheduleReconnect();
  }

  /** A bad or unsupported link: show the API's message, drop the offending parameters, continue with a valid selection. */
  function fallBack(body) {
    const asked = selectionParams(false).toString() || '(no parameters)';
    const paths = (body.details || []).map((d) => String(d.path || '').replace(/^querystring\./, ''));
    const known = ['source', 'baseCurrency', 'quoteCurrency', 'volatilityModel'];
    let dropped = known.filter((k) => paths.some((p) => p === k || p.endsWith(`.${k}`)));
    if (dropped.includes('baseCurrency') || dropped.includes('quoteCurrency')) dropped = [...new Set([...dropped, 'baseCurrency', 'quoteCurrency'])];
    if (dropped.length === 0 || dropped.every((k) => !query.get(k))) dropped = known;
    for (const k of dropped) query.delete(k);
    showNotice(`The link asked for ${asked}: ${body.message || 'refused'} - showing ${query.toString() ? query.toString().replace(/&/g, ', ') : 'the default market'} instead.`);
    history.replaceState(null, '', query.toString() ? `?${query.toString()}` : location.pathname);
    dash.errors.push(body.message || 'refused');
    connect();
  }

  function scheduleReconnect() {
    retryAt = Date.now() + retryMs;
    retryTimer = setTimeout(connect, retryMs);
    retryMs = Math.min(retryMs * 2, 30000);
    updateStatus();
  }

  function showNotice(text, link) {
    const n = $('notice');
    n.hidden = false;
    n.textContent = text;
    if (link) {
      const a = document.createElement('a');
      a.href = link.href;
      a.textContent = link.text;
      n.appendChild(a);
    }
  }

  /** Keep the resolved selection in the URL: a reload or reconnect shows the same market. */
  function pinSelection(s) {
    if (!s.selection) return;
    const sel = s.selection;
    for (const [k, v] of [['source', sel.source], ['baseCurrency', sel.baseCurrency], ['quoteCurrency', sel.quoteCurrency], ['volatilityModel', sel.volatilityModel]]) query.set(k, v);
    history.replaceState(null, '', `?${query.toString()}`);
  }

  function applyPatch(p) {
    const s = dash.state;
    if (!s) return;
    s.generatedAt = p.generatedAt;
    for (const k of ['unavailable', 'market', 'options', 'forwardCurve']) if (k in p) s[k] = p[k];
    if (p.surface && s.surface) {
      const { smiles, order, ...rest } = p.surface;
      Object.assign(s.surface, rest);
      const by = new Map(s.surface.smiles.map((x) => [x.expirationTimestamp, x]));
      for (const x of smiles || []) by.set(x.expirationTimestamp, x);
      const keys = order || s.surface.smiles.map((x) => x.expirationTimestamp);
      s.surface.smiles = keys.map((e) => by.get(e)).filter(Boolean);
    }
    for (const f of p.funding || []) {
      let mine = s.funding.find((x) => x.instrumentId === f.instrumentId);
      if (!mine) s.funding.push((mine = { instrumentId: f.instrumentId, intervalHours: f.intervalHours, periodsPerYear: f.periodsPerYear, points: [] }));
      mine.points.push(...f.append);
      if (mine.points.length > 240) mine.points.splice(0, mine.points.length - 240);
    }
  }

  // ------------------------------------------------------------------ status
  function selectionFeed() {
    const s = dash.state;
    if (!s || !s.selection) return null;
    return dash.feeds.find((f) => f.source === s.selection.source) || null;
  }

  function updateStatus() {
    const s = dash.state;
    const b = $('live');
    const cd = $('countdown');
    let kind;
    let text;
    let count = '';
    const feed = selectionFeed();
    if (dash.status.kind === 'auth') {
      kind = 'bad';
      text = 'sign-in required';
    } else if (dash.asOf !== null) {
      kind = 'asof';
      text = `as of ${fmtDateTime(dash.asOf)} · paused`;
    } else if (!dash.connected) {
      kind = 'off';
      text = everOpened ? 'reconnecting' : 'connecting';
      if (retryAt) count = `in ${Math.max(1, Math.ceil((retryAt - Date.now()) / 1000))} s`;
    } else if (s && s.market && s.market.mode === 'replay') {
      kind = 'replay';
      const t = s.surface ? s.surface.observationTimestamp : null;
      text = `replay · historical${t ? ` · data of ${fmtDate(t)} ${fmtTime(t).slice(0, 5)} UTC` : ''}${s.market.finished ? ' · ended' : ''}`;
    } else if (feed && !feed.connected) {
      kind = 'bad';
      text = `${feed.source} feed down · reconnecting`;
      if (num(feed.nextAttemptInS)) count = `in ${Math.max(1, Math.ceil(feed.nextAttemptInS))} s (attempt ${(feed.reconnectAttempts || 0) + 1})`;
    } else if (s && s.unavailable && s.unavailable.reason === 'stale') {
      kind = 'bad';
      text = 'stale';
    } else if (s && s.unavailable) {
      kind = 'off';
      text = s.unavailable.reason === 'warming-up' ? 'warming up' : s.unavailable.reason;
    } else if (s && s.surface) {
      kind = 'on';
      text = s.market && s.market.mode === 'simulated' ? 'live · simulated' : s.market && s.market.mode === 'replica' ? 'live · replica' : 'live';
    } else {
      kind = 'off';
      text = 'waiting for data';
    }
    const prev = dash.status;
    dash.status = { kind: dash.status.kind === 'auth' ? 'auth' : kind, text };
    if (b.textContent !== text) b.textContent = text;
    b.className = `badge ${kind}`;
    b.dataset.kind = kind;
    cd.textContent = count;
    const stale = kind === 'bad' || (kind === 'off' && everOpened && !dash.connected);
    document.body.classList.toggle('data-stale', stale);
    if (prev.text !== text) b.setAttribute('title', text);
  }
  setInterval(() => {
    updateStatus();
    if (dash.state) renderAge(null);
  }, 1000);

  /** The as-of banner, the picker's value and bounds, the live button. */
  function renderAsOf(s) {
    const banner = $('asof-banner');
    const input = $('asof-input');
    const sf = s.surface;
    $('asof-live').disabled = dash.asOf === null;
    if (dash.asOf === null) {
      banner.hidden = true;
      // the picker cannot go past the data shown now
      if (sf) input.max = utcValue(sf.observationTimestamp);
      return;
    }
    if (document.activeElement !== input) input.value = utcValue(dash.asOf);
    banner.hidden = false;
    banner.dataset.asof = String(dash.asOf);
    banner.textContent = `As of ${fmtDateTime(dash.asOf)} — live updates paused. `;
    const more = document.createElement('span');
    more.className = 'muted';
    more.textContent = sf
      ? `Showing the ${sf.model} surface published at ${fmtDateTime(sf.observationTimestamp)} (seq ${sf.sequence}) and its 24 h changes, from the history store; market quotes are not kept there, so the smiles show the fitted curves. `
      : 'No surface was served then. ';
    banner.appendChild(more);
    const back = document.createElement('button');
    back.type = 'button';
    back.textContent = 'back to live';
    back.addEventListener('click', goLive);
    banner.appendChild(back);
  }

  // ------------------------------------------------------------------ selectors
  function fillSelect(el, values, current, labels) {
    const key = values.join('|') + (labels ? labels.join('|') : '');
    if (el.dataset.key !== key) {
      el.innerHTML = '';
      values.forEach((v, i) => {
        const o = document.createElement('option');
        o.value = v;
        o.textContent = labels ? labels[i] : v;
        el.appendChild(o);
      });
      el.dataset.key = key;
    }
    if (current !== undefined && current !== null) el.value = String(current);
  }

  /** The smile's coverage as the page shows it: as of a past time the store keeps no market quotes, so no quotes is not "partial". */
  function coverageOf(sm) {
    if (!sm.coverage) return null;
    if (dash.asOf !== null && sm.quotes.length === 0) return { ...sm.coverage, partial: false, oneSided: null, notKept: true };
    return sm.coverage;
  }

  function renderSelectors(s) {
    if (!s.selection) return;
    const sel = s.selection;
    const pair = `${sel.baseCurrency}/${sel.quoteCurrency}`;
    fillSelect($('sel-source'), [...new Set(s.options.map((o) => o.source))], sel.source);
    fillSelect($('sel-pair'), s.options.filter((o) => o.source === sel.source).map((o) => o.pair), pair);
    for (const o of s.options) for (const m of o.models || []) modelColor(m);
    const held = (s.options.find((o) => o.source === sel.source && o.pair === pair) || {}).models || [];
    const models = held.length > 0 ? [...held] : [...knownModels];
    if (!models.includes(sel.volatilityModel)) models.push(sel.volatilityModel);
    fillSelect($('sel-model'), models, sel.volatilityModel);
    const smiles = s.surface ? s.surface.smiles : [];
    fillSelect($('sel-expiry'), smiles.map((x) => x.expirationTimestamp), dash.focus, smiles.map((x) => `${fmtDate(x.expirationTimestamp)} · ${(x.T * 365).toFixed(1)} d${coverageOf(x) && coverageOf(x).partial ? ' · partial' : ''}`));
  }

  function onSelect() {
    const src = $('sel-source').value;
    const [base, quote] = ($('sel-pair').value || '').split('/');
    const pairs = dash.state ? dash.state.options.filter((o) => o.source === src).map((o) => o.pair) : [];
    query.set('source', src);
    if (pairs.includes(`${base}/${quote}`)) {
      query.set('baseCurrency', base);
      query.set('quoteCurrency', quote);
    } else {
      query.delete('baseCurrency');
      query.delete('quoteCurrency');
    }
    query.set('volatilityModel', $('sel-model').value || 'SVI');
    history.replaceState(null, '', `?${query.toString()}`);
    dash.focus = null;
    dash.history = null;
    dash.snapshots = {};
    connect();
  }

  function setFocus(e) {
    if (!e || e === dash.focus) return;
    dash.focus = e;
    dash.history = null;
    $('sel-compare').value = '';
    dash.compare = '';
    if (dash.asOf === null) connect(); // the stream sends the focused expiry at every check (an as-of state holds every smile)
    render();
  }

  // ------------------------------------------------------------------ charts: shared
  function chartIn(el, label) {
    let c = echarts.getInstanceByDom(el);
    if (!c) {
      c = echarts.init(el, dark() ? 'dark' : null, { renderer: 'canvas' });
      el.setAttribute('role', 'img');
    }
    if (label) el.setAttribute('aria-label', label);
    return c;
  }
  const base = (label) => ({
    animation: false,
    backgroundColor: 'transparent',
    aria: { enabled: true, label: { description: label } },
  });
  const legend = (extra) => ({ type: 'scroll', top: 0, left: 0, right: 0, itemWidth: 14, itemHeight: 8, textStyle: { fontSize: 11 }, ...extra });

  /** Tooltips that stay open across live updates: remember the hovered item by key, show it again after each update. */
  function keepTooltip(chart, name) {
    if (chart.__keep) return chart.__keep;
    const keep = { hover: null, data: {} };
    chart.on('mouseover', (p) => {
      if (p.componentType === 'series' && p.data && p.data.key !== undefined) keep.hover = { seriesId: p.seriesId, key: p.data.key };
    });
    chart.getZr().on('globalout', () => {
      keep.hover = null;
    });
    keep.restore = () => {
      if (!keep.hover) return;
      const h = keep.hover;
      setTimeout(() => {
        if (!keep.hover || chart.isDisposed()) return;
        const series = chart.getOption().series || [];
        const si = series.findIndex((s) => s.id === h.seriesId);
        if (si < 0) return;
        const di = (series[si].data || []).findIndex((d) => d && d.key === h.key);
        if (di < 0) return;
        chart.dispatchAction({ type: 'showTip', seriesIndex: si, dataIndex: di });
        dash.tooltipRestores = (dash.tooltipRestores || 0) + 1;
      }, 0);
    };
    chart.__keep = keep;
    dash[`keep_${name}`] = keep;
    return keep;
  }

  // Vertical bid-ask bars with caps (ECharts custom series).
  function errorBar(params, api) {
    const x = api.value(0);
    const lo = api.coord([x, api.value(1)]);
    const hi = api.coord([x, api.value(2)]);
    const w = 3;
    const style = { stroke: '#8a99a8', lineWidth: 1 };
    return {
      type: 'group',
      children: [
        { type: 'line', shape: { x1: lo[0], y1: lo[1], x2: hi[0], y2: hi[1] }, style },
        { type: 'line', shape: { x1: lo[0] - w, y1: lo[1], x2: lo[0] + w, y2: lo[1] }, style },
        { type: 'line', shape: { x1: hi[0] - w, y1: hi[1], x2: hi[0] + w, y2: hi[1] }, style },
      ],
    };
  }

  // Inverse standard normal CDF: P. J. Acklam's rational approximation (relative error < 1.15e-9), used only to
  // place the 24 h-ago delta pillars on the log-moneyness axis: k = sigma^2 T / 2 - sigma sqrt(T) N^-1(delta).
  function normInv(p) {
    const a = [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1, 2.506628277459239];
    const b = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
    const c = [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
    const d = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
    const pl = 0.02425;
    if (p < pl) {
      const q = Math.sqrt(-2 * Math.log(p));
      return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    }
    if (p > 1 - pl) {
      const q = Math.sqrt(-2 * Math.log(1 - p));
      return -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    }
    const q = p - 0.5;
    const r = q * q;
    return ((((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q) / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }

  // ------------------------------------------------------------------ rendering
  function render() {
    const s = dash.state;
    if (!s) return;
    renderSelectors(s);
    renderAsOf(s);
    const u = $('unavailable');
    if (s.unavailable) {
      u.hidden = false;
      u.textContent = `Not servable now (${s.unavailable.reason}): ${s.unavailable.message}`;
    } else u.hidden = true;
    const sf = s.surface;
    $('spot').textContent = sf ? fmtPrice(sf.spot) : s.forwardCurve ? fmtPrice(s.forwardCurve.spot) : '-';
    $('obs').textContent = sf ? `${fmtDate(sf.observationTimestamp)} ${fmtTime(sf.observationTimestamp)}` : '-';
    $('obs').dataset.value = sf ? String(sf.observationTimestamp) : '';
    $('seq').textContent = sf ? String(sf.sequence) : '-';
    $('seq').dataset.value = sf ? String(sf.sequence) : '';
    $('calib').textContent = sf ? `${sf.calibrationMs.toFixed(0)} ms (${sf.model})` : '-';
    $('updates').textContent = String(dash.updates);
    renderAge(s.generatedAt);
    rememberSnapshot();
    renderSmile();
    renderHistory();
    renderSmiles(sf);
    renderTerm(sf);
    renderSurface(sf);
    renderFitTable(sf);
    renderForward(s.forwardCurve);
    renderFunding(s.funding);
    renderFeeds();
    updateStatus();
    if (dash.firstRenderMs === null && sf) dash.firstRenderMs = performance.now();
  }

  let lastGenerated = null;
  function renderAge(generatedAt) {
    if (generatedAt !== null) lastGenerated = { server: generatedAt, local: Date.now() / 1000 };
    const sf = dash.state && dash.state.surface;
    const el = $('age');
    if (!sf || !lastGenerated) {
      el.textContent = '-';
      return;
    }
    if (dash.asOf !== null) {
      const before = Math.max(0, dash.asOf - sf.observationTimestamp);
      el.dataset.value = String(before);
      el.textContent = `${fmtAge(before)} before the chosen time`;
      return;
    }
    const now = lastGenerated.server + (Date.now() / 1000 - lastGenerated.local);
    const age = Math.max(0, now - sf.observationTimestamp);
    el.dataset.value = String(age);
    el.textContent = dash.state.market && dash.state.market.mode === 'replay' ? `${fmtAge(age)} (historical)` : fmtAge(age);
  }

  function focusedSmile() {
    const sf = dash.state && dash.state.surface;
    if (!sf) return null;
    return sf.smiles.find((x) => x.expirationTimestamp === dash.focus) || sf.smiles[0] || null;
  }
  function focusedTerm() {
    const sf = dash.state && dash.state.surface;
    return sf ? sf.term.find((t) => t.expirationTimestamp === dash.focus) || null : null;
  }

  /** Keep earlier smiles of the focused expiry received while the page is open (one a minute, two hours), for Compare. */
  function rememberSnapshot(force) {
    const sm = focusedSmile();
    const sf = dash.state && dash.state.surface;
    if (!sm || !sf) return;
    const list = (dash.snapshots[sm.expirationTimestamp] = dash.snapshots[sm.expirationTimestamp] || []);
    const last = list[list.length - 1];
    if (force || !last || sf.observationTimestamp - last.t >= 60) {
      if (last && last.seq === sf.sequence) return;
      list.push({ t: sf.observationTimestamp, seq: sf.sequence, model: sf.model, smile: sm });
      if (list.length > 120) list.shift();
    }
  }

  function xOf(axis, sm, K, delta) {
    if (axis === 'delta') return delta;
    if (axis === 'k') return Math.log(K / sm.forward);
    return K;
  }

  function dayAgoPillars(sm, t, axis) {
    const p = t && t.dayAgo;
    if (!p || !num(p.atmVol)) return [];
    const T = sm.T + 1 / 365; // the same expiry, one day longer then
    const out = [];
    const add = (d, vol, name) => {
      if (!num(vol) || vol <= 0) return;
      const k = (vol * vol * T) / 2 - vol * Math.sqrt(T) * normInv(d);
      const x = axis === 'delta' ? d : axis === 'k' ? k : sm.forward * Math.exp(k);
      out.push({ value: [x, 100 * vol], key: name, name });
    };
    const wing = (rr, bf, sign) => (num(rr) && num(bf) ? p.atmVol + bf + (sign * rr) / 2 : null);
    add(0.9, wing(p.delta10Skew, p.delta10Bfly, -1), '10P');
    add(0.75, wing(p.delta25Skew, p.delta25Bfly, -1), '25P');
    // ATM = forward ATM (K = F, k = 0), whose call delta is N(sigma sqrt(T) / 2)
    const atmDelta = 0.5 * (1 + erf((p.atmVol * Math.sqrt(T)) / 2 / Math.SQRT2));
    out.push({ value: [axis === 'delta' ? atmDelta : axis === 'k' ? 0 : sm.forward, 100 * p.atmVol], key: 'ATM', name: 'ATM' });
    add(0.25, wing(p.delta25Skew, p.delta25Bfly, 1), '25C');
    add(0.1, wing(p.delta10Skew, p.delta10Bfly, 1), '10C');
    return out.sort((a, b) => a.value[0] - b.value[0]);
  }
  // erf for N(x) of the ATM delta: Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), display only.
  function erf(x) {
    const s = Math.sign(x);
    const t = 1 / (1 + 0.3275911 * Math.abs(x));
    const y = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-x * x);
    return s * y;
  }

  function renderSmile() {
    const s = dash.state;
    const sf = s && s.surface;
    const sm = focusedSmile();
    const el = $('smile-chart');
    const axis = dash.axis;
    const model = sf ? sf.model : 'SVI';
    const label = sm ? `Smile of the ${fmtDate(sm.expirationTimestamp)} expiry: ${sm.quotes.length} market marks with bid/ask IV and the ${model} fit; x axis ${axis === 'k' ? 'log-moneyness' : axis === 'delta' ? 'call delta' : 'strike'}, y axis IV %` : 'Smile: no data yet';
    const chart = (dash.charts.smile = chartIn(el, label));
    const keep = keepTooltip(chart, 'smile');
    if (!sm) {
      chart.clear();
      $('smile-info').textContent = '';
      return;
    }
    const diag = sm.diagnostics && sm.diagnostics[model];
    const t = focusedTerm();
    $('smile-info').textContent = `${fmtDate(sm.expirationTimestamp)} · ${(sm.T * 365).toFixed(1)} d · F ${fmtPrice(sm.forward)} · ${model} RMSE ${diag ? diag.rmseVolPts.toFixed(2) : sm.rmseVolPts.toFixed(2)} vp · ${sm.quotes.length} quotes`;
    // flags: partial, one-sided, status, warnings
    const flags = [];
    const cov = coverageOf(sm);
    if (cov && cov.notKept) flags.push({ t: 'fitted curves only: market quotes are not kept in the history', bad: false });
    else if (cov && cov.oneSided) flags.push({ t: `one-sided: ${cov.oneSided} only`, bad: true });
    else if (cov && cov.partial) flags.push({ t: `partial: ${sm.quotes.length} quotes`, bad: true });
    if (diag && diag.status && diag.status !== 'fitted') flags.push({ t: `${model} ${diag.status}`, bad: diag.status !== 'repaired' });
    if (!sm.butterflyFree) flags.push({ t: 'butterfly arbitrage', bad: true });
    for (const w of (diag && diag.warnings) || []) flags.push({ t: w, bad: false });
    const fl = $('smile-flags');
    fl.innerHTML = '';
    for (const f of flags) {
      const span = document.createElement('span');
      span.className = `flag${f.bad ? ' bad' : ''}`;
      span.textContent = f.t;
      fl.appendChild(span);
    }
    const modelAt = new Map(sm.quotes.map((q) => [q.strike, q.modelIv]));
    const marks = sm.quotes
      .map((q) => ({ value: [xOf(axis, sm, q.strike, q.delta), 100 * q.markIv], key: `${q.optionType}${q.strike}`, q }))
      .filter((d) => num(d.value[0]));
    const bars = sm.quotes
      .filter((q) => num(q.bidIv) && num(q.askIv) && q.bidIv > 0)
      .map((q) => ({ value: [xOf(axis, sm, q.strike, q.delta), 100 * q.bidIv, 100 * q.askIv], key: `${q.optionType}${q.strike}`, q }))
      .filter((d) => num(d.value[0]));
    const models = Object.keys(sm.fits).filter((m) => m === model || dash.showOthers);
    const fitSeries = models.map((m) => ({
      id: `fit-${m}`,
      name: m === model ? `${m} fit` : m,
      type: 'line',
      showSymbol: true,
      symbolSize: m === model ? 3 : 2,
      data: sm.strikes
        .map((K, j) => ({ value: [xOf(axis, sm, K, sm.fitDeltas[m] ? sm.fitDeltas[m][j] : null), 100 * sm.fits[m][j]], key: `${m}${j}`, K, m }))
        .filter((d) => num(d.value[0])),
      lineStyle: { width: m === model ? 2.5 : 1.2, color: modelColor(m), opacity: m === model ? 1 : 0.7 },
      itemStyle: { color: modelColor(m) },
      z: m === model ? 4 : 3,
      tooltip: { formatter: (p) => `${p.data.m}<br>K ${fmtStrike(p.data.K)} · k ${Math.log(p.data.K / sm.forward).toFixed(3)}<br>IV ${p.value[1].toFixed(2)} %` },
    }));
    // the comparison overlay
    const overlays = [];
    if (dash.compare === 'day') {
      const pts = dayAgoPillars(sm, t, axis);
      if (pts.length) {
        overlays.push({
          id: 'cmp-day', name: `24 h ago (${fmtDateTime(sf.dayAgoTimestamp || 0)}, delta pillars${axis === 'strike' ? ' at today\'s forward' : ''})`, type: 'line', data: pts, symbol: 'diamond', symbolSize: 8,
          lineStyle: { type: 'dashed', color: '#9b59b6' }, itemStyle: { color: '#9b59b6' }, z: 2,
          tooltip: { formatter: (p) => `24 h ago · ${p.data.name}<br>IV ${p.value[1].toFixed(2)} %` },
        });
      }
    } else if (dash.compare.startsWith('snap:')) {
      const list = dash.snapshots[sm.expirationTimestamp] || [];
      const snap = list.find((x) => String(x.seq) === dash.compare.slice(5));
      if (snap) {
        const o = snap.smile;
        const m = o.fits[snap.model] ? snap.model : Object.keys(o.fits)[0];
        overlays.push({
          id: 'cmp-snap', name: `${fmtTime(snap.t)} (seq ${snap.seq})`, type: 'line', showSymbol: false, z: 2,
          data: o.strikes.map((K, j) => ({ value: [xOf(axis, o, K, o.fitDeltas[m] ? o.fitDeltas[m][j] : null), 100 * o.fits[m][j]], key: `s${j}` })).filter((d) => num(d.value[0])),
          lineStyle: { type: 'dashed', color: '#9b59b6', width: 1.5 }, itemStyle: { color: '#9b59b6' },
        });
        overlays.push({
          id: 'cmp-snap-marks', name: `${fmtTime(snap.t)} marks`, type: 'scatter', symbol: 'emptyCircle', symbolSize: 6, z: 2, itemStyle: { color: '#9b59b6' },
          data: o.quotes.map((q) => ({ value: [xOf(axis, o, q.strike, q.delta), 100 * q.markIv], key: `${q.optionType}${q.strike}` })).filter((d) => num(d.value[0])),
        });
      }
    }
    const ys = marks.map((m) => m.value[1]).concat(...fitSeries.map((f) => f.data.map((d) => d.value[1])));
    const ymin = Math.min(...ys);
    const ymax = Math.max(...ys);
    const pad = Math.max(1, 0.1 * (ymax - ymin));
    const fwdX = axis === 'strike' ? sm.forward : axis === 'k' ? 0 : 0.5;
    const structure = `${axis}|${models.join(',')}|${overlays.map((o) => o.id).join(',')}|${sm.expirationTimestamp}`;
    const replace = chart.__structure !== structure;
    chart.__structure = structure;
    const markTip = (p) => {
      const q = p.data.q;
      const mIv = modelAt.get(q.strike);
      const res = num(mIv) ? 100 * (q.markIv - mIv) : null;
      return [
        `<b>${q.optionType === 'C' ? 'Call' : 'Put'} ${fmtStrike(q.strike)}</b>`,
        `call delta ${num(q.delta) ? q.delta.toFixed(3) : '-'} · k ${Math.log(q.strike / sm.forward).toFixed(3)}`,
        `bid ${pct(q.bidIv)} % · mark ${pct(q.markIv)} % · ask ${pct(q.askIv)} %`,
        `${model} ${pct(mIv)} % · residual ${num(res) ? `${res >= 0 ? '+' : ''}${res.toFixed(2)} vp` : '-'}`,
      ].join('<br>');
    };
    chart.setOption(
      {
        ...base(label),
        grid: { left: 50, right: 14, top: narrow() ? 44 : 30, bottom: 58, containLabel: false },
        legend: legend(),
        tooltip: { trigger: 'item', confine: true, className: 'smile-tip', transitionDuration: 0 },
        dataZoom: [
          { type: 'inside', xAxisIndex: 0, filterMode: 'none' },
          { type: 'inside', yAxisIndex: 0, filterMode: 'none', zoomOnMouseWheel: 'shift', moveOnMouseMove: false },
          { type: 'slider', xAxisIndex: 0, height: 16, bottom: 6, filterMode: 'none', labelFormatter: () => '' },
        ],
        xAxis: {
          type: 'value', scale: true, inverse: axis === 'delta', min: axis === 'delta' ? 0 : 'dataMin', max: axis === 'delta' ? 1 : 'dataMax',
          name: axis === 'delta' ? 'call delta' : axis === 'k' ? 'ln(K/F)' : 'strike', nameLocation: 'middle', nameGap: 22,
          axisLabel: { fontSize: 10, hideOverlap: true, formatter: (v) => (axis === 'delta' ? deltaLabel(v) : axis === 'k' ? v.toFixed(2) : fmtAxisStrike(v)) },
          splitLine: { show: false },
        },
        yAxis: { type: 'value', min: Math.floor((ymin - pad) / 5) * 5, max: Math.ceil((ymax + pad) / 5) * 5, name: 'IV %', nameLocation: 'middle', nameGap: 30, axisLabel: { fontSize: 10 } },
        series: [
          { id: 'bidask', name: 'bid/ask', type: 'custom', renderItem: errorBar, data: bars, clip: true, z: 1, itemStyle: { color: '#8a99a8' }, encode: { x: 0, y: [1, 2] }, tooltip: { formatter: markTip } },
          {
            id: 'marks', name: 'mark', type: 'scatter', data: marks, symbolSize: 6, itemStyle: { color: dark() ? '#e8eef4' : '#1d2733' }, z: 5, tooltip: { formatter: markTip },
            markLine: { silent: true, symbol: 'none', label: { show: true, formatter: axis === 'delta' ? '50Δ' : 'F', fontSize: 10 }, lineStyle: { type: 'dashed', color: '#b0b8c0' }, data: [{ xAxis: fwdX }] },
          },
          ...fitSeries,
          ...overlays,
        ],
      },
      replace ? { replaceMerge: ['series', 'dataZoom'] } : undefined,
    );
    keep.restore();
    // compare choices
    const list = dash.snapshots[sm.expirationTimestamp] || [];
    const values = [''];
    const labels = ['none'];
    if (t && t.dayAgo) {
      values.push('day');
      labels.push(`24 h ago (${fmtTime(sf.dayAgoTimestamp)})`);
    }
    for (const x of list.slice(0, -1).reverse()) {
      values.push(`snap:${x.seq}`);
      labels.push(`${fmtTime(x.t)} · seq ${x.seq}`);
    }
    fillSelect($('sel-compare'), values, dash.compare, labels);
  }

  async function loadHistory() {
    const s = dash.state;
    if (!s || !s.selection || !dash.focus) return;
    const which = $('sel-history').value;
    const p = selectionParams(false);
    if (dash.asOf !== null) p.set('asOf', String(dash.asOf));
    if (which) p.set('constMat', which);
    else p.set('expiry', String(dash.focus));
    const key = p.toString();
    if (dash.history && dash.history.key === key && Date.now() - dash.history.at < 60000) return;
    dash.history = { key, at: Date.now(), points: dash.history && dash.history.key === key ? dash.history.points : [] };
    try {
      const r = await fetch(`/dashboard/api/history?${key}`);
      if (!r.ok) return;
      const body = await r.json();
      if (dash.history && dash.history.key === key) {
        dash.history.points = body.points;
        dash.history.origin = body.origin || 'memory';
        renderHistory();
      }
    } catch {
      /* retried on the next render */
    }
  }

  function renderHistory() {
    fillSelect($('sel-history'), ['', '1W', '2W', '1M', '2M', '3M', '6M', '9M'], $('sel-history').value, ['the selected expiry', '1W', '2W', '1M', '2M', '3M', '6M', '9M']);
    loadHistory();
    const sf = dash.state && dash.state.surface;
    const which = $('sel-history').value;
    const pts = (dash.history && dash.history.points) || [];
    const now = sf ? (which ? sf.constMat.find((c) => c.constMat === which) : focusedTerm()) : null;
    const all = now && sf ? pts.concat([{ t: sf.observationTimestamp, ...now }]) : pts;
    const label = `History of ATM vol, risk reversals and butterflies of ${which || 'the selected expiry'}: ${all.length} points`;
    const chart = (dash.charts.history = chartIn($('history-chart'), label));
    const origin = dash.history && dash.history.origin === 'memory' ? 'in memory' : 'in the history store';
    $('history-info').textContent = pts.length ? `${pts.length} point${pts.length === 1 ? '' : 's'} ${origin} from ${fmtDateTime(pts[0].t)} to ${fmtDateTime(pts[pts.length - 1].t)}` : 'no history held for this expiry';
    const line = (name, f, axis, dashed) => ({
      id: name, name, type: 'line', xAxisIndex: axis, yAxisIndex: axis, showSymbol: false,
      data: all.filter((p) => num(f(p))).map((p) => [p.t * 1000, +(100 * f(p)).toFixed(3)]), lineStyle: dashed ? { type: 'dashed' } : {},
    });
    chart.setOption({
      ...base(label),
      legend: legend(),
      tooltip: { trigger: 'axis', confine: true, valueFormatter: (v) => (num(v) ? v.toFixed(2) : v) },
      axisPointer: { link: [{ xAxisIndex: 'all' }] },
      grid: [{ left: 58, right: 14, top: narrow() ? 46 : 30, height: '32%' }, { left: 58, right: 14, bottom: 26, height: '32%' }],
      xAxis: [{ type: 'time', gridIndex: 0, axisLabel: { show: false } }, { type: 'time', gridIndex: 1 }],
      yAxis: [
        { type: 'value', gridIndex: 0, scale: true, name: 'ATM %', nameLocation: 'middle', nameGap: 40 },
        { type: 'value', gridIndex: 1, scale: true, name: 'RR / BF vp', nameLocation: 'middle', nameGap: 40 },
      ],
      series: [
        { ...line('ATM vol', (p) => p.atmVol, 0), lineStyle: { width: 2 } },
        line('25D RR', (p) => p.delta25Skew, 1),
        line('25D BF', (p) => p.delta25Bfly, 1),
        line('10D RR', (p) => p.delta10Skew, 1, true),
        line('10D BF', (p) => p.delta10Bfly, 1, true),
      ],
    });
  }

  function renderSmiles(sf) {
    const box = $('smiles');
    const smiles = sf ? sf.smiles : [];
    const keep = new Set(smiles.map((s) => String(s.expirationTimestamp)));
    for (const key of Object.keys(dash.charts.smiles)) {
      if (!keep.has(key)) {
        dash.charts.smiles[key].dispose();
        delete dash.charts.smiles[key];
        const card = box.querySelector(`[data-expiry="${key}"]`);
        if (card) card.remove();
      }
    }
    const model = sf ? sf.model : 'SVI';
    smiles.forEach((sm, i) => {
      const key = String(sm.expirationTimestamp);
      let card = box.querySelector(`[data-expiry="${key}"]`);
      if (!card) {
        card = document.createElement('div');
        card.className = 'smile';
        card.dataset.expiry = key;
        card.tabIndex = 0;
        card.innerHTML = '<div class="title"><span class="name"></span><span class="info"></span></div><div class="chart"></div>';
        card.addEventListener('click', () => setFocus(Number(key)));
        card.addEventListener('keydown', (e) => {
          if (e.key === 'Enter') setFocus(Number(key));
        });
        box.appendChild(card);
      }
      if (box.children[i] !== card) box.insertBefore(card, box.children[i]);
      card.classList.toggle('focused', sm.expirationTimestamp === dash.focus);
      const diag = sm.diagnostics && sm.diagnostics[model];
      const cov = coverageOf(sm);
      const partial = cov && (cov.oneSided ? `one-sided (${cov.oneSided})` : cov.partial ? 'partial' : '');
      card.querySelector('.name').innerHTML = '';
      card.querySelector('.name').append(`${fmtDate(sm.expirationTimestamp)} · ${(sm.T * 365).toFixed(1)} d`);
      if (partial) {
        const p = document.createElement('span');
        p.className = 'partial';
        p.textContent = ` · ${partial}`;
        card.querySelector('.name').append(p);
      }
      card.querySelector('.info').textContent = `${model} RMSE ${(diag ? diag.rmseVolPts : sm.rmseVolPts).toFixed(2)} vp · ${sm.quotes.length} q${sm.butterflyFree ? '' : ' · butterfly!'}`;
      const label = `Smile of ${fmtDate(sm.expirationTimestamp)}: ${sm.quotes.length} marks and the ${model} fit`;
      const chart = chartIn(card.querySelector('.chart'), label);
      dash.charts.smiles[key] = chart;
      const keepTip = keepTooltip(chart, `card${key}`);
      const marks = sm.quotes.map((q) => ({ value: [q.strike, 100 * q.markIv], key: `${q.optionType}${q.strike}`, q }));
      const bars = sm.quotes.filter((q) => num(q.bidIv) && num(q.askIv) && q.bidIv > 0).map((q) => ({ value: [q.strike, 100 * q.bidIv, 100 * q.askIv], key: `${q.optionType}${q.strike}` }));
      const ivs = sm.fits[model] || Object.values(sm.fits)[0] || [];
      const fit = sm.strikes.map((k, j) => [k, 100 * ivs[j]]);
      const ys = marks.map((m) => m.value[1]).concat(fit.map((d) => d[1])).filter(num);
      const ymin = Math.min(...ys);
      const ymax = Math.max(...ys);
      const pad = Math.max(1, 0.12 * (ymax - ymin));
      chart.setOption({
        ...base(label),
        grid: { left: narrow() ? 28 : 36, right: 8, top: 8, bottom: 22 },
        tooltip: { trigger: 'item', confine: true, transitionDuration: 0 },
        xAxis: { type: 'value', scale: true, axisLabel: { fontSize: 9, hideOverlap: true, formatter: fmtAxisStrike }, splitLine: { show: false }, splitNumber: narrow() ? 3 : 5 },
        yAxis: { type: 'value', min: Math.floor((ymin - pad) / 5) * 5, max: Math.ceil((ymax + pad) / 5) * 5, axisLabel: { fontSize: 9 } },
        series: [
          { id: 'bidask', name: 'bid/ask', type: 'custom', renderItem: errorBar, data: bars, clip: true, z: 1, itemStyle: { color: '#8a99a8' }, tooltip: { formatter: (p) => `${fmtStrike(p.value[0])}: bid ${p.value[1].toFixed(2)} % · ask ${p.value[2].toFixed(2)} %` } },
          {
            id: 'marks', name: 'mark', type: 'scatter', data: marks, symbolSize: 4, itemStyle: { color: dark() ? '#e8eef4' : '#1d2733' }, z: 4,
            tooltip: { formatter: (p) => `${p.data.q.optionType} ${fmtStrike(p.data.q.strike)}: mark ${p.value[1].toFixed(2)} %` },
            markLine: { silent: true, symbol: 'none', label: { show: false }, lineStyle: { type: 'dashed', color: '#b0b8c0' }, data: [{ xAxis: sm.forward }] },
          },
          { id: 'fit', name: model, type: 'line', showSymbol: false, data: fit, lineStyle: { width: 2, color: modelColor(model) }, itemStyle: { color: modelColor(model) }, z: 3 },
        ],
      });
      keepTip.restore();
    });
  }

  function cell(text, field, value, extra) {
    const td = document.createElement('td');
    td.textContent = text;
    if (field) td.dataset.field = field;
    if (value !== undefined && value !== null) td.dataset.value = String(value);
    if (extra) for (const [k, v] of Object.entries(extra)) td.dataset[k] = v;
    return td;
  }
  function diffCell(x, field) {
    const td = cell(signed(x), field, x);
    if (num(x) && x !== 0) td.className = x > 0 ? 'up' : 'down';
    return td;
  }

  function renderTerm(sf) {
    const term = sf ? sf.term : [];
    const cms = sf ? sf.constMat : [];
    const days = (p) => +(p.T * 365).toFixed(3);
    $('term-model').textContent = sf ? `${sf.model}: forward ATM vol (top), 25D/10D risk reversal and butterfly (bottom); diamonds: constant maturities, hollow = extrapolated beyond the last expiry` : '';
    const label = `Term structure of ${sf ? sf.model : ''}: ATM vol and risk reversals and butterflies by days to expiry`;
    const chart = (dash.charts.term = chartIn($('term-chart'), label));
    const line = (name, f, dashed) => ({
      id: name, name, type: 'line', xAxisIndex: 1, yAxisIndex: 1,
      data: term.filter((p) => num(f(p))).map((p) => [days(p), +(100 * f(p)).toFixed(4)]), symbolSize: 5, lineStyle: dashed ? { type: 'dashed' } : {},
    });
    const cmData = (extrap) => cms.filter((c) => num(c.atmVol) && c.extrapolated === extrap).map((c) => ({ value: [days(c), +(100 * c.atmVol).toFixed(4)], name: c.constMat }));
    chart.setOption({
      ...base(label),
      legend: legend(),
      tooltip: { trigger: 'axis', confine: true, valueFormatter: (v) => (num(v) ? v.toFixed(2) : v) },
      axisPointer: { link: [{ xAxisIndex: 'all' }] },
      grid: [{ left: 58, right: 14, top: narrow() ? 46 : 34, height: '34%' }, { left: 58, right: 14, bottom: 40, height: '32%' }],
      xAxis: [{ type: 'value', gridIndex: 0, scale: true, axisLabel: { show: false } }, { type: 'value', gridIndex: 1, scale: true, name: 'days to expiry', nameLocation: 'middle', nameGap: 22 }],
      yAxis: [
        { type: 'value', gridIndex: 0, scale: true, name: 'ATM %', nameLocation: 'middle', nameGap: 40 },
        { type: 'value', gridIndex: 1, scale: true, name: 'RR / BF vp', nameLocation: 'middle', nameGap: 40 },
      ],
      series: [
        { id: 'atm', name: 'ATM vol', type: 'line', data: term.map((p) => [days(p), +(100 * p.atmVol).toFixed(4)]), lineStyle: { width: 3 }, symbolSize: 5 },
        { id: 'cm', name: 'const. maturity', type: 'scatter', data: cmData(false), symbol: 'diamond', symbolSize: 9, label: { show: !narrow(), position: 'top', formatter: (p) => p.data.name, fontSize: 9 } },
        { id: 'cmx', name: 'extrapolated', type: 'scatter', data: cmData(true), symbol: 'emptyDiamond', symbolSize: 10, itemStyle: { color: '#c98a1b' }, label: { show: !narrow(), position: 'top', formatter: (p) => `${p.data.name}?`, fontSize: 9 } },
        line('25D RR', (p) => p.delta25Skew),
        line('25D BF', (p) => p.delta25Bfly),
        line('10D RR', (p) => p.delta10Skew, true),
        line('10D BF', (p) => p.delta10Bfly, true),
      ],
    });
    const tbody = $('term-table').querySelector('tbody');
    tbody.innerHTML = '';
    for (const p of term) {
      const tr = document.createElement('tr');
      tr.dataset.expiry = String(p.expirationTimestamp);
      tr.append(
        cell(fmtDate(p.expirationTimestamp), 'expirationTimestamp', p.expirationTimestamp),
        cell((p.T * 365).toFixed(1), 'days', p.T * 365),
        cell(fmtPrice(p.forward), 'forward', p.forward),
        cell(`${pct(p.atmVol)} %`, 'atmVol', p.atmVol),
        diffCell(p.diffAtmVol, 'diffAtmVol'),
        cell(pct(p.delta25Skew), 'delta25Skew', p.delta25Skew),
        diffCell(p.diffDelta25Skew, 'diffDelta25Skew'),
        cell(pct(p.delta25Bfly), 'delta25Bfly', p.delta25Bfly),
        diffCell(p.diffDelta25Bfly, 'diffDelta25Bfly'),
        cell(pct(p.delta10Skew), 'delta10Skew', p.delta10Skew),
        diffCell(p.diffDelta10Skew, 'diffDelta10Skew'),
        cell(pct(p.delta10Bfly), 'delta10Bfly', p.delta10Bfly),
        diffCell(p.diffDelta10Bfly, 'diffDelta10Bfly'),
        cell(`${p.rmseVolPts.toFixed(2)} vp`, 'rmseVolPts', p.rmseVolPts),
      );
      tbody.appendChild(tr);
    }
    for (const c of cms) {
      const tr = document.createElement('tr');
      tr.dataset.constmat = c.constMat;
      if (c.extrapolated) tr.className = 'extrap';
      tr.append(
        cell(`${c.constMat}${c.extrapolated ? ' (extrapolated)' : ''}`, 'constMat'),
        cell((c.T * 365).toFixed(1), 'days', c.T * 365),
        cell('', ''),
        cell(`${pct(c.atmVol)} %`, 'atmVol', c.atmVol),
        diffCell(c.diffAtmVol, 'diffAtmVol'),
        cell(pct(c.delta25Skew), 'delta25Skew', c.delta25Skew),
        diffCell(c.diffDelta25Skew, 'diffDelta25Skew'),
        cell(pct(c.delta25Bfly), 'delta25Bfly', c.delta25Bfly),
        diffCell(c.diffDelta25Bfly, 'diffDelta25Bfly'),
        cell(pct(c.delta10Skew), 'delta10Skew', c.delta10Skew),
        diffCell(c.diffDelta10Skew, 'diffDelta10Skew'),
        cell(pct(c.delta10Bfly), 'delta10Bfly', c.delta10Bfly),
        diffCell(c.diffDelta10Bfly, 'diffDelta10Bfly'),
        cell('', ''),
      );
      tbody.appendChild(tr);
    }
  }

  /** Linear interpolation of y at x on a grid (xs in any monotone order); null outside the grid. */
  function interp(xs, ys, x) {
    for (let i = 0; i + 1 < xs.length; i++) {
      const a = xs[i];
      const b = xs[i + 1];
      if (!num(a) || !num(b) || !num(ys[i]) || !num(ys[i + 1])) continue;
      if ((x - a) * (x - b) <= 0 && a !== b) return ys[i] + ((ys[i + 1] - ys[i]) * (x - a)) / (b - a);
    }
    return null;
  }

  function renderSurface(sf) {
    const axis = dash.surfaceAxis;
    const model = sf ? sf.model : 'SVI';
    const smiles = sf ? sf.smiles : [];
    let cols;
    if (axis === 'delta') cols = [0.9, 0.8, 0.75, 0.7, 0.6, 0.5, 0.4, 0.3, 0.25, 0.2, 0.1];
    else {
      let lo = 0;
      let hi = 0;
      for (const s of smiles) {
        lo = Math.min(lo, Math.log(s.strikes[0] / s.forward));
        hi = Math.max(hi, Math.log(s.strikes[s.strikes.length - 1] / s.forward));
      }
      lo = Math.max(lo, -1.5);
      hi = Math.min(hi, 1.5);
      cols = Array.from({ length: 21 }, (_, i) => +(lo + ((hi - lo) * i) / 20).toFixed(3));
    }
    const data = [];
    let vmin = Infinity;
    let vmax = -Infinity;
    smiles.forEach((s, yi) => {
      const ivs = s.fits[model];
      if (!ivs) return;
      const xs = axis === 'delta' ? s.fitDeltas[model] : s.strikes.map((K) => Math.log(K / s.forward));
      cols.forEach((c, xi) => {
        const v = interp(xs, ivs, c);
        if (v === null) return;
        const iv = +(100 * v).toFixed(2);
        vmin = Math.min(vmin, iv);
        vmax = Math.max(vmax, iv);
        data.push([xi, yi, iv]);
      });
    });
    $('surface-info').textContent = sf ? `${model} IV % by expiry and ${axis === 'delta' ? 'call delta' : 'log-moneyness'}, within each expiry's quoted strikes (blank: no quotes there)` : '';
    const label = `Surface heatmap of ${model}: ${smiles.length} expiries by ${axis === 'delta' ? 'call delta' : 'log-moneyness'}, colour = IV`;
    const chart = (dash.charts.surface = chartIn($('surface-chart'), label));
    chart.setOption(
      {
        ...base(label),
        tooltip: { confine: true, formatter: (p) => `${fmtDate(smiles[p.value[1]].expirationTimestamp)} · ${axis === 'delta' ? deltaLabel(cols[p.value[0]]) : `k ${cols[p.value[0]]}`}<br>${model} IV ${p.value[2].toFixed(2)} %` },
        grid: { left: 80, right: 14, top: 10, bottom: 62 },
        xAxis: { type: 'category', data: cols.map((c) => (axis === 'delta' ? deltaLabel(c) : String(c))), name: axis === 'delta' ? 'call delta' : 'ln(K/F)', nameLocation: 'start', nameGap: 8, nameTextStyle: { verticalAlign: 'top', padding: [14, 0, 0, 0] }, axisLabel: { fontSize: 10, hideOverlap: true } },
        yAxis: { type: 'category', data: smiles.map((s) => `${fmtDate(s.expirationTimestamp).slice(2)} ${(s.T * 365).toFixed(0)}d`), axisLabel: { fontSize: 10 } },
        visualMap: {
          min: num(vmin) ? Math.floor(vmin) : 0, max: num(vmax) ? Math.ceil(vmax) : 1, calculable: true, orient: 'horizontal', right: 10, bottom: 0, itemHeight: narrow() ? 110 : 200, itemWidth: 12,
          text: ['IV %', ''], textStyle: { fontSize: 10 },
          inRange: { color: ['#313695', '#4575b4', '#74add1', '#abd9e9', '#e0f3f8', '#fee090', '#fdae61', '#f46d43', '#d73027', '#a50026'] },
        },
        series: [{ id: 'heat', name: `${model} IV`, type: 'heatmap', data, label: { show: !narrow() && cols.length <= 11, fontSize: 9, formatter: (p) => p.value[2].toFixed(1) } }],
      },
      { notMerge: chart.__axis !== axis },
    );
    chart.__axis = axis;
  }

  const FIT_COLUMNS = [
    ['status', 'Status'], ['rmseVolPts', 'RMSE vp'], ['maxErrorVolPts', 'Max err vp'], ['rmse10DeltaVolPts', 'RMSE 10D-10D vp'], ['atmErrorVolPts', 'ATM err vp'],
    ['referenceRmseVolPts', 'Ref gap vp'], ['repairCostVolPts', 'Repair cost vp'], ['quotesUsed', 'Quotes'], ['repairs', 'Repairs'], ['warnings', 'Warnings'],
  ];
  const FIT_SKIP = new Set(['method', 'calibrationMs', 'fittedAt', 'arbitrageCheck', 'butterflyFree', 'calendarFree', 'constrainedRefit', 'calendarRepaired', 'quotes10Delta', 'minDensity', 'rejectedReason']);

  function renderFitTable(sf) {
    const table = $('fit-table');
    const smiles = sf ? sf.smiles : [];
    const known = new Set(FIT_COLUMNS.map((c) => c[0]));
    const extra = new Set();
    for (const s of smiles) for (const d of Object.values(s.diagnostics || {})) for (const k of Object.keys(d)) if (!known.has(k) && !FIT_SKIP.has(k)) extra.add(k);
    const present = FIT_COLUMNS.filter(([k]) => k === 'repairs' || smiles.some((s) => Object.values(s.diagnostics || {}).some((d) => d[k] !== undefined)));
    const cols = present.concat([...extra].sort().map((k) => [k, k]));
    const head = ['Expiry', 'Model', ...cols.map((c) => c[1])];
    const hk = head.join('|');
    if (table.dataset.head !== hk) {
      table.querySelector('thead').innerHTML = `<tr>${head.map((h) => `<th>${h}</th>`).join('')}</tr>`;
      table.dataset.head = hk;
    }
    const tbody = table.querySelector('tbody');
    tbody.innerHTML = '';
    for (const s of smiles) {
      for (const [m, d] of Object.entries(s.diagnostics || {})) {
        const tr = document.createElement('tr');
        tr.dataset.expiry = String(s.expirationTimestamp);
        tr.dataset.model = m;
        if (m === sf.model) tr.className = 'selected-model';
        const mc = cell(m, 'model');
        mc.className = 'text';
        tr.append(cell(fmtDate(s.expirationTimestamp), 'expirationTimestamp', s.expirationTimestamp), mc);
        for (const [k] of cols) {
          let v = d[k];
          let text;
          if (k === 'repairs') {
            const r = [];
            if (d.constrainedRefit) r.push('refit');
            if (d.calendarRepaired) r.push('calendar');
            if (d.status === 'kept-previous') r.push(`kept previous${d.rejectedReason ? `: ${d.rejectedReason}` : ''}`);
            text = r.join(', ') || '-';
            v = r.join(',');
          } else if (Array.isArray(v)) text = v.join('; ') || '-';
          else if (typeof v === 'number') text = k === 'quotesUsed' || k.startsWith('quotes') ? String(v) : v.toFixed(2);
          else if (typeof v === 'boolean') text = v ? 'yes' : 'no';
          else text = v === undefined || v === null ? '-' : String(v);
          const td = cell(text, k, Array.isArray(v) ? v.join('; ') : v);
          if (k === 'warnings' || k === 'repairs') td.className = 'text';
          tr.appendChild(td);
        }
        tbody.appendChild(tr);
      }
    }
  }

  function renderForward(fc) {
    const label = 'Forward curve: forwards of the listed expiries and constant maturities by days';
    const chart = (dash.charts.forward = chartIn($('forward-chart'), label));
    const listed = fc ? fc.listed.map((p) => ({ value: [+(p.T * 365).toFixed(3), p.forward], origin: p.origin, expiry: p.expirationTimestamp })) : [];
    const cm = (x) => (fc ? fc.constMat.filter((p) => p.extrapolated === x).map((p) => ({ value: [+(p.T * 365).toFixed(3), p.forward], name: p.constMat })) : []);
    chart.setOption({
      ...base(label),
      grid: { left: 64, right: 14, top: narrow() ? 46 : 30, bottom: 28 },
      legend: legend(),
      tooltip: { trigger: 'item', confine: true, formatter: (p) => `${p.seriesName}${p.data.name ? ` ${p.data.name}` : ''}<br>${p.value[0].toFixed(1)} d: ${fmtPrice(p.value[1])}` },
      xAxis: { type: 'value', name: 'days', nameGap: 4, scale: true },
      yAxis: { type: 'value', name: 'forward', scale: true },
      series: [
        { id: 'listed', name: 'listed expiries', type: 'line', data: listed, symbolSize: 6 },
        { id: 'cm', name: 'constant maturities', type: 'scatter', data: cm(false), symbol: 'diamond', symbolSize: 10, label: { show: !narrow(), position: 'top', formatter: (p) => p.data.name, fontSize: 10 } },
        { id: 'cmx', name: 'extrapolated', type: 'scatter', data: cm(true), symbol: 'emptyDiamond', symbolSize: 10, itemStyle: { color: '#c98a1b' }, label: { show: !narrow(), position: 'top', formatter: (p) => p.data.name, fontSize: 10 } },
        { id: 'spot', name: 'spot', type: 'scatter', data: fc ? [[0, fc.spot]] : [], symbol: 'triangle', symbolSize: 9 },
      ],
    });
    const tbody = $('forward-table').querySelector('tbody');
    tbody.innerHTML = '';
    if (!fc) return;
    for (const p of fc.constMat) {
      const tr = document.createElement('tr');
      tr.dataset.constmat = p.constMat;
      if (p.extrapolated) tr.className = 'extrap';
      tr.append(
        cell(p.constMat, 'constMat'),
        cell(fmtDate(p.expirationTimestamp), 'expirationTimestamp', p.expirationTimestamp),
        cell(fmtPrice(p.forward), 'forward', p.forward),
        cell(`${pct(p.value, 3)} %`, 'value', p.value),
        cell(p.extrapolated ? 'extrapolated' : '', 'extrapolated', p.extrapolated),
      );
      tbody.appendChild(tr);
    }
  }

  function renderFunding(funding) {
    const label = 'Funding rates annualized, % per year, by time';
    const chart = (dash.charts.funding = chartIn($('funding-chart'), label));
    chart.setOption(
      {
        ...base(label),
        grid: { left: 56, right: 14, top: narrow() ? 46 : 30, bottom: 28 },
        legend: legend(),
        tooltip: {
          trigger: 'axis', confine: true,
          formatter: (ps) => [new Date(ps[0].value[0]).toISOString().slice(0, 16).replace('T', ' ')].concat(ps.map((p) => `${p.seriesName}: ${p.value[1].toFixed(2)} % p.a. · ${p.value[2].toFixed(5)} % per ${p.value[3]} h`)).join('<br>'),
        },
        xAxis: { type: 'time' },
        yAxis: { type: 'value', name: '% p.a.', scale: true },
        series: funding.map((f) => ({
          id: f.instrumentId, name: f.instrumentId, type: 'line', step: 'end', showSymbol: false,
          data: f.points.map((p) => [p.timestamp * 1000, +(100 * p.interest * f.periodsPerYear).toFixed(4), 100 * p.interest, f.intervalHours]),
        })),
      },
      { replaceMerge: ['series'] },
    );
    $('funding-instrument').textContent = funding.length ? `annualized, % per year (rate per period x ${funding.map((f) => `${f.periodsPerYear} for ${f.instrumentId}'s ${f.intervalHours} h periods`).join(', ')})` : '';
    const latestEl = $('funding-latest');
    const f = funding[0];
    const last = f && f.points[f.points.length - 1];
    if (last) {
      latestEl.textContent = `${(100 * last.interest * f.periodsPerYear).toFixed(2)} % p.a. (${(100 * last.interest).toFixed(5)} % per ${f.intervalHours} h) at ${fmtDate(last.timestamp)} ${fmtTime(last.timestamp)} (${f.instrumentId})`;
      latestEl.title = `rate per ${f.intervalHours} h period ${(100 * last.interest).toFixed(6)} %`;
      latestEl.dataset.value = String(last.interest);
      latestEl.dataset.annualized = String(last.interest * f.periodsPerYear);
      latestEl.dataset.timestamp = String(last.timestamp);
      latestEl.dataset.instrument = f.instrumentId;
    } else latestEl.textContent = dash.asOf !== null ? '- (live only: the as-of view shows no funding; GET fundingRates?asOf= answers it)' : '-';
  }

  function renderFeeds() {
    const tbody = $('feeds').querySelector('tbody');
    tbody.innerHTML = '';
    for (const f of dash.feeds || []) {
      const tr = document.createElement('tr');
      tr.dataset.source = f.source;
      const conn = cell('', 'connected', f.connected);
      conn.innerHTML = `<span class="dot ${f.connected ? 'ok' : 'bad'}"></span>${f.connected ? 'yes' : 'no'}`;
      const stale = cell(f.stalePairs.join(', ') || 'none', 'stalePairs', f.stalePairs.join(','));
      if (f.stalePairs.length) stale.className = 'stale';
      const attempts = num(f.reconnectAttempts) ? `${f.reconnects} of ${f.reconnectAttempts} tries` : String(f.reconnects);
      tr.append(
        cell(f.source, 'source'),
        conn,
        cell(f.messagesPerSecond === null ? '-' : f.messagesPerSecond.toFixed(1), 'messagesPerSecond', f.messagesPerSecond),
        cell(f.messages.toLocaleString('en-US'), 'messages', f.messages),
        cell(f.lastMessageAgeS === null ? '-' : `${fmtAge(f.lastMessageAgeS)} ago`, 'lastMessageAgeS', f.lastMessageAgeS),
        cell(attempts, 'reconnects', f.reconnects, { attempts: String(f.reconnectAttempts ?? '') }),
        cell(num(f.nextAttemptInS) ? `in ${Math.ceil(f.nextAttemptInS)} s` : '-', 'nextAttemptInS', f.nextAttemptInS),
        cell(String(f.dropped), 'dropped', f.dropped),
        stale,
        cell(f.warmingUpPairs.join(', ') || 'none', 'warmingUpPairs', f.warmingUpPairs.join(',')),
      );
      tbody.appendChild(tr);
    }
  }

  // ------------------------------------------------------------------ streaming API panel
  // GET /dashboard/api/push-stats every 5 s (connections, subscriptions, counters since start; docs/streaming.md);
  // messages/s from two successive answers. The panel stays hidden while the route does not answer.
  let streamPrev = null;
  async function pollStreaming() {
    let s;
    try {
      const r = await fetch('/dashboard/api/push-stats', { headers: { accept: 'application/json' } });
      if (!r.ok) return;
      s = await r.json();
    } catch {
      return;
    }
    const rate = streamPrev && s.generatedAt > streamPrev.generatedAt ? (s.messages - streamPrev.messages) / (s.generatedAt - streamPrev.generatedAt) : null;
    streamPrev = s;
    const subs = Object.values(s.subscriptions).reduce((a, n) => a + n, 0);
    const resumes = Object.entries(s.resumes).map(([k, n]) => `${n} ${k}`).join(', ') || '0';
    const tr = document.createElement('tr');
    tr.append(
      cell(String(s.connections.ws), 'ws', s.connections.ws),
      cell(String(s.connections.sse), 'sse', s.connections.sse),
      cell(String(subs), 'subscriptions', subs),
      cell(num(rate) ? rate.toFixed(1) : '-', 'messagesPerSecond', rate),
      cell(s.messages.toLocaleString('en-US'), 'messages', s.messages),
      cell(s.conflated.toLocaleString('en-US'), 'conflated', s.conflated),
      cell(String(s.slowCloses), 'slowCloses', s.slowCloses),
      cell(resumes, 'resumes', resumes),
      cell(String(s.rpcErrors), 'rpcErrors', s.rpcErrors),
      cell(String(s.rejected), 'rejected', s.rejected),
    );
    const tbody = $('streaming').querySelector('tbody');
    tbody.innerHTML = '';
    tbody.appendChild(tr);
    $('streaming-panel').hidden = false;
  }

  function allCharts() {
    return [dash.charts.smile, dash.charts.history, dash.charts.term, dash.charts.surface, dash.charts.forward, dash.charts.funding, ...Object.values(dash.charts.smiles)].filter(Boolean);
  }

  // ------------------------------------------------------------------ start
  function start() {
    void pollStreaming();
    setInterval(() => void pollStreaming(), 5000);
    for (const id of ['sel-source', 'sel-pair', 'sel-model']) $(id).addEventListener('change', onSelect);
    $('sel-expiry').addEventListener('change', (e) => setFocus(Number(e.target.value)));
    $('sel-axis').addEventListener('change', (e) => {
      dash.axis = e.target.value;
      renderSmile();
    });
    $('show-others').addEventListener('change', (e) => {
      dash.showOthers = e.target.checked;
      connect(); // the stream sends the other models' curves of the focused smile on request
    });
    $('sel-compare').addEventListener('change', (e) => {
      dash.compare = e.target.value;
      renderSmile();
    });
    $('pin').addEventListener('click', () => {
      rememberSnapshot(true);
      renderSmile();
    });
    let asOfTimer = null;
    $('asof-input').addEventListener('change', (e) => {
      clearTimeout(asOfTimer);
      const t = parseUtc(e.target.value);
      if (t === null) return;
      // one fetch once the picker settles, not one per field typed
      asOfTimer = setTimeout(() => void loadAsOf(t), 400);
    });
    $('asof-live').addEventListener('click', goLive);
    $('sel-history').addEventListener('change', () => {
      dash.history = null;
      renderHistory();
    });
    $('sel-surface-axis').addEventListener('change', (e) => {
      dash.surfaceAxis = e.target.value;
      renderSurface(dash.state && dash.state.surface);
    });
    window.addEventListener('resize', () => {
      for (const c of allCharts()) c.resize();
    });
    if (window.matchMedia) {
      window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => {
        for (const c of allCharts()) c.dispose();
        dash.charts = { smile: null, history: null, term: null, surface: null, forward: null, funding: null, smiles: {} };
        render();
      });
    }
    // a link with asOf opens at that time (live when nothing was served then)
    const t0 = query.get('asOf') !== null ? Number(query.get('asOf')) : NaN;
    if (Number.isFinite(t0) && t0 > 0) void loadAsOf(t0);
    else connect();
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
