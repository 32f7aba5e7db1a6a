// Plain ES2017, no framework. Every piece of data goes into the DOM through
// textContent / attributes, never through innerHTML.
const WeftUI = (function () {
  'use strict';

  const PALETTE = ['#2f6fdf', '#e07b20', '#2a9d5b', '#c0392b', '#8e44ad', '#16a3b8',
    '#b7950b', '#d35490', '#5d6d7e', '#1abc9c', '#7f8c3b', '#a0522d'];
  const PHASES = {
    submitting: 'Submitting', queued: 'Queued', compiling: 'Compiling', checking: 'Checking against the reference',
    warmup: 'Warming up', timing: 'Timing', peers: 'Timing peers', profile: 'Profiling'
  };

  function isNum(v) { return typeof v === 'number' && isFinite(v); }
  function num(v) { return isNum(v) ? v : 0; }
  function fmtNum(v, sig) {
    if (!isNum(v)) return '\u2014';
    sig = sig || 3;
    const a = Math.abs(v);
    if (a === 0) return '0';
    if (a >= Math.pow(10, sig)) return String(Math.round(v));
    if (a < 1e-3) return v.toExponential(Math.max(0, sig - 1));
    return String(Number(v.toPrecision(sig)));
  }
  // A positive quantity, or a dash when it is 0 / absent (the pipeline did not state it).
  function fmtPos(v, sig) { return isNum(v) && v > 0 ? fmtNum(v, sig) : '\u2014'; }
  function fmtCompact(v) {
    if (!isNum(v)) return '';
    const a = Math.abs(v);
    if (a >= 1e9) return fmtNum(v / 1e9, 3) + 'G';
    if (a >= 1e6) return fmtNum(v / 1e6, 3) + 'M';
    if (a >= 1e3) return fmtNum(v / 1e3, 3) + 'k';
    return fmtNum(v, 3);
  }
  function fmtDuration(s) {
    if (!isNum(s) || s < 0) return '';
    if (s < 60) return fmtNum(s < 10 ? s : Math.round(s), 2) + ' s';
    const m = Math.floor(s / 60);
    return m + ' min ' + Math.round(s - 60 * m) + ' s';
  }
  function str(v) { return v === undefined || v === null ? '' : String(v); }

  function el(tag, props, children) {
    const node = document.createElement(tag);
    if (props) {
      for (const key of Object.keys(props)) {
        const v = props[key];
        if (v === undefined || v === null || v === false) continue;
        if (key === 'text') node.textContent = String(v);
        else if (key === 'className') node.className = String(v);
        else if (key === 'on') { for (const ev of Object.keys(v)) node.addEventListener(ev, v[ev]); }
        else if (key === 'checked' || key === 'value' || key === 'disabled' || key === 'hidden') node[key] = v;
        else node.setAttribute(key, v === true ? '' : String(v));
      }
    }
    if (children) {
      for (const c of children) {
        if (c === undefined || c === null || c === false) continue;
        node.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
      }
    }
    return node;
  }
  function clear(node) { if (node) while (node.firstChild) node.removeChild(node.firstChild); }
  function byId(id) { return document.getElementById(id); }
  function setText(id, text) { const n = byId(id); if (n) n.textContent = str(text); }
  function domId(prefix, id) { return prefix + String(id).replace(/[^A-Za-z0-9_-]/g, '_'); }

  // ---- run record accessors (any field may be missing) ----
  function sizesOf(run) { return run && run.sizes && typeof run.sizes === 'object' ? run.sizes : {}; }
  function sizesLabel(run) {
    if (run && run.size_label) return String(run.size_label);
    const s = sizesOf(run);
    return Object.keys(s).map(function (k) { return str(s[k]); }).join('x');
  }
  function sizesTitle(sizes) {
    sizes = sizes || {};
    return Object.keys(sizes).map(function (k) { return k + '=' + str(sizes[k]); }).join(', ');
  }
  function elementsOf(sizes) {
    let n = 1;
    for (const k of Object.keys(sizes || {})) { const v = Number(sizes[k]); if (isFinite(v) && v > 0) n *= v; }
    return n;
  }
  function timeOf(run) { return run && run.time_ms && typeof run.time_ms === 'object' ? run.time_ms : {}; }
  function medianOf(run) { return num(timeOf(run).median); }
  function peersOf(run) { return run && Array.isArray(run.peers) ? run.peers.filter(function (p) { return p && typeof p === 'object'; }) : []; }
  function speedupOf(run, peer) {
    if (isNum(peer.speedup) && peer.speedup > 0) return peer.speedup;
    const pm = num(peer.time_ms && peer.time_ms.median), rm = medianOf(run);
    return pm > 0 && rm > 0 ? pm / rm : null;
  }
  function workOf(run) { return run && run.work && typeof run.work === 'object' ? run.work : {}; }
  function gflopsOf(run) {
    if (num(run.gflops) > 0) return run.gflops;
    const f = num(workOf(run).flops), m = medianOf(run);
    return f > 0 && m > 0 ? f / (m * 1e-3) / 1e9 : 0;
  }
  function gbsOf(run) {
    if (num(run.gbs) > 0) return run.gbs;
    const b = num(workOf(run).bytes), m = medianOf(run);
    return b > 0 && m > 0 ? b / (m * 1e-3) / 1e9 : 0;
  }
  function intensityOf(run) {
    if (num(run.intensity) > 0) return run.intensity;
    const w = workOf(run);
    return num(w.flops) > 0 && num(w.bytes) > 0 ? w.flops / w.bytes : 0;
  }
  function runLabel(run) {
    return [str(run.id), str(run.benchmark), sizesLabel(run), str(run.variant), str(run.threads) + 't'].join(' ');
  }
  function findRun(runs, id) {
    for (const r of runs) if (String(r.id) === String(id)) return r;
    return null;
  }

  // ---- results table ----
  // opts: {selected: [ids], currentId, onToggle(id, checked), onShow(id)}
  function renderResults(tbody, runs, opts) {
    clear(tbody);
    opts = opts || {};
    const selected = opts.selected || [];
    for (const run of runs) {
      const id = str(run.id);
      const t = timeOf(run);
      const spreadCell = el('td', { className: 'num' }, [
        isNum(t.spread) ? fmtNum(t.spread * 100, 2) + '%' : '\u2014',
        run.unstable ? el('span', { className: 'badge bad unstable', title: (run.warnings || []).join('\n') || 'unstable timing', text: 'unstable' }) : null,
        !run.unstable && Array.isArray(run.warnings) && run.warnings.length
          ? el('span', { className: 'badge warn', title: run.warnings.join('\n'), text: '\u26a0 ' + run.warnings.length }) : null
      ]);
      const check = run.check && typeof run.check === 'object' ? run.check : {};
      const status = check.status ? String(check.status) : 'none';
      const checkClass = status === 'ok' ? 'ok' : status === 'mismatch' ? 'bad' : 'none';
      const speedups = peersOf(run).map(function (p) {
        const s = speedupOf(run, p);
        return el('span', {
          className: 'speedup ' + (s === null ? '' : s >= 1 ? 'good' : 'bad'),
          title: str(p.name) + ' median ' + fmtPos(num(p.time_ms && p.time_ms.median)) + ' ms',
          text: str(p.name) + ' \u00d7' + (s === null ? '\u2014' : fmtNum(s, 3))
        });
      });
      const tr = el('tr', { id: domId('run-', id), 'data-run-id': id, className: String(id) === String(opts.currentId) ? 'current' : '' }, [
        el('td', null, [el('input', {
          type: 'checkbox', id: domId('select-', id), className: 'select-run', 'data-run-id': id,
          'aria-label': 'Select run ' + id + ' to compare', checked: selected.indexOf(id) >= 0,
          on: { change: function (ev) { if (opts.onToggle) opts.onToggle(id, ev.target.checked); } }
        })]),
        el('td', null, [el('button', {
          type: 'button', className: 'link show-run', 'data-run-id': id, text: id,
          'aria-label': 'Show details of run ' + id,
          on: { click: function () { if (opts.onShow) opts.onShow(id); } }
        })]),
        el('td', { text: str(run.benchmark) }),
        el('td', { text: sizesLabel(run), title: sizesTitle(run.sizes) }),
        el('td', { className: 'num', text: str(run.threads) }),
        el('td', { text: str(run.target) }),
        el('td', { text: str(run.variant) }),
        el('td', { className: 'num median', text: fmtPos(t.median) }),
        el('td', { className: 'num', text: fmtPos(t.p10) + '\u2013' + fmtPos(t.p90), title: 'reps: ' + str(t.reps) }),
        spreadCell,
        el('td', { className: 'num', text: fmtPos(run.first_call_ms) }),
        el('td', { className: 'num', text: fmtPos(gflopsOf(run)) }),
        el('td', { className: 'num', text: fmtPos(gbsOf(run)) }),
        el('td', null, [el('span', { className: 'badge check ' + checkClass, title: str(check.message), text: status })]),
        el('td', null, speedups.length ? speedups : ['\u2014'])
      ]);
      tbody.appendChild(tr);
    }
  }

  // erfc(x) for x >= 0 (Abramowitz and Stegun 7.1.26, |error| < 1.5e-7).
  function erfc(x) {
    const t = 1 / (1 + 0.3275911 * x);
    const poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    return poly * Math.exp(-x * x);
  }
  // The two-sided p-value of the Mann-Whitney U test, as weft::bench::mann_whitney_p (normal
  // approximation with tie and continuity corrections); null with fewer than 2 samples a side.
  function mannWhitneyP(a, b) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length < 2 || b.length < 2) return null;
    const all = a.map(function (v) { return [Number(v), 0]; }).concat(b.map(function (v) { return [Number(v), 1]; }));
    if (all.some(function (p) { return !isFinite(p[0]); })) return null;
    all.sort(function (p, q) { return p[0] - q[0]; });
    const n = all.length, n1 = a.length, n2 = b.length;
    let r1 = 0, ties = 0;
    for (let i = 0; i < n;) {
      let j = i;
      while (j < n && all[j][0] === all[i][0]) j++;
      const rank = (i + j + 1) / 2, t = j - i;
      ties += t * t * t - t;
      for (let k = i; k < j; k++) if (all[k][1] === 0) r1 += rank;
      i = j;
    }
    const u1 = r1 - n1 * (n1 + 1) / 2, u = Math.max(u1, n1 * n2 - u1);
    const variance = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)));
    if (!(variance > 0)) return 1;
    const z = (u - n1 * n2 / 2 - 0.5) / Math.sqrt(variance);
    return Math.min(1, Math.max(0, z <= 0 ? 1 : erfc(z / Math.SQRT2)));
  }

  // Ratio of medians of the selected runs: the first selected is the baseline.
  function renderCompare(container, runs, selectedIds) {
    clear(container);
    const sel = selectedIds.map(function (id) { return findRun(runs, id); }).filter(Boolean);
    if (sel.length < 2) {
      container.appendChild(el('p', { className: 'muted small', id: 'compare-hint',
        text: sel.length === 1 ? 'Tick one more run to compare it with ' + sel[0].id + '.' : 'Tick two runs in the table to compare their medians.' }));
      return;
    }
    const base = sel[0], bm = medianOf(base);
    const list = el('ul');
    sel.slice(1).forEach(function (other, i) {
      const om = medianOf(other);
      const ratio = bm > 0 && om > 0 ? om / bm : null;
      let verdict = '';
      if (ratio !== null) {
        verdict = ratio < 1 ? other.id + ' is ' + fmtNum(1 / ratio, 3) + '\u00d7 faster than ' + base.id
          : ratio > 1 ? other.id + ' is ' + fmtNum(ratio, 3) + '\u00d7 slower than ' + base.id : 'same median';
      }
      const p = mannWhitneyP(timeOf(base).samples, timeOf(other).samples);
      if (verdict && p !== null) {
        verdict += p < 0.05 ? ' (significant: Mann-Whitney p = ' + fmtNum(p, 3) + ')'
          : ' (not significant: Mann-Whitney p = ' + fmtNum(p, 3) + ')';
      }
      const differs = [];
      if (other.benchmark !== base.benchmark) differs.push('benchmark');
      if (sizesLabel(other) !== sizesLabel(base)) differs.push('sizes');
      if (other.threads !== base.threads) differs.push('threads');
      list.appendChild(el('li', null, [
        'median ' + other.id + ' / ' + base.id + ' = ',
        el('span', { className: 'ratio', id: i === 0 ? 'compare-ratio' : null, text: ratio === null ? 'n/a' : fmtNum(ratio, 3) }),
        ' (' + fmtPos(om) + ' ms vs ' + fmtPos(bm) + ' ms' + (verdict ? '; ' + verdict : '') + ')',
        differs.length ? el('span', { className: 'badge warn', text: 'different ' + differs.join(', ') }) : null
      ]));
    });
    container.appendChild(el('p', { className: 'small', text: 'Baseline: ' + runLabel(base) }));
    container.appendChild(list);
  }

  function renderDetails(run) {
    setText('details-title', run ? 'Run ' + run.id + ': ' + [run.benchmark, sizesLabel(run), run.variant, str(run.threads) + (run.threads === 1 ? ' thread' : ' threads')].join(', ') : 'Run details');
    const dl = byId('run-summary');
    clear(dl);
    const put = function (what, value) { if (dl && value !== '' && value !== null && value !== undefined) { dl.appendChild(el('dt', { text: what })); dl.appendChild(el('dd', null, [value])); } };
    const placeholder = run ? '(not available)' : '(no run yet)';
    if (run) {
      const t = timeOf(run), check = run.check || {}, w = workOf(run);
      put('Started', str(run.started));
      put('Target', str(run.target));
      put('Median', fmtPos(t.median) + ' ms (p10 ' + fmtPos(t.p10) + ', p90 ' + fmtPos(t.p90) + ', mean ' + fmtPos(t.mean) + ' \u00b1 ' + fmtNum(num(t.stddev)) + ', ' + str(t.reps) + ' reps)');
      put('Min / max', fmtPos(t.min) + ' / ' + fmtPos(t.max) + ' ms');
      put('First call', fmtPos(run.first_call_ms) + ' ms');
      put('Check', str(check.status || 'none') + (check.message ? ': ' + check.message : ''));
      if (num(w.flops) > 0 || num(w.bytes) > 0) {
        put('Work', fmtCompact(num(w.flops)) + ' flop, ' + fmtCompact(num(w.bytes)) + ' B; ' + fmtPos(gflopsOf(run)) + ' GFLOP/s, ' + fmtPos(gbsOf(run)) + ' GB/s, intensity ' + fmtPos(intensityOf(run)) + ' flop/B');
      }
      for (const p of peersOf(run)) {
        const s = speedupOf(run, p);
        put('Peer ' + str(p.name), fmtPos(num(p.time_ms && p.time_ms.median)) + ' ms, speedup \u00d7' + (s === null ? '\u2014' : fmtNum(s)));
      }
      if (run.unstable) put('Unstable', 'yes: the spread of the timings is large');
      if (Array.isArray(run.warnings) && run.warnings.length) {
        put('Warnings', el('ul', { className: 'warnings' }, run.warnings.map(function (x) { return el('li', { text: str(x) }); })));
      }
    }
    setText('run-schedule', run && run.schedule ? run.schedule : placeholder);
    setText('loop-nest', run && run.loop_nest ? run.loop_nest : placeholder);
    setText('profile', run && run.profile ? run.profile : placeholder);
    setText('lowered-ir', run && run.lowered_ir ? run.lowered_ir : placeholder);
  }

  // ---- charts ----
  const charts = {};
  function chartAvailable() { return typeof Chart !== 'undefined'; }
  function setupChartDefaults() {
    if (!chartAvailable() || !Chart.defaults) return;
    try {
      Chart.defaults.font.family = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';
      Chart.defaults.font.size = 11;
      Chart.defaults.color = '#3a4252';
    } catch (e) { /* older/stub Chart */ }
  }
  function makeChart(key, canvasId, config) {
    if (charts[key]) { try { charts[key].destroy(); } catch (e) { /* ignore */ } delete charts[key]; }
    const canvas = byId(canvasId);
    if (!canvas || !chartAvailable()) return null;
    charts[key] = new Chart(canvas, config);
    return charts[key];
  }
  function rgba(hex, a) {
    const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex);
    if (!m) return hex;
    return 'rgba(' + parseInt(m[1], 16) + ',' + parseInt(m[2], 16) + ',' + parseInt(m[3], 16) + ',' + a + ')';
  }
  function baseOptions() {
    return {
      responsive: true, maintainAspectRatio: false, animation: false,
      plugins: { legend: { position: 'bottom', labels: { boxWidth: 12, boxHeight: 12 } } },
      scales: {}
    };
  }
  // Log axis labels at 1, 2, 5 x 10^n and at both ends.
  function logTicks(format) {
    return function (value, index, ticks) {
      const v = Number(value);
      if (!(v > 0)) return '';
      if (index === 0 || (ticks && index === ticks.length - 1)) return format(v);
      const mant = v / Math.pow(10, Math.floor(Math.log10(v) + 1e-9));
      const keep = [1, 2, 5, 10].some(function (k) { return Math.abs(mant - k) < 1e-6 * k; });
      return keep ? format(v) : '';
    };
  }
  const chartUnavailable = 'Chart.js is not loaded: no plot.';
  // A dashed horizontal line at speedup 1.
  const unityLine = {
    id: 'weftUnityLine',
    afterDatasetsDraw: function (chart) {
      const y = chart.scales && chart.scales.y, area = chart.chartArea;
      if (!y || !area) return;
      const py = y.getPixelForValue(1);
      if (!(py >= area.top && py <= area.bottom)) return;
      const ctx = chart.ctx;
      ctx.save();
      ctx.strokeStyle = '#555'; ctx.lineWidth = 1; ctx.setLineDash([5, 4]);
      ctx.beginPath(); ctx.moveTo(area.left, py); ctx.lineTo(area.right, py); ctx.stroke();
      ctx.restore();
    }
  };

  // Bars: speedup per peer of `focus` and of the earlier runs of its benchmark.
  function drawSpeedup(canvasId, noteId, runs, focus) {
    const notes = [];
    let labels = [], datasets = [];
    if (!focus) {
      notes.push(runs.length ? '' : 'No runs yet.');
    } else {
      if (!peersOf(focus).length) {
        const withPeers = runs.filter(function (r) { return peersOf(r).length > 0; });
        const alt = withPeers[withPeers.length - 1];
        notes.push('Run ' + focus.id + ' has no peer timings (the benchmark has no peers, or peers were off)' +
          (alt ? '; showing ' + alt.id + ', the latest run with peers.' : '.'));
        if (alt) focus = alt;
      }
      const upto = runs.indexOf(focus) >= 0 ? runs.slice(0, runs.indexOf(focus) + 1) : runs.concat([focus]);
      const same = upto.filter(function (r) { return r.benchmark === focus.benchmark && peersOf(r).length > 0; });
      const shown = same.slice(-8);
      if (same.length > shown.length) notes.push('Showing the last ' + shown.length + ' runs of ' + focus.benchmark + ' with peers.');
      for (const r of shown) for (const p of peersOf(r)) if (labels.indexOf(str(p.name)) < 0) labels.push(str(p.name));
      datasets = shown.map(function (r, i) {
        const isFocus = r === focus;
        const color = isFocus ? PALETTE[0] : PALETTE[1 + (i % (PALETTE.length - 1))];
        return {
          label: runLabel(r) + (isFocus ? ' (shown)' : ''),
          data: labels.map(function (name) {
            const p = peersOf(r).filter(function (q) { return str(q.name) === name; })[0];
            return p ? speedupOf(r, p) : null;
          }),
          backgroundColor: rgba(color, isFocus ? 0.9 : 0.4),
          borderColor: color, borderWidth: isFocus ? 2 : 1
        };
      });
    }
    if (!chartAvailable()) notes.push(chartUnavailable);
    setText(noteId, notes.filter(Boolean).join(' '));
    const options = baseOptions();
    options.scales = {
      x: { title: { display: true, text: 'peer' } },
      y: { beginAtZero: true, suggestedMax: 1.2, title: { display: true, text: 'speedup = peer time / weft time' } }
    };
    options.plugins.title = { display: datasets.length > 0, text: datasets.length ? focus.benchmark + ': >1 means weft is faster' : '' };
    options.plugins.tooltip = { callbacks: { label: function (ctx) { return ctx.dataset.label + ': \u00d7' + fmtNum(ctx.parsed.y, 3); } } };
    return makeChart('speedup', canvasId, { type: 'bar', data: { labels: labels, datasets: datasets }, options: options, plugins: [unityLine] });
  }

  // Lines: median time against number of elements, one line per benchmark+variant+threads(+target).
  function drawSize(canvasId, noteId, runs, logY) {
    const targets = {};
    for (const r of runs) targets[str(r.target)] = true;
    const manyTargets = Object.keys(targets).length > 1;
    const groups = new Map();
    for (const r of runs) {
      const m = medianOf(r);
      if (!(m > 0)) continue;
      const key = [str(r.benchmark), str(r.variant), str(r.threads) + 't'].concat(manyTargets ? [str(r.target)] : []).join(' \u00b7 ');
      if (!groups.has(key)) groups.set(key, new Map());
      const x = elementsOf(r.sizes);
      groups.get(key).set(x, { x: x, y: m, size: sizesLabel(r), id: str(r.id) }); // a later run at a size replaces an earlier one
    }
    let i = 0;
    const datasets = [];
    groups.forEach(function (points, key) {
      const color = PALETTE[i++ % PALETTE.length];
      datasets.push({
        label: key,
        data: Array.from(points.values()).sort(function (a, b) { return a.x - b.x; }),
        borderColor: color, backgroundColor: color, pointRadius: 3.5, pointHoverRadius: 5,
        borderWidth: 2, tension: 0, fill: false, showLine: true
      });
    });
    const notes = [];
    if (!datasets.length) notes.push('No runs yet. "Sweep" runs every sweep size of the benchmark.');
    else if (datasets.every(function (d) { return d.data.length < 2; })) notes.push('Each line has one size so far: use "Sweep" to run every sweep size.');
    if (!chartAvailable()) notes.push(chartUnavailable);
    setText(noteId, notes.join(' '));
    const options = baseOptions();
    options.scales = {
      x: { type: 'logarithmic', title: { display: true, text: 'elements (product of the sizes)' }, ticks: { callback: logTicks(fmtCompact) } },
      y: logY ? { type: 'logarithmic', title: { display: true, text: 'median time (ms)' }, ticks: { callback: logTicks(function (v) { return fmtNum(v, 3); }) } }
        : { type: 'linear', beginAtZero: true, title: { display: true, text: 'median time (ms)' } }
    };
    if (!datasets.length) {
      options.scales.x.min = 1e3; options.scales.x.max = 1e7;
      if (logY) { options.scales.y.min = 0.1; options.scales.y.max = 100; } else { options.scales.y.max = 1; }
    }
    options.plugins.tooltip = {
      callbacks: {
        label: function (ctx) {
          const p = ctx.raw || {};
          return ctx.dataset.label + ': ' + str(p.size) + ' \u2192 ' + fmtNum(p.y, 3) + ' ms (' + str(p.id) + ')';
        }
      }
    };
    return makeChart('size', canvasId, { type: 'line', data: { datasets: datasets }, options: options });
  }

  // Scatter: GFLOP/s against flop/byte, log-log, with the roof min(peak, bandwidth * intensity).
  function drawRoofline(canvasId, noteId, runs, machine) {
    machine = machine || {};
    const peak = num(machine.peak_gflops), bw = num(machine.bandwidth_gbs);
    const byBench = new Map();
    let skipped = 0;
    const xs = [], ys = [];
    for (const r of runs) {
      const x = intensityOf(r), y = gflopsOf(r);
      if (!(x > 0 && y > 0)) { skipped++; continue; }
      const key = str(r.benchmark);
      if (!byBench.has(key)) byBench.set(key, []);
      byBench.get(key).push({ x: x, y: y, id: str(r.id), label: runLabel(r) });
      xs.push(x); ys.push(y);
    }
    const datasets = [];
    let i = 0;
    byBench.forEach(function (points, key) {
      const color = PALETTE[i++ % PALETTE.length];
      datasets.push({ label: key, data: points, backgroundColor: rgba(color, 0.75), borderColor: color, pointRadius: 4.5, pointHoverRadius: 6, showLine: false });
    });
    const ridge = peak > 0 && bw > 0 ? peak / bw : 0;
    let lo = xs.length ? Math.min.apply(null, xs) / 4 : 0, hi = xs.length ? Math.max.apply(null, xs) * 4 : 0;
    if (ridge > 0) { lo = lo > 0 ? Math.min(lo, ridge / 8) : ridge / 16; hi = Math.max(hi, ridge * 8); }
    if (!(lo > 0 && hi > lo)) { lo = 0.01; hi = 100; }
    const notes = [];
    if (peak > 0 || bw > 0) {
      const roofAt = function (x) { return peak > 0 && bw > 0 ? Math.min(peak, bw * x) : peak > 0 ? peak : bw * x; };
      const pts = [lo];
      if (ridge > lo && ridge < hi) pts.push(ridge);
      pts.push(hi);
      const label = 'roof: ' + (peak > 0 ? fmtNum(peak) + ' GFLOP/s' : '') + (peak > 0 && bw > 0 ? ', ' : '') + (bw > 0 ? fmtNum(bw) + ' GB/s' : '');
      datasets.push({
        label: label, data: pts.map(function (x) { return { x: x, y: roofAt(x), id: '', label: label }; }),
        showLine: true, pointRadius: 0, pointHoverRadius: 0, borderColor: '#444', backgroundColor: '#444',
        borderWidth: 1.5, borderDash: [6, 4], fill: false, tension: 0
      });
      if (!(peak > 0)) notes.push('Peak GFLOP/s not measured: only the bandwidth roof is drawn.');
      if (!(bw > 0)) notes.push('Bandwidth not measured: only the compute roof is drawn.');
    } else {
      notes.push('Peak GFLOP/s and memory bandwidth are not measured yet: no roof lines.');
    }
    if (skipped) notes.push(skipped === 1 ? '1 run does not state its work and is not shown.' : skipped + ' runs do not state their work and are not shown.');
    if (!chartAvailable()) notes.push(chartUnavailable);
    setText(noteId, notes.join(' '));
    const options = baseOptions();
    options.scales = {
      x: { type: 'logarithmic', min: lo, max: hi, title: { display: true, text: 'arithmetic intensity (flop/byte)' }, ticks: { callback: logTicks(function (v) { return fmtNum(v, 2); }) } },
      y: { type: 'logarithmic', title: { display: true, text: 'GFLOP/s' }, ticks: { callback: logTicks(function (v) { return fmtNum(v, 3); }) } }
    };
    if (!ys.length && !(peak > 0 || bw > 0)) { options.scales.y.min = 0.1; options.scales.y.max = 1000; }
    options.plugins.tooltip = {
      callbacks: {
        label: function (ctx) {
          const p = ctx.raw || {};
          return str(p.label) + ': ' + fmtNum(p.x, 3) + ' flop/B, ' + fmtNum(p.y, 3) + ' GFLOP/s';
        }
      }
    };
    return makeChart('roofline', canvasId, { type: 'scatter', data: { datasets: datasets }, options: options });
  }

  return {
    PHASES: PHASES, isNum: isNum, num: num, fmtNum: fmtNum, fmtPos: fmtPos, fmtCompact: fmtCompact, fmtDuration: fmtDuration,
    str: str, el: el, clear: clear, byId: byId, setText: setText, domId: domId,
    sizesLabel: sizesLabel, sizesTitle: sizesTitle, elementsOf: elementsOf, medianOf: medianOf, runLabel: runLabel, findRun: findRun,
    mannWhitneyP: mannWhitneyP,
    renderResults: renderResults, renderCompare: renderCompare, renderDetails: renderDetails,
    chartAvailable: chartAvailable, setupChartDefaults: setupChartDefaults,
    drawSpeedup: drawSpeedup, drawSize: drawSize, drawRoofline: drawRoofline
  };
})();

