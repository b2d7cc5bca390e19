// foreman's live board. The server sends the whole board as JSON over
// Server-Sent Events (/events) and places the components on a grid
// (layout); this script only draws. Everything from the room is put on the
// page as text (textContent), never as markup.
'use strict';

(function () {
  const $ = (id) => document.getElementById(id);
  const rootStyle = getComputedStyle(document.documentElement);
  const cssPx = (name, fallback) => parseFloat(rootStyle.getPropertyValue(name)) || fallback;
  const CARD_W = cssPx('--card-w', 200);
  const CARD_H = cssPx('--card-h', 138);
  const GAP_X = 56;
  const MIN_ZOOM = 0.7; // below this the text gets too small to read: scroll instead
  const GAP_Y = 18;
  const PAD = 16;
  const LOG_MAX = 300;
  const SOON_MS = 60 * 1000;

  let board = null;
  let skew = 0; // the server's clock minus ours, in ms: deadlines are on the server's clock
  let logSeq = 0;
  const cards = new Map(); // component name -> its card's elements

  function el(tag, className, text) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }

  const slotX = (column) => PAD + column * (CARD_W + GAP_X);
  const slotY = (row) => PAD + row * (CARD_H + GAP_Y);

  function pad2(n) { return String(n).padStart(2, '0'); }

  function clock(iso) {
    const d = new Date(iso);
    return pad2(d.getHours()) + ':' + pad2(d.getMinutes()) + ':' + pad2(d.getSeconds());
  }

  function span(ms) {
    const s = Math.max(0, Math.round(ms / 1000));
    const h = Math.floor(s / 3600);
    const m = Math.floor((s % 3600) / 60);
    if (h > 0) return h + 'h ' + pad2(m) + 'm';
    return m + ':' + pad2(s % 60);
  }

  const serverNow = () => Date.now() + skew;

  // card returns the elements of a component's card, making it on first use.
  function card(name) {
    let c = cards.get(name);
    if (c) return c;
    const li = el('li', 'node');
    li.dataset.name = name;
    const title = el('h3', 'name', name);
    const state = el('p', 'state');
    const badge = el('span', 'badge');
    const tag = el('span', 'tag');
    state.append(badge, tag);
    const owner = el('p', 'owner');
    const bar = el('p', 'bar');
    const prog = el('progress');
    prog.max = 100;
    prog.setAttribute('aria-label', 'progress of ' + name);
    const pct = el('span', 'pct');
    bar.append(prog, pct);
    const deadline = el('p', 'deadline');
    const note = el('p', 'note');
    li.append(title, state, owner, bar, deadline, note);
    c = { li, badge, tag, owner, bar, prog, pct, deadline, note, due: null };
    cards.set(name, c);
    return c;
  }

  function fill(c, v, b) {
    c.li.dataset.state = v.state;
    c.badge.textContent = v.state;
    const tags = [];
    if (v.claimable) tags.push('claimable');
    if (v.approved) tags.push('approved');
    c.tag.textContent = tags.join(' · ');

    if (v.owner) {
      c.owner.replaceChildren('owner ', el('code', null, v.owner));
    } else if (v.built_by) {
      c.owner.replaceChildren('built by ', el('code', null, v.built_by));
    } else {
      c.owner.replaceChildren('no owner');
    }
    c.owner.title = c.owner.textContent; // a long sender id is cut on the card

    const done = v.state === 'merged';
    const shown = done || v.has_progress;
    c.bar.hidden = !shown;
    const pct = done ? 100 : v.progress;
    c.prog.value = pct;
    c.pct.textContent = pct + '%';
    c.li.dataset.progress = shown ? String(pct) : '';

    c.due = v.deadline && v.next ? { at: Date.parse(v.deadline), what: v.next } : null;

    const esc = b.escalations && b.escalations[v.name];
    c.note.classList.remove('why');
    if (v.escalation) {
      c.note.classList.add('why');
      c.note.textContent = '⚠ ' + v.escalation + (esc && esc.text ? ': ' + esc.text : '');
    } else if (v.waits && v.waits.length) {
      c.note.textContent = 'waits on ' + v.waits.join(', ');
    } else if (v.barred && v.barred.length) {
      c.note.textContent = 'barred: ' + v.barred.join(', ');
    } else if (v.audits && !v.audits.startsWith('0/')) {
      c.note.textContent = 'failed audits ' + v.audits;
    } else if (v.pr) {
      c.note.textContent = 'PR ' + v.pr;
    } else {
      c.note.textContent = '';
    }
    c.note.title = c.note.textContent;
  }

  function drawDeadline(c, paused) {
    if (!c.due) {
      c.deadline.textContent = '';
      c.deadline.classList.remove('soon');
      return;
    }
    const left = c.due.at - serverNow();
    c.deadline.textContent = paused ? c.due.what + ' (paused)' :
      left > 0 ? c.due.what + ' in ' + span(left) : c.due.what + ' due now';
    c.deadline.classList.toggle('soon', !paused && left < SOON_MS);
  }

  // tick counts every deadline down, between updates from the server.
  function tick() {
    if (!board || !board.view) return;
    const paused = board.view.paused;
    let next = null;
    for (const [name, c] of cards) {
      drawDeadline(c, paused);
      if (c.due && (!next || c.due.at < next.at)) next = { at: c.due.at, what: c.due.what, name };
    }
    const nd = $('next-deadline');
    if (!next) nd.textContent = 'none';
    else if (paused) nd.textContent = next.name + ' ' + next.what + ' (paused)';
    else nd.textContent = next.name + ' ' + next.what + ' in ' + span(next.at - serverNow());
  }

  function header(b) {
    const v = b.view;
    $('build-name').textContent = v ? v.build : 'foreman';
    document.title = (v ? v.build + ' · ' : '') + 'foreman board';
    let state = '';
    let text = b.problem || 'no build';
    if (v) {
      if (v.complete) { state = 'complete'; text = 'COMPLETE'; }
      else if (v.halted && v.halted.length) { state = 'halted'; text = 'HALTED by a cycle: ' + v.halted.join(' → '); }
      else if (v.paused) { state = 'paused'; text = 'PAUSED'; }
      else if (!v.started) { state = 'waiting'; text = 'not started'; }
      else { state = 'running'; text = 'running'; }
      if (v.overtime) text += ' · overtime';
      $('merged').textContent = v.merged + ' of ' + v.components.length;
    }
    const bs = $('build-state');
    bs.dataset.state = state;
    bs.textContent = text;
    const h = b.health;
    $('room').textContent = h.healthy
      ? 'in the room · ' + b.room.queued + ' queued · ' + b.room.messages_sent + ' sent'
      : (h.problems || ['unhealthy']).join('; ');
  }

  function attention(b) {
    const items = [];
    const v = b.view;
    const esc = b.escalations || {};
    if (v) {
      for (const c of v.components) {
        if (!c.escalation) continue;
        const e = esc[c.name];
        items.push([c.name + (c.state === 'held' ? ' (held)' : ''), c.escalation, e && e.text]);
      }
      // Build-level escalations have the subject "build", never a component's name.
      if (esc.build) {
        items.push(['build ' + v.build, esc.build.code, esc.build.text]);
      } else if (v.halted && v.halted.length) {
        items.push(['build ' + v.build, 'cycle', v.halted.join(' → ')]);
      }
    }
    const list = $('attention-list');
    list.replaceChildren(...items.map(([who, code, text]) => {
      const li = el('li');
      li.append(el('strong', null, who), ' — ', el('span', 'code', code));
      if (text) li.append(': ', text);
      return li;
    }));
    $('attention').hidden = items.length === 0;
  }

  // ports spreads the edges meeting one side of a card along that side.
  function ports(edges, places, key, other) {
    const byNode = new Map();
    for (const e of edges) {
      if (e.back) continue;
      const list = byNode.get(e[key]) || [];
      list.push(e);
      byNode.set(e[key], list);
    }
    const at = new Map();
    for (const [, list] of byNode) {
      list.sort((a, b) => places.get(a[other]).row - places.get(b[other]).row);
      list.forEach((e, i) => at.set(e, (i + 1) / (list.length + 1)));
    }
    return at;
  }

  function drawEdges(b, places) {
    const g = $('edge-paths');
    const states = new Map(b.view.components.map((c) => [c.name, c.state]));
    const outPort = ports(b.layout.edges, places, 'from', 'to');
    const inPort = ports(b.layout.edges, places, 'to', 'from');
    const paths = [];
    for (const e of b.layout.edges) {
      const from = places.get(e.from);
      const to = places.get(e.to);
      if (!from || !to) continue;
      let d;
      if (e.back) {
        // A cycle's closing edge runs right to left, under both cards.
        const x0 = slotX(from.column) + CARD_W / 2;
        const y0 = slotY(from.row) + CARD_H;
        const x1 = slotX(to.column) + CARD_W / 2;
        const y1 = slotY(to.row) + CARD_H;
        const low = Math.max(y0, y1) + GAP_Y;
        d = `M ${x0} ${y0} C ${x0} ${low + 40} ${x1} ${low + 40} ${x1} ${y1}`;
      } else {
        const pts = [[slotX(from.column) + CARD_W, slotY(from.row) + CARD_H * outPort.get(e)]];
        for (const v of e.via || []) {
          const y = slotY(v.row) + CARD_H / 2;
          pts.push([slotX(v.column), y], [slotX(v.column) + CARD_W, y]);
        }
        pts.push([slotX(to.column) - 2, slotY(to.row) + CARD_H * inPort.get(e)]);
        d = `M ${pts[0][0]} ${pts[0][1]}`;
        for (let i = 1; i < pts.length; i++) {
          const [x0, y0] = pts[i - 1];
          const [x1, y1] = pts[i];
          if (i % 2 === 1) {
            const dx = (x1 - x0) / 2;
            d += ` C ${x0 + dx} ${y0} ${x1 - dx} ${y1} ${x1} ${y1}`;
          } else {
            d += ` L ${x1} ${y1}`; // through the slot kept free for this edge
          }
        }
      }
      const p = document.createElementNS('http://www.w3.org/2000/svg', 'path');
      p.setAttribute('d', d);
      const kind = e.back ? 'back' : states.get(e.from) === 'merged' ? 'done' : '';
      p.setAttribute('marker-end', kind ? 'url(#arrow-' + kind + ')' : 'url(#arrow)');
      if (kind) p.setAttribute('class', kind);
      paths.push(p);
    }
    g.replaceChildren(...paths);
  }

  function drawGraph(b) {
    const list = $('nodes');
    if (!b.view || !b.layout) return;
    const places = new Map(b.layout.nodes.map((n) => [n.name, n]));
    const keep = new Set();
    b.view.components.forEach((v, i) => {
      const c = card(v.name);
      keep.add(v.name);
      fill(c, v, b);
      const p = places.get(v.name);
      if (p) {
        c.li.style.left = slotX(p.column) + 'px';
        c.li.style.top = slotY(p.row) + 'px';
      }
      if (list.children[i] !== c.li) list.insertBefore(c.li, list.children[i] || null);
    });
    for (const [name, c] of cards) {
      if (!keep.has(name)) {
        c.li.remove();
        cards.delete(name);
      }
    }
    const w = slotX(b.layout.columns) - GAP_X + PAD;
    const h = slotY(b.layout.rows) - GAP_Y + PAD + (b.layout.edges.some((e) => e.back) ? 80 : 0);
    list.style.width = w + 'px';
    list.style.height = h + 'px';
    const svg = $('edges');
    svg.setAttribute('width', w);
    svg.setAttribute('height', h);
    const canvas = $('canvas');
    canvas.style.width = w + 'px';
    canvas.style.height = h + 'px';
    // Shrink a wide build to fit the panel, down to a size still readable.
    const room = $('graph').clientWidth - 4;
    canvas.style.zoom = String(Math.max(MIN_ZOOM, Math.min(1, room / w)));
    drawEdges(b, places);
  }

  function logItem(e) {
    const li = el('li', e.said ? 'said' : 'heard');
    if (e.said && /^(ESCALATE|ERROR|TIMEOUT|RETRY)\b/.test(e.text)) li.classList.add('alert');
    const t = el('time', null, clock(e.at));
    t.dateTime = e.at;
    const who = el('span', 'who', e.said ? 'foreman' : e.from);
    who.title = e.said ? 'foreman' : e.from;
    li.append(t, who, el('span', 'text', e.text));
    return li;
  }

  function drawLog(b) {
    const ol = $('log');
    const atBottom = ol.scrollHeight - ol.scrollTop - ol.clientHeight < 40;
    if (b.full) {
      ol.replaceChildren();
      logSeq = 0;
    }
    for (const e of b.log) {
      if (e.seq <= logSeq) continue;
      logSeq = e.seq;
      ol.append(logItem(e));
    }
    while (ol.children.length > LOG_MAX) ol.firstElementChild.remove();
    if (atBottom || b.full) ol.scrollTop = ol.scrollHeight;
  }

  function apply(b) {
    board = b;
    skew = Date.parse(b.now) - Date.now();
    header(b);
    const problem = $('problem');
    problem.hidden = !b.problem;
    problem.textContent = b.problem || '';
    attention(b);
    drawGraph(b);
    drawLog(b);
    tick();
  }

  // live says whether updates arrive. It is a status region: writing the
  // same text again would have a screen reader announce it again.
  function live(ok, text) {
    const e = $('live');
    e.dataset.live = ok ? 'yes' : 'no';
    if (e.textContent !== text) e.textContent = text;
  }

  function poll() {
    fetch('api/view', { cache: 'no-store' })
      .then((r) => r.json())
      .then((b) => { apply(b); live(true, 'updating every 2s'); })
      .catch(() => live(false, 'cannot reach foreman; retrying'))
      .finally(() => setTimeout(poll, 2000));
  }

  function connect() {
    if (!window.EventSource) {
      poll();
      return;
    }
    const es = new EventSource('events');
    es.addEventListener('board', (ev) => {
      apply(JSON.parse(ev.data));
      live(true, 'live');
    });
    es.addEventListener('open', () => live(true, 'live'));
    es.addEventListener('error', () => live(false, 'connection lost; reconnecting…'));
  }

  setInterval(tick, 1000);
  window.addEventListener('resize', () => { if (board) drawGraph(board); });
  connect();
})();
