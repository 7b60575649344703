// iket report: draws the per-warp timeline and the activity strip from the
// JSON in #iket-data. No network, no libraries.
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('iket-data').textContent);
  var RF = 7, MF = 3; // tuple widths of warp.r and warp.m (see payload.go)
  var GUTTER = 190, AXIS = 26, SUB = 13, PAD = 3, GROUP = 22, MAXH = 470, STRIP = 130;
  var FLAG_UNCLOSED = 1, FLAG_TRUNCATED = 2;
  var PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1',
    '#ff9da7', '#9c755f', '#2f9e9e', '#8f6bd1', '#d4a017', '#3b8bd0', '#c9514c', '#6b9e3a',
    '#d16ba5', '#5f7d95', '#e8833a', '#47a38c', '#a05195'];
  var names = data.names || [], roles = data.roles || [], warps = data.warps || [];

  // Colours by name index among the names that ranges use, in table order.
  var colorOf = {}, used = {}, rangeNames = [], markNames = {};
  warps.forEach(function (w) {
    for (var i = 0; i < w.r.length; i += RF) used[w.r[i]] = true;
    for (var j = 0; j < w.m.length; j += MF) markNames[w.m[j]] = true;
  });
  if (data.activity) data.activity.names.forEach(function (n) { if (n >= 0) used[n] = true; });
  names.forEach(function (_, i) {
    if (used[i]) { colorOf[i] = PALETTE[rangeNames.length % PALETTE.length]; rangeNames.push(i); }
  });
  function color(n) { return n < 0 ? '#b8c0c8' : (colorOf[n] || '#888'); }

  function fmtNs(ns) {
    var a = Math.abs(ns);
    if (a < 1e3) return (+ns.toFixed(1)) + ' ns';
    if (a < 1e6) return (+(ns / 1e3).toPrecision(4)) + ' µs';
    if (a < 1e9) return (+(ns / 1e6).toPrecision(4)) + ' ms';
    return (+(ns / 1e9).toPrecision(4)) + ' s';
  }
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // Legend.
  var legend = document.getElementById('legend');
  rangeNames.forEach(function (n) {
    var s = el('span'); var i = el('i'); i.style.background = color(n);
    s.appendChild(i); s.appendChild(document.createTextNode(names[n])); legend.appendChild(s);
  });
  if (data.activity && data.activity.names.indexOf(-1) >= 0) {
    var so = el('span'); var io = el('i'); io.style.background = color(-1);
    so.appendChild(io); so.appendChild(document.createTextNode('other ranges')); legend.appendChild(so);
  }
  [['mark', 'mark (tick)'], ['hatch', 'unclosed or truncated range'], ['alive', 'warps running (strip)']].forEach(function (x) {
    var s = el('span'); s.appendChild(el('i', { 'class': x[0] })); s.appendChild(document.createTextNode(x[1])); legend.appendChild(s);
  });

  // Rows: a header per role, then one row per warp; filtered by SM and CTA.
  var rows = [], totalH = 0, shown = 0;
  function val(id) { var v = document.getElementById(id).value; return v === '' ? null : +v; }
  function layout() {
    var smF = val('sm-from'), smT = val('sm-to'), cF = val('cta-from'), cT = val('cta-to');
    rows = []; totalH = 0; shown = 0;
    var last = null, header = null;
    warps.forEach(function (w) {
      if ((smF !== null && w.sm < smF) || (smT !== null && w.sm > smT) ||
          (cF !== null && w.ctaLinear < cF) || (cT !== null && w.ctaLinear > cT)) return;
      if (w.role !== last || header === null) {
        last = w.role;
        header = { group: true, role: w.role, count: 0, y: totalH, h: GROUP };
        rows.push(header); totalH += GROUP;
      }
      // A folded row of idle warps counts as the warps it stands for.
      var n = w.idle || 1;
      header.count += n;
      var h = PAD * 2 + SUB * Math.max(1, w.depth + w.lanes);
      rows.push({ w: w, y: totalH, h: h }); totalH += h; shown += n;
    });
  }

  var tl = document.getElementById('timeline'), st = document.getElementById('activity');
  var tip = document.getElementById('tooltip');
  var view = { a: 0, b: Math.max(1, data.end), y: 0 };
  // fit shows [a, b] with a margin; resetView fits the warps shown (the
  // whole launch when they are all of it).
  function fit(a, b) {
    var span = Math.max(1, b - a);
    view.a = a - span * 0.01; view.b = b + span * 0.01; view.y = 0;
  }
  function resetView() {
    var a = Infinity, b = -Infinity;
    rows.forEach(function (row) {
      var w = row.w, i;
      if (!w) return;
      if (w.started) { a = Math.min(a, w.first); b = Math.max(b, w.last); }
      for (i = 0; i < w.r.length; i += RF) { a = Math.min(a, w.r[i + 2]); b = Math.max(b, w.r[i + 3]); }
      for (i = 0; i < w.m.length; i += MF) { a = Math.min(a, w.m[i + 2]); b = Math.max(b, w.m[i + 2]); }
    });
    if (a > b) { a = 0; b = data.end; }
    fit(a, b);
  }
  function plotW() { return Math.max(50, tl.clientWidth - GUTTER - 10); }
  function xOf(t) { return GUTTER + (t - view.a) / (view.b - view.a) * plotW(); }
  function tOf(x) { return view.a + (x - GUTTER) / plotW() * (view.b - view.a); }
  function viewH() { return Math.min(MAXH, AXIS + totalH + 4); }
  function clampY() { view.y = Math.max(0, Math.min(view.y, AXIS + totalH + 4 - viewH())); }

  function sizeCanvas(c, h) {
    var dpr = window.devicePixelRatio || 1, w = c.parentNode.clientWidth;
    c.style.height = h + 'px';
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
      c.width = Math.round(w * dpr); c.height = Math.round(h * dpr);
    }
    var g = c.getContext('2d'); g.setTransform(dpr, 0, 0, dpr, 0, 0);
    return g;
  }

  var hatch = null;
  function hatchPattern(g) {
    if (hatch) return hatch;
    var p = document.createElement('canvas'); p.width = 6; p.height = 6;
    var q = p.getContext('2d');
    q.strokeStyle = 'rgba(255,255,255,0.85)'; q.lineWidth = 2;
    q.beginPath(); q.moveTo(-1, 7); q.lineTo(7, -1); q.moveTo(5, 7); q.lineTo(7, 5); q.moveTo(-1, 1); q.lineTo(1, -1); q.stroke();
    hatch = g.createPattern(p, 'repeat');
    return hatch;
  }

  function ticks() {
    var span = view.b - view.a, target = plotW() / 110;
    var step = Math.pow(10, Math.floor(Math.log10(span / target)));
    [1, 2, 5, 10].some(function (m) { if (span / (step * m) <= target) { step *= m; return true; } return false; });
    var out = [];
    for (var t = Math.ceil(view.a / step) * step; t <= view.b; t += step) out.push(t);
    return out;
  }

  function drawAxis(g, h, labels) {
    g.font = '11px system-ui, "Liberation Sans", "DejaVu Sans", sans-serif';
    ticks().forEach(function (t) {
      var x = Math.round(xOf(t)) + 0.5;
      g.strokeStyle = '#eef1f4'; g.beginPath(); g.moveTo(x, labels ? AXIS : 0); g.lineTo(x, h); g.stroke();
      if (labels) {
        g.strokeStyle = '#8c959f'; g.beginPath(); g.moveTo(x, AXIS - 5); g.lineTo(x, AXIS); g.stroke();
        g.fillStyle = '#444c56'; g.textAlign = 'center'; g.fillText(fmtNs(t), x, AXIS - 9);
      }
    });
  }

  function draw() {
    clampY();
    document.body.setAttribute('data-view', Math.round(view.a) + '..' + Math.round(view.b));
    var H = viewH(), W = tl.clientWidth, g = sizeCanvas(tl, H);
    g.clearRect(0, 0, W, H);
    g.save(); g.beginPath(); g.rect(GUTTER, 0, W - GUTTER, H); g.clip();
    drawAxis(g, H, true);
    g.restore();
    g.strokeStyle = '#8c959f'; g.beginPath(); g.moveTo(0, AXIS + 0.5); g.lineTo(W, AXIS + 0.5); g.stroke();
    g.save(); g.beginPath(); g.rect(0, AXIS + 1, W, H - AXIS - 1); g.clip();
    var top = view.y, bottom = view.y + H - AXIS;
    var font = '12px system-ui, "Liberation Sans", "DejaVu Sans", sans-serif';
    for (var k = 0; k < rows.length; k++) {
      var row = rows[k];
      if (row.y + row.h < top) continue;
      if (row.y > bottom) break;
      var y = AXIS + row.y - view.y;
      if (row.group) {
        g.fillStyle = '#eef2f6'; g.fillRect(0, y, W, row.h);
        g.fillStyle = '#1f2328'; g.font = '600 ' + font; g.textAlign = 'left'; g.textBaseline = 'middle';
        var rn = row.role >= 0 ? roles[row.role] : 'no role';
        g.fillText(rn + ' · ' + row.count + (row.count === 1 ? ' warp' : ' warps'), 8, y + row.h / 2);
        continue;
      }
      drawWarp(g, row.w, y, row.h, W, font, k);
    }
    g.restore();
    // Scroll indicator.
    var full = AXIS + totalH + 4;
    if (full > H) {
      var th = Math.max(20, (H - AXIS) * (H - AXIS) / (full - AXIS)), ty = AXIS + (H - AXIS - th) * view.y / (full - H);
      g.fillStyle = 'rgba(87,96,106,0.35)'; g.fillRect(W - 6, ty, 4, th);
    }
    drawStrip();
  }

  // idleText names a folded row: "3 idle producer warps".
  function idleText(w) {
    var rn = w.role >= 0 ? roles[w.role] + ' ' : '';
    return w.idle + ' idle ' + rn + (w.idle === 1 ? 'warp' : 'warps');
  }

  function drawWarp(g, w, y, h, W, font, k) {
    if (k % 2 === 0) { g.fillStyle = '#fafbfc'; g.fillRect(0, y, W, h); }
    g.strokeStyle = '#eef1f4'; g.beginPath(); g.moveTo(0, y + h - 0.5); g.lineTo(W, y + h - 0.5); g.stroke();
    // Label.
    g.font = font; g.textAlign = 'left'; g.textBaseline = 'middle';
    var bad = (w.started && !w.finished) || w.dropped > 0;
    g.fillStyle = bad ? '#b42318' : '#1f2328';
    var label = 'SM ' + w.sm + ' · CTA ' + ctaText(w) + ' · w' + w.warp;
    if (w.idle) label = 'CTA ' + ctaText(w) + ': ' + idleText(w);
    if (w.dropped > 0) label += ' · −' + w.dropped;
    else if (w.started && !w.finished) label += ' · unfinished';
    g.fillText(label, 8, y + Math.min(h / 2, PAD + SUB / 2 + 1), GUTTER - 12);
    g.save(); g.beginPath(); g.rect(GUTTER, y, W - GUTTER, h); g.clip();
    // Lifetime.
    if (w.started) {
      var la = xOf(w.first), lb = xOf(w.last);
      g.fillStyle = 'rgba(140,149,159,0.16)'; g.fillRect(la, y + 1, Math.max(1, lb - la), h - 2);
      if (!w.finished) { g.fillStyle = '#b42318'; g.fillRect(lb - 1, y, 2, h); }
    }
    var r = w.r, x0min = GUTTER - 2, x1max = W + 2;
    g.textBaseline = 'middle'; g.font = '11px system-ui, "Liberation Sans", "DejaVu Sans", sans-serif';
    for (var i = 0; i < r.length; i += RF) {
      var xa = xOf(r[i + 2]), xb = xOf(r[i + 3]);
      if (xb < x0min || xa > x1max) continue;
      var sub = r[i + 5] >= 0 ? w.depth + r[i + 5] : r[i + 4];
      var ry = y + PAD + sub * SUB + 1, rh = SUB - 2, rw = Math.max(1, xb - xa);
      g.fillStyle = color(r[i]); g.fillRect(xa, ry, rw, rh);
      if (r[i + 6]) {
        g.fillStyle = hatchPattern(g); g.fillRect(xa, ry, rw, rh);
        g.strokeStyle = '#b42318'; g.setLineDash([3, 2]); g.strokeRect(xa + 0.5, ry + 0.5, rw - 1, rh - 1); g.setLineDash([]);
      }
      if (rw > 44) {
        var vis0 = Math.max(xa, GUTTER), vis1 = Math.min(xb, W);
        var txt = names[r[i]] + (r[i + 6] & FLAG_UNCLOSED ? ' (unclosed)' : r[i + 6] & FLAG_TRUNCATED ? ' (truncated)' : '');
        if (vis1 - vis0 > 44) {
          g.fillStyle = '#ffffff'; g.textAlign = 'left';
          g.fillText(txt, vis0 + 3, ry + rh / 2 + 0.5, vis1 - vis0 - 6);
        }
      }
    }
    var m = w.m;
    for (var j = 0; j < m.length; j += MF) {
      var xm = xOf(m[j + 2]);
      if (xm < x0min || xm > x1max) continue;
      g.fillStyle = '#1f2328'; g.fillRect(Math.round(xm) - 1, y + 1, 2, h - 2);
      g.beginPath(); g.moveTo(xm - 4, y + 1); g.lineTo(xm + 4, y + 1); g.lineTo(xm, y + 6); g.closePath(); g.fill();
    }
    g.restore();
  }
  function ctaText(w) {
    return w.cta[2] > 0 || w.cta[1] > 0 ? w.cta.join(',') : String(w.cta[0]);
  }

  function drawStrip() {
    var act = data.activity, W = st.clientWidth, g = sizeCanvas(st, STRIP), H = STRIP - 18;
    g.clearRect(0, 0, W, STRIP);
    g.font = '11px system-ui, "Liberation Sans", "DejaVu Sans", sans-serif';
    if (!act) { g.fillStyle = '#59636e'; g.fillText('no ranges', GUTTER, 20); return; }
    var n = act.series.length ? act.series[0].length : (act.alive ? act.alive.length : 0);
    var peak = 0, i, s;
    for (i = 0; i < n; i++) {
      var sum = 0;
      for (s = 0; s < act.series.length; s++) sum += act.series[s][i];
      peak = Math.max(peak, sum, act.alive ? act.alive[i] : 0);
    }
    peak = peak || 1;
    var yOf = function (v) { return 4 + H - 4 - v / peak * (H - 8); };
    g.save(); g.beginPath(); g.rect(GUTTER, 0, W - GUTTER, STRIP); g.clip();
    drawAxis(g, H + 4, false);
    var base = new Float64Array(n);
    for (s = 0; s < act.series.length; s++) {
      var v = act.series[s];
      g.fillStyle = color(act.names[s]); g.beginPath();
      for (i = 0; i < n; i++) {
        var xa = xOf(act.start + i * act.width), xb = xOf(act.start + (i + 1) * act.width);
        if (xb < GUTTER - 2 || xa > W + 2 || v[i] <= 0) continue;
        g.rect(xa, yOf(base[i] + v[i]), Math.max(0.6, xb - xa), yOf(base[i]) - yOf(base[i] + v[i]));
      }
      g.fill();
      for (i = 0; i < n; i++) base[i] += v[i];
    }
    if (act.alive) {
      g.strokeStyle = '#1f2328'; g.lineWidth = 1.5; g.beginPath();
      for (i = 0; i < n; i++) {
        var xc = xOf(act.start + (i + 0.5) * act.width), yc = yOf(act.alive[i]);
        if (i === 0) g.moveTo(xc, yc); else g.lineTo(xc, yc);
      }
      g.stroke(); g.lineWidth = 1;
    }
    g.restore();
    g.strokeStyle = '#8c959f'; g.beginPath(); g.moveTo(GUTTER + 0.5, 4); g.lineTo(GUTTER + 0.5, H + 4); g.lineTo(W, H + 4.5); g.stroke();
    g.fillStyle = '#444c56'; g.textAlign = 'right'; g.textBaseline = 'middle';
    g.fillText((+peak.toPrecision(3)) + ' warps', GUTTER - 6, 10);
    g.fillText('0', GUTTER - 6, H + 2);
    g.textAlign = 'left';
    g.fillText('bin ' + fmtNs(act.width), 8, H / 2 + 6);
    g.textAlign = 'center';
    ticks().forEach(function (t) { var x = xOf(t); if (x > GUTTER + 20) g.fillText(fmtNs(t), x, H + 12); });
  }

  // Interaction: wheel zoom, drag pan, hover.
  var frame = 0;
  function redraw() { if (!frame) frame = requestAnimationFrame(function () { frame = 0; draw(); }); }
  function zoomAt(x, factor) {
    var t = tOf(Math.max(GUTTER, x)), a = t - (t - view.a) * factor, b = t + (view.b - t) * factor;
    if (b - a < 20) return; // 20 ns is fine enough
    view.a = a; view.b = b; redraw();
  }
  [tl, st].forEach(function (c) {
    c.addEventListener('wheel', function (e) {
      e.preventDefault();
      if (e.shiftKey && c === tl) { view.y += e.deltaY || e.deltaX; redraw(); return; }
      var r = c.getBoundingClientRect();
      zoomAt(e.clientX - r.left, Math.pow(1.0015, e.deltaY));
    }, { passive: false });
    var drag = null;
    c.addEventListener('mousedown', function (e) {
      drag = { x: e.clientX, y: e.clientY, a: view.a, b: view.b, vy: view.y };
      c.classList.add('dragging'); hideTip();
    });
    window.addEventListener('mousemove', function (e) {
      if (!drag) return;
      var dt = (e.clientX - drag.x) / plotW() * (drag.b - drag.a);
      view.a = drag.a - dt; view.b = drag.b - dt;
      if (c === tl) view.y = drag.vy - (e.clientY - drag.y);
      redraw();
    });
    window.addEventListener('mouseup', function () { drag = null; c.classList.remove('dragging'); });
  });
  tl.addEventListener('mousemove', function (e) {
    var r = tl.getBoundingClientRect(), x = e.clientX - r.left, y = e.clientY - r.top;
    var hit = hitTest(x, y);
    if (!hit) { hideTip(); return; }
    showTip(hit, e.clientX, e.clientY);
  });
  tl.addEventListener('mouseleave', hideTip);
  document.getElementById('reset').addEventListener('click', function () { resetView(); redraw(); });
  document.getElementById('whole').addEventListener('click', function () { fit(0, data.end); redraw(); });
  function apply() { layout(); resetView(); redraw(); summarize(); }
  document.getElementById('apply').addEventListener('click', apply);
  ['sm-from', 'sm-to', 'cta-from', 'cta-to'].forEach(function (id) {
    document.getElementById(id).addEventListener('keydown', function (e) { if (e.key === 'Enter') apply(); });
  });
  window.addEventListener('resize', redraw);

  function hitTest(x, y) {
    if (y < AXIS || x < GUTTER) return null;
    var ry = y - AXIS + view.y, row = null;
    var lo = 0, hi = rows.length - 1;
    while (lo <= hi) {
      var mid = (lo + hi) >> 1;
      if (rows[mid].y > ry) hi = mid - 1;
      else if (rows[mid].y + rows[mid].h <= ry) lo = mid + 1;
      else { row = rows[mid]; break; }
    }
    if (!row || row.group) return null;
    var w = row.w, i, best = null, bestD = 5;
    for (i = 0; i < w.m.length; i += MF) {
      var d = Math.abs(xOf(w.m[i + 2]) - x);
      if (d < bestD) { bestD = d; best = { w: w, mark: i }; }
    }
    if (best) return best;
    var sub = Math.floor((ry - row.y - PAD) / SUB);
    for (i = 0; i < w.r.length; i += RF) {
      var s = w.r[i + 5] >= 0 ? w.depth + w.r[i + 5] : w.r[i + 4];
      if (s !== sub) continue;
      var xa = xOf(w.r[i + 2]), xb = Math.max(xOf(w.r[i + 3]), xa + 1);
      if (x >= xa - 2 && x <= xb + 2) {
        var dd = x < xa ? xa - x : x > xb ? x - xb : 0;
        if (!best || dd < best.d || (dd === best.d && xb - xa < best.wd)) best = { w: w, range: i, d: dd, wd: xb - xa };
      }
    }
    return best || { w: w };
  }

  function showTip(hit, cx, cy) {
    var w = hit.w, t = el('table'), head;
    function row(k, v, warn) {
      var tr = el('tr'); tr.appendChild(el('th', {}, k));
      var td = el('td', warn ? { 'class': 'warn' } : {}, v); tr.appendChild(td); t.appendChild(tr);
    }
    if (hit.range !== undefined) {
      var r = w.r, i = hit.range;
      head = names[r[i]];
      row('kind', r[i + 5] >= 0 ? 'start/end range, lane ' + r[i + 5] : 'push/pop range, depth ' + r[i + 4]);
      row('payload', String(r[i + 1]));
      row('duration', fmtNs(r[i + 3] - r[i + 2]));
      row('start', fmtNs(r[i + 2]));
      row('end', fmtNs(r[i + 3]));
      if (r[i + 6] & FLAG_UNCLOSED) row('unclosed', 'still open when the warp’s record ended', true);
      if (r[i + 6] & FLAG_TRUNCATED) row('truncated', 'its begin was lost to the wrapped buffer', true);
    } else if (hit.mark !== undefined) {
      head = names[w.m[hit.mark]] + ' (mark)';
      row('payload', String(w.m[hit.mark + 1]));
      row('time', fmtNs(w.m[hit.mark + 2]));
    } else if (w.idle) {
      head = idleText(w);
      row('recorded', 'no event but their role');
      if (w.started) row('alive', fmtNs(w.first) + ' – ' + fmtNs(w.last));
    } else {
      head = 'warp ' + w.slot;
      if (w.started) row('alive', fmtNs(w.first) + ' – ' + fmtNs(w.last) + ' (' + fmtNs(w.last - w.first) + ')');
      row('events', w.count + ' attempted, ' + w.stored + ' stored');
    }
    if (w.idle) row('warps', w.idleWarps.join(', ') + ' of their CTA, from slot ' + w.slot);
    else row('warp', 'slot ' + w.slot + ', warp ' + w.warp + ' of its CTA');
    row('SM', String(w.sm));
    row('CTA', '(' + w.cta.join(', ') + '), linear ' + w.ctaLinear);
    row('role', w.role >= 0 ? roles[w.role] : 'none');
    if (w.dropped > 0) row('dropped', w.dropped + ' events', true);
    if (w.started && !w.finished) row('finished', 'no: the warp never reached its end', true);
    if (w.clipped) row('clipped', 'only the first events of this warp are embedded', true);
    tip.textContent = '';
    tip.appendChild(el('b', {}, head)); tip.appendChild(t);
    tip.hidden = false;
    var tw = tip.offsetWidth, th = tip.offsetHeight;
    tip.style.left = Math.min(cx + 14, window.innerWidth - tw - 8) + 'px';
    tip.style.top = (cy + 14 + th > window.innerHeight ? cy - th - 10 : cy + 14) + 'px';
  }
  function hideTip() { tip.hidden = true; }

  function summarize() {
    var nr = 0, nm = 0;
    rows.forEach(function (r) { if (!r.group) { nr += r.w.r.length / RF; nm += r.w.m.length / MF; } });
    var c = data.capped, total = c.embeddedWarps + c.omittedWarps;
    var txt = shown + ' warps shown (' + nr + ' ranges, ' + nm + ' marks)';
    if (shown !== c.embeddedWarps) txt += ' of ' + c.embeddedWarps + ' embedded';
    if (total !== c.embeddedWarps) txt += '; the launch has ' + total + ' warps';
    var idle = 0;
    rows.forEach(function (r) { if (!r.group && r.w.idle) idle += r.w.idle; });
    if (idle > 0) txt += '; ' + idle + ' idle (no event but their role) folded into one row per role and CTA';
    txt += '; span ' + fmtNs(data.end);
    document.getElementById('summary').textContent = txt;
    document.body.setAttribute('data-rendered', shown + ' warps');
  }

  // The URL's fragment selects on load: #sm=2-5&cta=0-15&t=1000-50000
  // (t in ns from time 0), so a view can be linked.
  function fromHash() {
    var t = null;
    (location.hash || '').replace(/^#/, '').split('&').forEach(function (kv) {
      var m = /^(sm|cta|t)=(-?\d+)-(-?\d+)$/.exec(kv);
      if (!m) return;
      if (m[1] === 't') { t = [+m[2], +m[3]]; return; }
      document.getElementById(m[1] + '-from').value = m[2];
      document.getElementById(m[1] + '-to').value = m[3];
    });
    return t;
  }
  var t0 = fromHash();
  layout();
  resetView();
  if (t0 && t0[1] > t0[0]) { view.a = t0[0]; view.b = t0[1]; }
  draw();
  summarize();
})();
