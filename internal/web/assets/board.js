// foreman's live board. The server sends the whole board as JSON over
// Server-Sent Events (/events), then updates that carry only the
// components that changed, and places the components on a grid (layout);
// this script only draws. Everything from the room is put on the page as
// text (textContent), never as markup.
'use strict';

(function () {
  const $ = (id) => document.getElementById(id);
  const rootStyle = getComputedStyle(document.documentElement);
  const cssPx = (name, fallback) => parseFloat(rootStyle.getPropertyValue(name)) || fallback;
  const CARD_W = cssPx('--card-w', 168);
  const CARD_H = cssPx('--card-h', 138);
  const GAP_X = 44;
  const MIN_ZOOM = 0.7; // below this the text gets too small to read: scroll instead
  const MAX_ZOOM = 1.5; // a small graph grows to use its panel, up to this
  const GAP_Y = 18;
  const PAD = 16;
  const LOG_MAX = 300;
  const SOON_MS = 60 * 1000;
  // A sender id as the room writes it, inside a line: @ then a word.
  const ID = /@[A-Za-z0-9][A-Za-z0-9._-]*/g;
  // Wide windows show the graph and the log side by side, each filling the
  // height left; narrow ones stack them and the page scrolls (board.css).
  const sideBySide = window.matchMedia('(min-width: 901px)');

  let board = null;
  let shown = false; // a board has been drawn
  let skew = 0; // the server's clock minus ours, in ms: deadlines are on the server's clock
  let logSeq = 0;
  let startedAt = null; // the build's start, in ms on the server's clock; null until known
  let follow = true; // the log shows its newest line, until the reader scrolls up
  const names = new Map(); // sender id -> display name
  let self = ''; // foreman's own sender id
  let members = []; // who is in the room: {id, name, verified}
  let membersDrawn = ''; // what the member list was last drawn from
  const cards = new Map(); // component name -> its card's elements
  let places = new Map(); // component name -> its place in the layout
  let index = new Map(); // component name -> its index in board.view.components
  let outEdges = new Map(); // component name -> the paths of the edges from it

  function el(tag, className, text) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }

  const slotX = (column) => PAD + column * (CARD_W + GAP_X);
  const slotY = (row) => PAD + row * (CARD_H + GAP_Y);

  function pad2(n) { return String(n).padStart(2, '0'); }

  function clock(ms) {
    const d = new Date(ms);
    return pad2(d.getHours()) + ':' + pad2(d.getMinutes()) + ':' + pad2(d.getSeconds());
  }

  // contract shows a time as the build's own, the time since it started,
  // as `foreman demo` does: mm:ss, and h:mm:ss from the first hour on.
  function contract(ms) {
    const s = Math.max(0, Math.floor(ms / 1000));
    const h = Math.floor(s / 3600);
    const mmss = pad2(Math.floor((s % 3600) / 60)) + ':' + pad2(s % 60);
    return h > 0 ? h + ':' + mmss : mmss;
  }

  function span(ms) {
    const s = Math.max(0, Math.round(ms / 1000));
    const h = Math.floor(s / 3600);
    const m = Math.floor((s % 3600) / 60);
    if (h > 0) return h + 'h ' + pad2(m) + 'm';
    return m + ':' + pad2(s % 60);
  }

  const serverNow = () => Date.now() + skew;

  // Names. Ids are drawn as elements that carry the id, so that a name
  // learned later replaces the id wherever it is shown; the id stays on
  // hover, since anyone in the room can take any name.

  function showId(e) {
    const id = e.dataset.id;
    const name = names.get(id);
    e.textContent = name ? (e.dataset.mention ? '@' + name : name) : id;
    e.title = name ? name + ' · ' + id : id;
    e.classList.toggle('named', !!name);
  }

  // who is a sender shown by name.
  function who(id) {
    const e = el('span', 'id');
    e.dataset.id = id;
    showId(e);
    return e;
  }

  // withIds returns text as nodes, each id in it shown by name.
  function withIds(text) {
    const out = [];
    let last = 0;
    for (const m of text.matchAll(ID)) {
      if (m.index > last) out.push(text.slice(last, m.index));
      const e = el('span', 'id');
      e.dataset.id = m[0];
      e.dataset.mention = '1';
      showId(e);
      out.push(e);
      last = m.index + m[0].length;
    }
    if (last < text.length) out.push(text.slice(last));
    return out;
  }

  // Places a line names become links: a web address, and a check's log as
  // foreman host writes it (log=/its/path/c-1.log), which this board
  // serves at ci/logs/ when it reads host.logs. Nothing else is a link,
  // and a link goes only to http or https.
  const PLACE = /https?:\/\/[^\s<>"']+|\blog=\S+/g;
  const LOG_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,120}\.log$/;
  let hostLogs = false; // the board serves host.logs

  function link(href, text, title) {
    const a = el('a', 'place', text);
    a.href = href;
    a.target = '_blank';
    a.rel = 'noopener noreferrer';
    if (title) a.title = title;
    return a;
  }

  // place returns a place in a line as nodes: a link if it is one.
  function place(word) {
    if (word.startsWith('log=')) {
      const path = word.slice(4);
      if (/^https?:\/\//.test(path)) return ['log=', ...place(path)];
      const name = path.split('/').pop();
      if (hostLogs && LOG_NAME.test(name)) {
        return ['log=', link('ci/logs/' + encodeURIComponent(name), path, 'the check\'s log, as this board serves it')];
      }
      return [word];
    }
    // Punctuation that ends a sentence is not part of the address.
    const m = /[.,;:!?)\]]+$/.exec(word);
    const url = m ? word.slice(0, m.index) : word;
    const out = [link(url, url)];
    if (m) out.push(m[0]);
    return out;
  }

  // rich returns text as nodes: places as links, ids by name, the rest as
  // text (never as markup).
  function rich(text) {
    const out = [];
    let last = 0;
    for (const m of text.matchAll(PLACE)) {
      if (m.index > last) out.push(...withIds(text.slice(last, m.index)));
      out.push(...place(m[0]));
      last = m.index + m[0].length;
    }
    if (last < text.length) out.push(...withIds(text.slice(last)));
    return out;
  }

  // Copying an id: any element that shows one (data-id) copies it when
  // clicked, for a command that wants it (ASSIGN c @id). The clipboard
  // API needs a secure context (localhost is one); elsewhere the id is
  // selected in a hidden field and copied the old way.
  function copied(text) {
    const e = $('copied');
    e.textContent = text;
  }

  function copyId(id) {
    const fallback = () => {
      const ta = el('textarea');
      ta.value = id;
      ta.setAttribute('readonly', '');
      ta.className = 'offscreen';
      document.body.append(ta);
      ta.select();
      let ok = false;
      try { ok = document.execCommand('copy'); } catch (err) { ok = false; }
      ta.remove();
      copied(ok ? 'copied ' + id : 'copy it by hand: ' + id);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(id).then(() => copied('copied ' + id), fallback);
    } else {
      fallback();
    }
  }

  document.addEventListener('click', (ev) => {
    const t = ev.target.closest('[data-id], [data-copy]');
    if (t) copyId(t.dataset.copy || t.dataset.id);
  });

  // drawMembers lists who is in the room, each with its full id (to read,
  // select or copy) and what it owns, from the view. It is redrawn only
  // when the list or an owner changed.
  function drawMembers(b) {
    if (b.self) self = b.self;
    if (b.members) {
      $('members-panel').hidden = false; // shown once the bot says who is here
      members = b.members;
      for (const m of members) if (m.name && !names.has(m.id)) names.set(m.id, m.name);
    }
    const owns = new Map();
    for (const c of (b.view && b.view.components) || []) {
      if (!c.owner) continue;
      const list = owns.get(c.owner) || [];
      list.push(c.name);
      owns.set(c.owner, list);
    }
    const spends = new Map(((b.view && b.view.agents) || []).map((a) => [a.id, a]));
    const key = JSON.stringify([self, members, [...owns], [...spends]]);
    if (key === membersDrawn) return;
    membersDrawn = key;
    const ul = $('members');
    ul.replaceChildren(...members.map((m) => {
      const li = el('li', m.id === self ? 'self' : '');
      li.dataset.member = m.id;
      const name = who(m.id);
      name.classList.add('who');
      const mine = owns.get(m.id);
      const what = el('span', 'what', mine ? 'owns ' + mine.join(', ') : '');
      const a = spends.get(m.id);
      const spent = a && (spentAny(a.spent) || a.budget) ? el('span', 'spent', 'spent ' + cost(a.spent, a.budget)) : null;
      if (spent) spent.classList.toggle('nearly', nearly(a.spent, a.budget));
      const full = el('code', 'full-id', m.id);
      const copy = el('button', 'copy', 'Copy id');
      copy.type = 'button';
      copy.dataset.copy = m.id; // not data-id, which names redraw as text
      copy.setAttribute('aria-label', 'Copy the id of ' + (m.name || m.id));
      li.append(name, full, what, ...(spent ? [spent] : []), copy);
      return li;
    }));
    $('members-count').textContent = '(' + members.length + ')';
  }

  // cost says spend as the room's lines do: $1.25 and 1200 tokens; with a
  // budget, what it is of the budget. USD comes in micro-dollars.
  function usd(micro) { return '$' + ((micro || 0) / 1e6).toFixed(2); }
  function cost(spent, budget) {
    const s = spent || {};
    let text = usd(s.usd) + ' · ' + (s.tokens || 0) + ' tokens';
    if (budget) {
      const of = [];
      if (budget.has_usd) of.push(usd(budget.usd));
      if (budget.has_tokens) of.push(budget.tokens + ' tokens');
      text += ' of ' + of.join(' and ');
    }
    return text;
  }
  // nearly reports whether spent has reached 80% of budget in a unit.
  function nearly(spent, budget) {
    const s = spent || {};
    // A boolean always: classList.toggle with undefined flips the class.
    return !!(budget && (budget.has_usd && (s.usd || 0) * 5 >= budget.usd * 4 ||
      budget.has_tokens && (s.tokens || 0) * 5 >= budget.tokens * 4));
  }
  function spentAny(spent) { return !!spent && !!(spent.usd || spent.tokens); }

  function learnNames(more) {
    if (!more) return;
    let changed = false;
    for (const [id, name] of Object.entries(more)) {
      if (names.get(id) !== name) {
        names.set(id, name);
        changed = true;
      }
    }
    if (changed) document.querySelectorAll('[data-id]').forEach(showId);
  }

  // card returns the elements of a component's card, making it on first use.
  function card(name) {
    let c = cards.get(name);
    if (c) return c;
    const li = el('li', 'node');
    li.dataset.name = name;
    li.tabIndex = 0; // focused, a card shows all its text (board.css)
    const title = el('h3', 'name', name);
    title.title = name;
    const spent = el('span', 'cost'); // in the card's corner: what was spent on it
    spent.hidden = true;
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
    li.append(spent, title, state, owner, bar, deadline, note);
    c = { li, spent, badge, tag, owner, bar, prog, pct, deadline, note, due: null };
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
    c.tag.parentNode.title = [v.state, ...tags].join(' · '); // cut on a narrow card

    // Its cost: dollars in the corner, the whole (tokens, budget) on hover.
    const spends = spentAny(v.spent) || !!v.budget;
    c.spent.hidden = !spends;
    c.li.classList.toggle('spends', spends);
    c.spent.textContent = spends ? usd(v.spent && v.spent.usd) : '';
    c.spent.title = spends ? 'spent ' + cost(v.spent, v.budget) : '';
    c.spent.classList.toggle('nearly', nearly(v.spent, v.budget));

    if (v.owner) {
      c.owner.replaceChildren('owner ', who(v.owner));
    } else if (v.built_by) {
      c.owner.replaceChildren('built by ', who(v.built_by));
    } else {
      c.owner.replaceChildren('no owner');
    }
    // Where the work in progress is: the last branch named for it.
    c.li.dataset.branch = v.branch || '';
    if (v.branch) {
      const br = el('span', 'branch', v.branch);
      br.title = 'work in progress: ' + v.branch;
      c.owner.append(' · ', br);
    }
    const overlaps = v.overlaps || [];
    c.li.dataset.overlaps = overlaps.join(',');

    const done = v.state === 'merged';
    const shown = done || v.has_progress;
    c.bar.hidden = !shown;
    const pct = done ? 100 : v.progress;
    c.prog.value = pct;
    c.pct.textContent = pct + '%';
    c.li.dataset.progress = shown ? String(pct) : '';

    c.due = v.deadline && v.next ? { at: Date.parse(v.deadline), what: v.next } : null;

    const esc = b.escalations && b.escalations[v.name];
    let note = '';
    if (v.escalation) {
      note = '⚠ ' + v.escalation + (esc && esc.text ? ': ' + esc.text : '');
    } else if (v.waits && v.waits.length) {
      note = 'waits on ' + v.waits.join(', ');
    } else if (overlaps.length) {
      note = 'overlaps ' + overlaps.join(', ');
    } else if (v.barred && v.barred.length) {
      note = 'barred: ' + v.barred.join(', ');
    } else if (v.audits && !v.audits.startsWith('0/')) {
      note = 'failed audits ' + v.audits;
    } else if (v.pr) {
      note = 'PR ' + v.pr;
    }
    c.note.classList.toggle('why', !!v.escalation);
    c.note.replaceChildren(...rich(note));
    c.note.title = note; // a long note is cut on the card
  }

  function drawDeadline(c, paused) {
    if (!c.due) {
      if (c.deadline.textContent) {
        c.deadline.textContent = '';
        c.deadline.classList.remove('soon');
      }
      return;
    }
    const left = c.due.at - serverNow();
    c.deadline.textContent = paused ? c.due.what + ' (paused)' :
      left > 0 ? c.due.what + ' in ' + span(left) : c.due.what + ' due now';
    c.deadline.classList.toggle('soon', !paused && left < SOON_MS);
  }

  // elapsed is the build's own clock: it stops when the build is complete,
  // or when foreman stopped answering, at the last time it gave.
  function elapsed() {
    const v = board && board.view;
    if (!v || !v.started || startedAt === null) return null;
    const at = v.complete || board.stale ? Date.parse(v.at) : serverNow();
    return at - startedAt;
  }

  // tick counts every deadline down, and the build's clock up, between
  // updates from the server.
  function tick() {
    const t = elapsed();
    const e = $('elapsed');
    e.textContent = t === null ? '–' : contract(t);
    e.title = startedAt === null ? '' : 'started ' + new Date(startedAt - skew).toLocaleString();
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
      const spent = $('spent');
      spent.textContent = cost(v.spent, v.budget);
      spent.classList.toggle('nearly', nearly(v.spent, v.budget));
    }
    const bs = $('build-state');
    bs.dataset.state = state;
    bs.textContent = text;
    // In a cluster: which process leads this build (or each of the pool's).
    const lead = b.cluster || [];
    $('leader-row').hidden = lead.length === 0;
    $('leader').textContent = lead.map(function (l) {
      const who = l.leader ? l.leader + (l.this ? ' (this process)' : '') + ', epoch ' + l.epoch : 'nobody';
      return (lead.length > 1 ? l.build + ': ' : '') + who;
    }).join(' · ');
    const h = b.health;
    $('room').textContent = h.healthy
      ? 'in the room · ' + b.room.queued + ' queued · ' + b.room.messages_sent + ' sent'
      : (h.problems || ['unhealthy']).join('; ');
  }

  // drawAgents lists the agents foreman up runs: each process and a link
  // to its log, which the board serves to a signed-in operator only (the
  // agents reach the board too: agents.go).
  function drawAgents(b) {
    const agents = b.agent_processes || [];
    $('agents').hidden = agents.length === 0;
    const list = $('agents-list');
    list.replaceChildren();
    for (const a of agents) {
      const li = el('li', 'agent-' + a.state);
      let text = a.name + ' (' + a.role + ') ' + a.state;
      if (a.pid) text += ', pid ' + a.pid;
      text += ', ' + a.restarts + (a.restarts === 1 ? ' restart' : ' restarts');
      if (a.last_exit) text += ', last exit: ' + a.last_exit;
      if (a.reason) text += ' · ' + a.reason;
      li.append(el('span', null, text + ' '));
      if (decider) li.append(link('agents/' + encodeURIComponent(a.name) + '/log', 'log', a.log));
      else li.append(el('span', 'hint', 'log: sign in to read'));
      list.append(li);
    }
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
    list.replaceChildren(...items.map(([what, code, text]) => {
      const li = el('li');
      li.append(el('strong', null, what), ' — ', el('span', 'code', code));
      if (text) li.append(': ', ...rich(text));
      return li;
    }));
    $('attention').hidden = items.length === 0;
    decideOn(b);
  }

  // Deciding on the board (decide.go). An operator signed in with
  // foreman board-login picks a command and a component that needs a
  // decision; the board queues the line for that operator's board-login,
  // which says it in the room, as the operator. The room log then shows
  // the line and foreman's answer.
  let decider = null; // {operator, csrf} once signed in

  function showDecider(why) {
    $('decide').hidden = !decider;
    $('decide-hint').hidden = !!decider;
    if (decider) {
      const e = $('decider');
      e.replaceChildren(who(decider.operator));
    }
    if (why) $('decide-status').textContent = why;
  }

  // decideOn offers the components that need a decision, keeping the one
  // chosen while the board is redrawn.
  function decideOn(b) {
    if (!decider) return;
    const sel = $('decide-subject');
    const names = ((b.view && b.view.components) || []).filter((c) => c.escalation).map((c) => c.name);
    const now = [...sel.options].map((o) => o.value);
    if (JSON.stringify(now) === JSON.stringify(names)) return;
    const keep = sel.value;
    sel.replaceChildren(...names.map((n) => { const o = el('option', null, n); o.value = n; return o; }));
    if (names.includes(keep)) sel.value = keep;
  }

  function answer(r) {
    return r.json().then((j) => ({ ok: r.ok, status: r.status, j }));
  }

  function signIn() {
    const m = /^#login=([A-Za-z0-9_-]+)$/.exec(location.hash);
    let asked;
    if (m) {
      // The ticket is good once: out of the address bar and the history.
      history.replaceState(null, '', location.pathname + location.search);
      asked = fetch('api/session', {
        method: 'POST', credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ ticket: m[1] }),
      });
    } else {
      asked = fetch('api/session', { cache: 'no-store', credentials: 'same-origin' });
    }
    asked.then(answer).then((a) => {
      decider = a.ok && a.j.operator ? a.j : null;
      showDecider(m && !a.ok ? a.j.error : '');
      if (board) { decideOn(board); drawAgents(board); }
    }).catch(() => {});
  }

  function decide() {
    if (!decider) return;
    const line = [$('decide-verb').value, $('decide-subject').value, $('decide-arg').value.trim()].filter(Boolean).join(' ');
    const status = $('decide-status');
    status.textContent = 'sending ' + line + '…';
    fetch('api/decide', {
      method: 'POST', credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json', 'X-Foreman-CSRF': decider.csrf },
      body: JSON.stringify({ line }),
    }).then(answer).then((a) => {
      if (a.ok) {
        status.textContent = 'your board-login says it in the room: ' + a.j.queued + ' (foreman answers in the room log)';
        $('decide-arg').value = '';
      } else {
        status.textContent = a.j.error || 'refused';
        if (a.status === 401) { decider = null; showDecider(''); if (board) drawAgents(board); }
      }
    }).catch(() => { status.textContent = 'cannot reach foreman; nothing was said'; });
  }

  $('decide-say').addEventListener('click', decide);
  $('decide-arg').addEventListener('keydown', (ev) => { if (ev.key === 'Enter') decide(); });

  // ports spreads the edges meeting one side of a card along that side.
  function ports(edges, key, other) {
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

  function edgeKind(e, state) {
    return e.back ? 'back' : state === 'merged' ? 'done' : '';
  }

  function paintEdge(p, kind) {
    p.setAttribute('marker-end', kind ? 'url(#arrow-' + kind + ')' : 'url(#arrow)');
    if (kind) p.setAttribute('class', kind);
    else p.removeAttribute('class');
  }

  function drawEdges(b) {
    const g = $('edge-paths');
    const states = new Map(b.view.components.map((c) => [c.name, c.state]));
    outEdges = new Map();
    const outPort = ports(b.layout.edges, 'from', 'to');
    const inPort = ports(b.layout.edges, 'to', 'from');
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
      paintEdge(p, edgeKind(e, states.get(e.from)));
      paths.push(p);
      const list = outEdges.get(e.from) || [];
      list.push([e, p]);
      outEdges.set(e.from, list);
    }
    g.replaceChildren(...paths);
  }

  // drawChanged redraws only the cards an update changed, and the colour
  // of the edges leaving them: the layout is the same.
  function drawChanged(b, changed) {
    for (const v of changed) {
      const c = cards.get(v.name);
      if (!c) continue;
      fill(c, v, b);
      for (const [e, p] of outEdges.get(v.name) || []) paintEdge(p, edgeKind(e, v.state));
    }
  }

  // fit scales the graph to its panel: to the width, and on a wide window
  // (where the panel fills the height left) to the height as well, so that
  // no card is cut off and a small graph grows to use the room it has (up
  // to MAX_ZOOM); never below a size still readable.
  function fit() {
    const canvas = $('canvas');
    const w = parseFloat(canvas.style.width);
    const h = parseFloat(canvas.style.height);
    if (!w || !h) return;
    const graph = $('graph');
    let zoom = Math.min(MAX_ZOOM, (graph.clientWidth - 4) / w);
    if (sideBySide.matches) zoom = Math.min(zoom, (graph.clientHeight - 4) / h);
    canvas.style.zoom = String(Math.max(MIN_ZOOM, zoom));
  }

  function drawGraph(b) {
    const list = $('nodes');
    if (!b.view || !b.layout) return;
    places = new Map(b.layout.nodes.map((n) => [n.name, n]));
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
    fit();
    drawEdges(b);
  }

  function showTime(t) {
    const at = Date.parse(t.dateTime);
    const wall = clock(at - skew);
    if (startedAt === null) {
      t.textContent = wall;
      t.title = 'local time';
    } else {
      t.textContent = contract(at - startedAt);
      t.title = 'since the build started; local time ' + wall;
    }
  }

  function logItem(e) {
    const li = el('li', e.said ? 'said' : 'heard');
    if (e.said && /^(ESCALATE|ERROR|TIMEOUT|RETRY)\b/.test(e.text)) li.classList.add('alert');
    const t = el('time');
    t.dateTime = e.at;
    showTime(t);
    const from = e.said ? el('span', 'who', 'foreman') : who(e.from);
    from.classList.add('who');
    li.append(t, from, el('span', 'text'));
    li.lastChild.append(...rich(e.text));
    const merged = /^MERGED (\S+)$/.exec(e.text);
    if (merged) {
      li.dataset.merged = merged[1]; // hostqueue.js links it to its receipt
      if (window.foremanReceiptLink) window.foremanReceiptLink(li, merged[1]);
    }
    return li;
  }

  function toNewest() {
    const ol = $('log');
    ol.scrollTop = ol.scrollHeight;
    $('log-newest').hidden = true;
  }

  function drawLog(b) {
    const ol = $('log');
    if (b.full) {
      ol.replaceChildren();
      logSeq = 0;
    }
    let added = 0;
    for (const e of b.log) {
      if (e.seq <= logSeq) continue;
      logSeq = e.seq;
      ol.append(logItem(e));
      added++;
    }
    const height = ol.scrollHeight;
    while (ol.children.length > LOG_MAX) ol.firstElementChild.remove();
    if (follow || b.full) {
      toNewest();
    } else {
      // The lines read stay where they were while the oldest go.
      ol.scrollTop -= height - ol.scrollHeight;
      if (added) $('log-newest').hidden = false;
    }
  }

  // setStart notes when the build started, and redraws the log's times if
  // that is news.
  function setStart(b) {
    const v = b.view;
    const at = v && v.started && v.started_at ? Date.parse(v.started_at) : null;
    if (at === startedAt) return;
    startedAt = at;
    document.querySelectorAll('#log time').forEach(showTime);
  }

  // merge applies an update to the board it follows, and returns the
  // components it changed.
  function merge(u) {
    const comps = board.view.components;
    const changed = [];
    for (const c of u.changed || []) {
      const i = index.get(c.name);
      if (i === undefined) continue;
      comps[i] = c;
      changed.push(c);
    }
    u.view.components = comps;
    u.layout = board.layout;
    return changed;
  }

  function apply(b) {
    let changed = null;
    if (b.update) {
      if (!board || !board.view || !b.view) return; // never sent so: a whole board comes first
      changed = merge(b);
    } else if (b.view) {
      index = new Map(b.view.components.map((c, i) => [c.name, i]));
    }
    board = b;
    skew = Date.parse(b.now) - Date.now();
    hostLogs = !!b.host_logs;
    learnNames(b.names);
    drawMembers(b);
    setStart(b);
    header(b);
    drawAgents(b);
    const problem = $('problem');
    problem.hidden = !b.problem;
    problem.textContent = b.problem || '';
    attention(b);
    if (changed) drawChanged(b, changed);
    else drawGraph(b);
    drawLog(b);
    tick();
    if (!shown) {
      shown = true;
      // When the page first showed a board, for whoever measures it
      // (the first-load test reads it): ms since the navigation began.
      performance.mark('board-shown');
    }
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

  const log = $('log');
  // The reader decides: scrolled up, the log stays put until they come
  // back down to the end, where it follows new lines again. Only a move
  // up stops it following: the log's box shrinking (the attention panel
  // appearing) also leaves it short of the end, and must not.
  let lastTop = 0;
  log.addEventListener('scroll', () => {
    if (log.scrollHeight - log.scrollTop - log.clientHeight < 8) follow = true;
    else if (log.scrollTop < lastTop) follow = false;
    lastTop = log.scrollTop;
    log.dataset.follow = follow ? 'yes' : 'no';
    if (follow) $('log-newest').hidden = true;
  });
  // The log's box changes size with the window and the attention panel.
  new ResizeObserver(() => { if (follow) toNewest(); }).observe(log);
  $('log-newest').addEventListener('click', () => { follow = true; toNewest(); });
  log.dataset.follow = 'yes';

  setInterval(tick, 1000);
  window.addEventListener('resize', fit);
  sideBySide.addEventListener('change', fit);
  new ResizeObserver(fit).observe($('graph'));
  // The page comes with the board as it was when it was served: drawn
  // now, the first paint shows the build, whatever the stream takes to
  // open (its first event is a whole board again, and replaces this one).
  const served = $('board-data');
  if (served && served.textContent) {
    try {
      apply(JSON.parse(served.textContent));
    } catch (err) {
      console.error('the board the page came with cannot be drawn:', err);
    }
  }
  connect();
  signIn();
})();
