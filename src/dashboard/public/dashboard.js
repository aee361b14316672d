// Live dashboard of the vol-surface service. Plain browser JavaScript, no build step: it opens the
// Server-Sent Events stream /dashboard/api/stream for the chosen (source, pair, model) and redraws with
// ECharts (loaded from /dashboard/vendor/echarts.min.js) on every `state` event; `feeds` events refresh the
// feed-status panel. Every number shown comes from the server's state (src/dashboard/state.ts), computed as
// the REST API computes it. IVs arrive as fractions and are shown in % (vol points for RR/BF).
'use strict';

(function () {
  const $ = (id) => document.getElementById(id);
  const MODEL_COLORS = { SVI: '#2f6fde', SABR: '#d9480f', VANNA_VOLGA: '#2b8a3e' };
  const pct = (x, d = 2) => (x === null || x === undefined || !Number.isFinite(x) ? '-' : (100 * x).toFixed(d));
  const fmtPrice = (x) => (x >= 1000 ? x.toLocaleString('en-US', { maximumFractionDigits: 1 }) : x >= 1 ? x.toFixed(3) : x.toPrecision(4));
  const fmtDate = (s) => new Date(s * 1000).toISOString().slice(0, 10);
  const fmtTime = (s) => new Date(s * 1000).toISOString().slice(11, 19);
  const fmtAge = (s) => (s === null || s === undefined ? '-' : s < 120 ? `${s.toFixed(1)} s` : `${(s / 60).toFixed(1)} min`);

  /** Exposed for the end-to-end test and for curious users (window.dashboard). */
  const dash = { state: null, feeds: [], updates: 0, feedUpdates: 0, charts: { smiles: {}, term: null, forward: null, funding: null }, connected: false };
  window.dashboard = dash;

  // ------------------------------------------------------------------ selection and stream
  const query = new URLSearchParams(location.search);
  let source = null;

  function selection() {
    const p = new URLSearchParams();
    for (const k of ['source', 'baseCurrency', 'quoteCurrency', 'volatilityModel']) if (query.get(k)) p.set(k, query.get(k));
    return p;
  }

  function connect() {
    if (source) source.close();
    setLive(false, 'connecting');
    source = new EventSource(`/dashboard/api/stream?${selection().toString()}`);
    source.addEventListener('open', () => setLive(true));
    source.addEventListener('error', () => setLive(false, 'reconnecting'));
    source.addEventListener('state', (ev) => {
      const s = JSON.parse(ev.data);
      dash.state = s;
      dash.updates++;
      render(s);
    });
    source.addEventListener('feeds', (ev) => {
      const f = JSON.parse(ev.data);
      dash.feeds = f.feeds;
      dash.feedUpdates++;
      renderFeeds(f.feeds);
      renderAge(f.generatedAt);
    });
  }

  function setLive(on, text) {
    dash.connected = on;
    const b = $('live');
    b.className = `badge ${on ? 'on' : 'off'}`;
    b.textContent = on ? 'live' : text;
  }

  function fillSelect(el, values, current) {
    const key = values.join('|');
    if (el.dataset.key !== key) {
      el.innerHTML = '';
      for (const v of values) {
        const o = document.createElement('option');
        o.value = v;
        o.textContent = v;
        el.appendChild(o);
      }
      el.dataset.key = key;
    }
    if (current !== undefined && current !== null) el.value = current;
  }

  function renderSelectors(s) {
    if (!s.selection) return;
    const sel = s.selection;
    const pair = `${sel.baseCurrency}/${sel.quoteCurrency}`;
    const sources = [...new Set(s.options.map((o) => o.source))];
    fillSelect($('sel-source'), sources, sel.source);
    fillSelect($('sel-pair'), s.options.filter((o) => o.source === sel.source).map((o) => o.pair), pair);
    const held = (s.options.find((o) => o.source === sel.source && o.pair === pair) || { models: [] }).models;
    fillSelect($('sel-model'), held.length ? held : ['SVI'], sel.volatilityModel);
  }

  function onSelect() {
    const src = $('sel-source').value;
    const [base, quote] = ($('sel-pair').value || '').split('/');
    const state = dash.state;
    const pairs = state ? state.options.filter((o) => o.source === src).map((o) => o.pair) : [];
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
    connect();
  }

  // ------------------------------------------------------------------ rendering
  function render(s) {
    renderSelectors(s);
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
    $('calib').textContent = sf ? `${sf.calibrationMs.toFixed(0)} ms` : '-';
    $('models').textContent = sf ? sf.models.join(', ') : '-';
    $('updates').textContent = String(dash.updates);
    renderAge(s.generatedAt);
    renderSmiles(sf);
    renderTerm(sf);
    renderForward(s.forwardCurve);
    renderFunding(s.funding);
    renderFeeds(s.feeds);
  }

  function renderAge(nowS) {
    const sf = dash.state && dash.state.surface;
    $('age').textContent = sf ? fmtAge(Math.max(0, nowS - sf.observationTimestamp)) : '-';
  }

  function chartIn(el) {
    return echarts.getInstanceByDom(el) || echarts.init(el, null, { renderer: 'canvas' });
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
    smiles.forEach((sm, i) => {
      const key = String(sm.expirationTimestamp);
      let card = box.querySelector(`[data-expiry="${key}"]`);
      if (!card) {
        card = document.createElement('div');
        card.className = 'smile';
        card.dataset.expiry = key;
        card.innerHTML = '<div class="title"><span class="name"></span><span class="info"></span></div><div class="chart"></div>';
        box.appendChild(card);
      }
      if (box.children[i] !== card) box.insertBefore(card, box.children[i]);
      card.querySelector('.name').textContent = `${fmtDate(sm.expirationTimestamp)} · ${(sm.T * 365).toFixed(1)} d`;
      const ref = sm.referenceRmseVolPts == null ? '' : ` (ref ${sm.referenceRmseVolPts.toFixed(2)}, repair ${(sm.repairCostVolPts ?? 0).toFixed(2)})`;
      const status = sm.status && sm.status !== 'fitted' ? ` · ${sm.status}` : '';
      const warn = sm.warnings && sm.warnings.length ? ` · ⚠ ${sm.warnings.map((w) => w.replace(/^fit quality: /, '')).join('; ')}` : '';
      card.querySelector('.info').textContent = `F ${fmtPrice(sm.forward)} · RMSE ${sm.rmseVolPts.toFixed(2)} vp${ref} · ${sm.quotesUsed} q${status}${sm.butterflyFree ? '' : ' · butterfly!'}${warn}`;
      card.classList.toggle('warned', !!(sm.warnings && sm.warnings.length));
      const chart = chartIn(card.querySelector('.chart'));
      dash.charts.smiles[key] = chart;
      const marks = sm.quotes.map((q) => [q.strike, 100 * q.markIv]);
      const bars = sm.quotes.filter((q) => q.bidIv !== null && q.askIv !== null && q.bidIv > 0).map((q) => [q.strike, 100 * q.bidIv, 100 * q.askIv]);
      const fitSeries = Object.entries(sm.fits).map(([model, ivs]) => ({
        name: model,
        type: 'line',
        showSymbol: false,
        data: sm.strikes.map((k, j) => [k, 100 * ivs[j]]),
        lineStyle: { width: 2, color: MODEL_COLORS[model] || '#555' },
        itemStyle: { color: MODEL_COLORS[model] || '#555' },
        z: 3,
      }));
      // y range from the marks and fits (far-wing bid/ask bars are clipped rather than squashing the smile)
      const ys = marks.map((m) => m[1]).concat(...fitSeries.map((f) => f.data.map((d) => d[1])));
      const ymin = Math.min(...ys);
      const ymax = Math.max(...ys);
      const pad = Math.max(1, 0.12 * (ymax - ymin));
      chart.setOption(
        {
          animation: false,
          grid: { left: 40, right: 10, top: 22, bottom: 26 },
          legend: { top: 0, right: 0, itemWidth: 12, itemHeight: 8, textStyle: { fontSize: 10 } },
          tooltip: { trigger: 'item', formatter: (p) => (p.seriesName === 'bid/ask' ? `K ${p.value[0]}<br>bid ${p.value[1].toFixed(2)}% ask ${p.value[2].toFixed(2)}%` : `${p.seriesName}<br>K ${fmtPrice(p.value[0])}: ${p.value[1].toFixed(2)}%`) },
          xAxis: { type: 'value', scale: true, axisLabel: { fontSize: 10, formatter: (v) => (v >= 1000 ? `${v / 1000}k` : v) }, splitLine: { show: false } },
          yAxis: { type: 'value', min: Math.floor(ymin - pad), max: Math.ceil(ymax + pad), axisLabel: { fontSize: 10 } },
          series: [
            { name: 'bid/ask', type: 'custom', renderItem: errorBar, data: bars, clip: true, z: 1, itemStyle: { color: '#8a99a8' } },
            { name: 'mark', type: 'scatter', data: marks, symbolSize: 5, itemStyle: { color: '#1d2733' }, z: 4,
              markLine: { silent: true, symbol: 'none', label: { show: false }, lineStyle: { type: 'dashed', color: '#b0b8c0' }, data: [{ xAxis: sm.forward }] } },
            ...fitSeries,
          ],
        },
        { notMerge: true },
      );
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

  function renderTerm(sf) {
    const term = sf ? sf.term : [];
    const days = (p) => +(p.T * 365).toFixed(3);
    const chart = (dash.charts.term = chartIn($('term-chart')));
    const line = (name, f, axis, dashed) => ({
      name,
      type: 'line',
      yAxisIndex: axis,
      data: term.filter((p) => f(p) !== null).map((p) => [days(p), 100 * f(p)]),
      symbolSize: 5,
      lineStyle: dashed ? { type: 'dashed' } : {},
    });
    chart.setOption(
      {
        animation: false,
        grid: { left: 48, right: 52, top: 30, bottom: 30 },
        legend: { top: 0 },
        tooltip: { trigger: 'axis', valueFormatter: (v) => (typeof v === 'number' ? v.toFixed(2) : v) },
        xAxis: { type: 'value', name: 'days', nameLocation: 'end', nameGap: 4, scale: true },
        yAxis: [
          { type: 'value', name: 'ATM vol %', scale: true },
          { type: 'value', name: 'RR / BF vol pts', scale: true, splitLine: { show: false } },
        ],
        series: [
          { ...line('ATM vol', (p) => p.atmVol, 0), lineStyle: { width: 3 } },
          line('25D RR', (p) => p.delta25Skew, 1),
          line('25D BF', (p) => p.delta25Bfly, 1),
          line('10D RR', (p) => p.delta10Skew, 1, true),
          line('10D BF', (p) => p.delta10Bfly, 1, true),
        ],
      },
      { notMerge: true },
    );
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
        cell(pct(p.delta25Skew), 'delta25Skew', p.delta25Skew),
        cell(pct(p.delta25Bfly), 'delta25Bfly', p.delta25Bfly),
        cell(pct(p.delta10Skew), 'delta10Skew', p.delta10Skew),
        cell(pct(p.delta10Bfly), 'delta10Bfly', p.delta10Bfly),
        cell(`${p.rmseVolPts.toFixed(2)} vp`, 'rmseVolPts', p.rmseVolPts),
      );
      tbody.appendChild(tr);
    }
  }

  function renderForward(fc) {
    const chart = (dash.charts.forward = chartIn($('forward-chart')));
    const listed = fc ? fc.listed.map((p) => ({ value: [+(p.T * 365).toFixed(3), p.forward], origin: p.origin, expiry: p.expirationTimestamp })) : [];
    const cm = fc ? fc.constMat.map((p) => ({ value: [+(p.T * 365).toFixed(3), p.forward], name: p.constMat })) : [];
    chart.setOption(
      {
        animation: false,
        grid: { left: 70, right: 20, top: 30, bottom: 30 },
        legend: { top: 0 },
        tooltip: { trigger: 'item', formatter: (p) => `${p.seriesName}${p.data.name ? ` ${p.data.name}` : ''}<br>${p.value[0].toFixed(1)} d: ${fmtPrice(p.value[1])}` },
        xAxis: { type: 'value', name: 'days', nameGap: 4, scale: true },
        yAxis: { type: 'value', name: 'forward', scale: true },
        series: [
          { name: 'listed expiries', type: 'line', data: listed, symbolSize: 6 },
          { name: 'constant maturities', type: 'scatter', data: cm, symbol: 'diamond', symbolSize: 10, label: { show: true, position: 'top', formatter: (p) => p.data.name, fontSize: 10 } },
          ...(fc ? [{ name: 'spot', type: 'scatter', data: [[0, fc.spot]], symbol: 'triangle', symbolSize: 9 }] : []),
        ],
      },
      { notMerge: true },
    );
    const tbody = $('forward-table').querySelector('tbody');
    tbody.innerHTML = '';
    if (!fc) return;
    for (const p of fc.constMat) {
      const tr = document.createElement('tr');
      tr.dataset.constmat = p.constMat;
      tr.append(
        cell(p.constMat, 'constMat'),
        cell(fmtDate(p.expirationTimestamp), 'expirationTimestamp', p.expirationTimestamp),
        cell(fmtPrice(p.forward), 'forward', p.forward),
        cell(`${pct(p.value, 3)} %`, 'value', p.value),
      );
      tbody.appendChild(tr);
    }
  }

  function renderFunding(funding) {
    const chart = (dash.charts.funding = chartIn($('funding-chart')));
    chart.setOption(
      {
        animation: false,
        grid: { left: 70, right: 20, top: 30, bottom: 30 },
        legend: { top: 0 },
        tooltip: { trigger: 'axis', valueFormatter: (v) => (typeof v === 'number' ? `${v.toFixed(5)} %` : v) },
        xAxis: { type: 'time' },
        yAxis: { type: 'value', name: 'funding %', scale: true },
        series: funding.map((f) => ({ name: f.instrumentId, type: 'line', step: 'end', showSymbol: false, data: f.points.map((p) => [p.timestamp * 1000, 100 * p.interest]) })),
      },
      { notMerge: true },
    );
    $('funding-instrument').textContent = funding.map((f) => `${f.instrumentId} (every ${f.intervalHours} h)`).join(', ');
    const latestEl = $('funding-latest');
    const f = funding[0];
    const last = f && f.points[f.points.length - 1];
    if (last) {
      latestEl.textContent = `${(100 * last.interest).toFixed(5)} % at ${fmtDate(last.timestamp)} ${fmtTime(last.timestamp)} (${f.instrumentId})`;
      latestEl.dataset.value = String(last.interest);
      latestEl.dataset.timestamp = String(last.timestamp);
      latestEl.dataset.instrument = f.instrumentId;
    } else latestEl.textContent = '-';
  }

  function renderFeeds(feeds) {
    const tbody = $('feeds').querySelector('tbody');
    tbody.innerHTML = '';
    for (const f of feeds || []) {
      const tr = document.createElement('tr');
      tr.dataset.source = f.source;
      const conn = cell('', 'connected', f.connected);
      conn.innerHTML = `<span class="dot ${f.connected ? 'ok' : 'bad'}"></span>${f.connected ? 'yes' : 'no'}`;
      const stale = cell(f.stalePairs.join(', ') || 'none', 'stalePairs', f.stalePairs.join(','));
      if (f.stalePairs.length) stale.className = 'stale';
      tr.append(
        cell(f.source, 'source'),
        conn,
        cell(f.messagesPerSecond === null ? '-' : f.messagesPerSecond.toFixed(1), 'messagesPerSecond', f.messagesPerSecond),
        cell(f.messages.toLocaleString('en-US'), 'messages', f.messages),
        cell(f.lastMessageAgeS === null ? '-' : `${fmtAge(f.lastMessageAgeS)} ago`, 'lastMessageAgeS', f.lastMessageAgeS),
        cell(String(f.reconnects), 'reconnects', f.reconnects),
        cell(String(f.dropped), 'dropped', f.dropped),
        stale,
        cell(f.warmingUpPairs.join(', ') || 'none', 'warmingUpPairs', f.warmingUpPairs.join(',')),
      );
      tbody.appendChild(tr);
    }
  }

  // ------------------------------------------------------------------ start
  function start() {
    for (const id of ['sel-source', 'sel-pair', 'sel-model']) $(id).addEventListener('change', onSelect);
    window.addEventListener('resize', () => {
      for (const c of [dash.charts.term, dash.charts.forward, dash.charts.funding, ...Object.values(dash.charts.smiles)]) if (c) c.resize();
    });
    connect();
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
