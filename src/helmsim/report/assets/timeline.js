/* helmsim rollout timeline: tooltips on hover and focus, keyboard moves between markers, zoom,
   filters by namespace and kind. Plain DOM, no dependencies, no network. Without it the page
   still shows every lane, span, verdict and the event tables. */
(function () {
  'use strict';
  var doc = document;
  var tip = doc.getElementById('tip');
  var ZOOMS = [1, 2, 4, 8, 16, 32, 64, 128];

  function fmt(t) {
    var s = Number(t).toFixed(3).replace(/0+$/, '').replace(/\.$/, '');
    return s === '' || s === '-0' ? '0' : s;
  }
  function timelineOf(el) { return el.closest('.timeline'); }
  function isMarker(el) { return !!(el && el.classList && el.classList.contains('mk')); }
  function visible(el) { var lane = el.closest('.lane'); return !lane || !lane.hidden; }

  // --- tooltip and detail line -------------------------------------------------------------
  function describe(mk) {
    var head = 't=' + fmt(mk.getAttribute('data-t')) + 's · ' + mk.getAttribute('data-what') + ' · ' + mk.getAttribute('data-obj');
    return { head: head, body: mk.getAttribute('data-msg') || '' };
  }
  function show(mk) {
    var d = describe(mk);
    tip.textContent = '';
    var h = doc.createElement('span');
    h.className = 'tip-head';
    h.textContent = d.head;
    tip.appendChild(h);
    tip.appendChild(doc.createTextNode(d.body));
    tip.hidden = false;
    tip.setAttribute('data-for', mk.id);
    mk.setAttribute('aria-describedby', 'tip');
    var r = mk.getBoundingClientRect();
    var w = tip.offsetWidth, hgt = tip.offsetHeight;
    var left = Math.max(4, Math.min(r.left + r.width / 2 - w / 2, window.innerWidth - w - 4));
    var top = r.bottom + 6;
    if (top + hgt > window.innerHeight - 4 && r.top - hgt - 6 > 0) { top = r.top - hgt - 6; }
    tip.style.left = Math.round(left) + 'px';
    tip.style.top = Math.round(top) + 'px';
    var tl = timelineOf(mk);
    var detail = tl && tl.querySelector('.detail');
    if (detail) { detail.textContent = d.head + '\n' + d.body; }
  }
  function hide() {
    var id = tip.getAttribute('data-for');
    var mk = id && doc.getElementById(id);
    if (mk) { mk.removeAttribute('aria-describedby'); }
    tip.hidden = true;
    tip.removeAttribute('data-for');
  }

  doc.addEventListener('focusin', function (e) { if (isMarker(e.target)) { show(e.target); } });
  doc.addEventListener('focusout', function (e) {
    if (!isMarker(e.target)) { return; }
    if (hovered && hovered !== e.target) { show(hovered); } else { hide(); }
  });
  var hovered = null;
  function current() { return hovered || (isMarker(doc.activeElement) ? doc.activeElement : null); }
  doc.addEventListener('mouseover', function (e) {
    var mk = e.target.closest && e.target.closest('.mk');
    if (mk && !mk.classList.contains('legend-mk')) { hovered = mk; show(mk); }
  });
  doc.addEventListener('mouseout', function (e) {
    var mk = e.target.closest && e.target.closest('.mk');
    if (!mk || (e.relatedTarget && mk.contains(e.relatedTarget))) { return; }
    hovered = null;
    if (current()) { show(current()); } else { hide(); }
  });
  window.addEventListener('scroll', function () { if (current()) { show(current()); } else { hide(); } }, true);

  // --- keyboard: one tab stop per timeline, arrows move between markers ------------------------
  function markersOf(lane) {
    var list = Array.prototype.slice.call(lane.querySelectorAll('.mk'));
    return list.sort(function (a, b) { return Number(a.getAttribute('data-t')) - Number(b.getAttribute('data-t')); });
  }
  function lanesWithMarkers(tl) {
    return Array.prototype.filter.call(tl.querySelectorAll('.lane'), function (l) { return !l.hidden && l.querySelector('.mk'); });
  }
  function setRoving(tl, mk) {
    Array.prototype.forEach.call(tl.querySelectorAll('.mk[tabindex="0"]'), function (m) { m.setAttribute('tabindex', '-1'); });
    if (mk) { mk.setAttribute('tabindex', '0'); }
  }
  function resetRoving(tl) {
    var lanes = lanesWithMarkers(tl);
    var current = tl.querySelector('.mk[tabindex="0"]');
    if (current && visible(current)) { return; }
    setRoving(tl, lanes.length ? markersOf(lanes[0])[0] : null);
  }
  function go(mk) {
    if (!mk) { return; }
    setRoving(timelineOf(mk), mk);
    mk.focus();
    mk.scrollIntoView({ block: 'nearest', inline: 'nearest' });
  }
  function nearest(list, t) {
    var best = null, dist = Infinity;
    list.forEach(function (m) { var d = Math.abs(Number(m.getAttribute('data-t')) - t); if (d < dist) { dist = d; best = m; } });
    return best;
  }
  Array.prototype.forEach.call(doc.querySelectorAll('.timeline'), function (tl) {
    Array.prototype.forEach.call(tl.querySelectorAll('.mk'), function (m) { m.setAttribute('tabindex', '-1'); });
    resetRoving(tl);
    tl.addEventListener('focusin', function (e) { if (isMarker(e.target)) { setRoving(tl, e.target); } });
    tl.addEventListener('click', function (e) { var mk = e.target.closest('.mk'); if (mk) { mk.focus(); } });
    tl.addEventListener('keydown', function (e) {
      var key = e.key;
      if (key === '+' || key === '=') { zoom(tl, 1); e.preventDefault(); return; }
      if (key === '-' || key === '_') { zoom(tl, -1); e.preventDefault(); return; }
      if (key === '0') { zoom(tl, 0); e.preventDefault(); return; }
      if (key === 'Escape') { hovered = null; hide(); return; }
      var mk = e.target;
      if (!isMarker(mk)) { return; }
      var lane = mk.closest('.lane');
      var own = markersOf(lane);
      var i = own.indexOf(mk);
      var t = Number(mk.getAttribute('data-t'));
      if (key === 'ArrowRight') { go(own[Math.min(own.length - 1, i + 1)]); }
      else if (key === 'ArrowLeft') { go(own[Math.max(0, i - 1)]); }
      else if (key === 'Home') { go(own[0]); }
      else if (key === 'End') { go(own[own.length - 1]); }
      else if (key === 'ArrowDown' || key === 'ArrowUp') {
        var lanes = lanesWithMarkers(tl);
        var j = lanes.indexOf(lane) + (key === 'ArrowDown' ? 1 : -1);
        if (j >= 0 && j < lanes.length) { go(nearest(markersOf(lanes[j]), t)); }
      } else { return; }
      e.preventDefault();
    });
  });

  // --- zoom -----------------------------------------------------------------------------------
  function niceStep(span, target) {
    var raw = span / Math.max(1, target);
    var mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var steps = [1, 2, 5, 10];
    for (var i = 0; i < steps.length; i++) { if (steps[i] * mag >= raw) { return steps[i] * mag; } }
    return 10 * mag;
  }
  function drawTicks(tl, level) {
    var end = Number(tl.getAttribute('data-end'));
    var axis = tl.querySelector('.axis-track');
    if (!axis || !(end > 0)) { return; }
    var step = niceStep(end, 8 * level);
    axis.textContent = '';
    for (var n = 0; n * step <= end + 1e-9; n++) {
      var tick = doc.createElement('span');
      tick.className = 'tick';
      tick.style.left = (100 * n * step / end).toFixed(3) + '%';
      tick.textContent = fmt(n * step) + 's';
      axis.appendChild(tick);
    }
  }
  function zoom(tl, dir) {
    var body = tl.querySelector('.tl-body');
    var scroller = tl.querySelector('.tl-scroll');
    var label = tl.querySelector('.lane-label');
    var labelW = label ? label.offsetWidth : 0;
    var level = Number(tl.getAttribute('data-zoom') || '1');
    var idx = ZOOMS.indexOf(level);
    var next = dir === 0 ? 1 : ZOOMS[Math.max(0, Math.min(ZOOMS.length - 1, idx + dir))];
    var trackW = body.offsetWidth - labelW;
    var centre = trackW > 0 ? (scroller.scrollLeft + (scroller.clientWidth - labelW) / 2) / trackW : 0;
    tl.setAttribute('data-zoom', String(next));
    body.style.setProperty('--zoom', String(next));
    tl.querySelector('.zoom-level').textContent = '×' + next;
    drawTicks(tl, next);
    var focused = doc.activeElement;
    if (isMarker(focused) && tl.contains(focused)) {
      focused.scrollIntoView({ block: 'nearest', inline: 'center' });
      show(focused);
    } else {
      var newW = body.offsetWidth - labelW;
      scroller.scrollLeft = Math.max(0, centre * newW - (scroller.clientWidth - labelW) / 2);
    }
  }
  Array.prototype.forEach.call(doc.querySelectorAll('.timeline'), function (tl) {
    tl.setAttribute('data-zoom', '1');
    Array.prototype.forEach.call(tl.querySelectorAll('[data-zoom]'), function (b) {
      if (b === tl) { return; }
      b.addEventListener('click', function () {
        var z = b.getAttribute('data-zoom');
        zoom(tl, z === 'in' ? 1 : z === 'out' ? -1 : 0);
      });
    });
  });

  // --- filters --------------------------------------------------------------------------------
  var form = doc.querySelector('.filters');
  function checked(name) {
    var on = {};
    Array.prototype.forEach.call(form.querySelectorAll('input[name="' + name + '"]'), function (i) { on[i.value] = i.checked; });
    return on;
  }
  function applyFilters() {
    var ns = checked('ns'), kind = checked('kind');
    var lanes = doc.querySelectorAll('.lane');
    var shown = 0;
    Array.prototype.forEach.call(lanes, function (l) {
      var ok = ns[l.getAttribute('data-ns')] !== false && kind[l.getAttribute('data-kind')] !== false;
      l.hidden = !ok;
      if (ok) { shown++; }
    });
    form.querySelector('.filter-status').textContent = shown === lanes.length ? '' : shown + ' of ' + lanes.length + ' lanes shown';
    Array.prototype.forEach.call(doc.querySelectorAll('.timeline'), resetRoving);
    if (isMarker(doc.activeElement) && !visible(doc.activeElement)) { hide(); }
  }
  if (form) {
    form.addEventListener('change', applyFilters);
    // Enter in the form must not submit it (no inline handler: the CSP allows only this script)
    form.addEventListener('submit', function (e) { e.preventDefault(); });
  }

  // --- links from findings and the event tables to markers and lanes ------------------------------
  function reveal(el) {
    var lane = el.classList.contains('lane') ? el : el.closest('.lane');
    if (lane && lane.hidden && form) {
      Array.prototype.forEach.call(form.querySelectorAll('input'), function (i) {
        if ((i.name === 'ns' && i.value === lane.getAttribute('data-ns')) || (i.name === 'kind' && i.value === lane.getAttribute('data-kind'))) { i.checked = true; }
      });
      applyFilters();
    }
    if (lane) {
      lane.classList.add('flash');
      setTimeout(function () { lane.classList.remove('flash'); }, 1500);
    }
    if (isMarker(el)) { go(el); } else { el.scrollIntoView({ block: 'center' }); var first = el.querySelector('.mk'); if (first) { go(first); } }
  }
  doc.addEventListener('click', function (e) {
    var a = e.target.closest && e.target.closest('a[href^="#"]');
    if (!a) { return; }
    var target = doc.getElementById(a.getAttribute('href').slice(1));
    if (target && (isMarker(target) || target.classList.contains('lane'))) {
      e.preventDefault();
      reveal(target);
    }
  });
  if (location.hash.length > 1) {
    var target = doc.getElementById(decodeURIComponent(location.hash.slice(1)));
    if (target && (isMarker(target) || target.classList.contains('lane'))) { reveal(target); }
  }
  doc.documentElement.setAttribute('data-js', 'ready');
})();