// The parts of the page that show runs: the table, the comparison, the details and the three plots.
// view: {runs, selected: [ids], detailId, machine, onChange()} ; returns the run shown in the details.
function weftRenderRuns(view, report) {
  const U = WeftUI;
  const runs = view.runs;
  const focus = (view.detailId !== null && view.detailId !== undefined && U.findRun(runs, view.detailId)) || runs[runs.length - 1] || null;
  const guard = function (what, fn) {
    try { fn(); } catch (e) { if (report) report('Could not draw the ' + what + ': ' + (e && e.message ? e.message : e)); }
  };
  guard('results table', function () {
    U.renderResults(U.byId('results-body'), runs, {
      selected: view.selected, currentId: focus ? focus.id : null,
      onToggle: function (id, on) {
        const k = view.selected.indexOf(id);
        if (on && k < 0) view.selected.push(id);
        if (!on && k >= 0) view.selected.splice(k, 1);
        guard('comparison', function () { U.renderCompare(U.byId('compare-body'), runs, view.selected); });
        U.byId('clear-selection').hidden = view.selected.length === 0;
      },
      onShow: function (id) { view.detailId = id; weftRenderRuns(view, report); }
    });
    U.byId('results-empty').hidden = runs.length > 0;
  });
  view.selected = view.selected.filter(function (id) { return !!U.findRun(runs, id); });
  guard('comparison', function () {
    U.renderCompare(U.byId('compare-body'), runs, view.selected);
    U.byId('clear-selection').hidden = view.selected.length === 0;
  });
  guard('run details', function () { U.renderDetails(focus); });
  guard('speedup plot', function () { U.drawSpeedup('plot-speedup', 'speedup-note', runs, focus); });
  guard('time-against-size plot', function () { U.drawSize('plot-size', 'size-note', runs, U.byId('size-logy').checked); });
  guard('roofline', function () { U.drawRoofline('plot-roofline', 'roofline-note', runs, view.machine); });
  if (view.onChange) view.onChange(focus);
  return focus;
}

function weftMachineText(m) {
  const U = WeftUI;
  if (!m || typeof m !== 'object') return 'Machine: unknown';
  const parts = [];
  if (m.cpu_name) parts.push(U.str(m.cpu_name));
  if (m.cpu) parts.push('(' + U.str(m.cpu) + ')');
  if (U.num(m.threads_max) > 0) parts.push(m.threads_max + ' threads');
  parts.push(U.num(m.peak_gflops) > 0 ? 'peak ' + U.fmtNum(m.peak_gflops) + ' GFLOP/s' : 'peak not measured');
  parts.push(U.num(m.bandwidth_gbs) > 0 ? U.fmtNum(m.bandwidth_gbs) + ' GB/s' : 'bandwidth not measured');
  return parts.join(' \u00b7 ');
}
