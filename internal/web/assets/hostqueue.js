// The CI queue of foreman host, when the board can read it (/ci/queue):
// what runs, what waits, the train of approved work with when each car
// should land, flaky checks, and the last verdicts with their logs. It
// stays hidden on a board with no host.
(function () {
  'use strict';
  const box = document.getElementById('ciqueue');
  const list = document.getElementById('ciqueue-list');
  if (!box || !list) return;

  function item(text, cls, href) {
    const li = document.createElement('li');
    if (cls) li.className = cls;
    li.textContent = text;
    if (href) {
      const a = document.createElement('a');
      a.href = href;
      a.textContent = ' log';
      li.appendChild(a);
    }
    return li;
  }

  function since(t) {
    const ms = Date.now() - Date.parse(t);
    if (!(ms >= 0)) return '';
    const s = Math.round(ms / 1000);
    return s < 60 ? s + 's' : Math.floor(s / 60) + 'm' + String(s % 60).padStart(2, '0') + 's';
  }

  function logHref(v) {
    if (!v.log) return '';
    const name = v.log.split('/').pop();
    return 'ci/logs/' + encodeURIComponent(name);
  }

  // Each landing's receipt, by component: the room log's MERGED lines
  // link to it (board.js marks them with data-merged).
  const receipts = new Map();

  function receiptLink(li, c) {
    const file = receipts.get(c);
    if (!file || li.querySelector('a.receipt')) return;
    const a = document.createElement('a');
    a.className = 'receipt';
    a.href = 'ci/logs/' + encodeURIComponent(file);
    a.textContent = ' receipt';
    a.title = 'the landing receipt (its note in refs/notes/foreman); foreman verify checks it';
    li.appendChild(a);
  }
  window.foremanReceiptLink = receiptLink;

  function linkMerged() {
    document.querySelectorAll('li[data-merged]').forEach(function (li) { receiptLink(li, li.dataset.merged); });
  }

  function draw(q) {
    list.replaceChildren();
    (q.running || []).forEach(function (j) {
      list.appendChild(item('running: ' + j.kind + ' ' + j.c + ' (' + j.ref + ') for ' + since(j.started), 'running'));
    });
    (q.waiting || []).forEach(function (j, i) {
      let t = 'waiting ' + (i + 1) + ': ' + j.kind + ' ' + j.c + ' (' + j.ref + ')';
      if (j.why) t += (j.not_before ? ', retried: ' : ', ') + j.why;
      list.appendChild(item(t, 'waiting'));
    });
    (q.train || []).forEach(function (c, i) {
      let t = 'train ' + (i + 1) + ': ' + c.c + ' ' + c.state + ' on ' + c.on;
      const left = Math.round((Date.parse(c.eta) - Date.parse(q.at)) / 1000);
      if (left >= 0) t += ', lands in about ' + left + 's';
      if (c.why) t += '; ' + c.why;
      list.appendChild(item(t, 'train ' + c.state));
    });
    const flaky = Object.keys(q.flaky || {}).sort();
    if (flaky.length) {
      list.appendChild(item('flaky (failed, then passed on the same tree): ' +
        flaky.map(function (k) { return k + ' ' + q.flaky[k]; }).join(', '), 'flaky'));
    }
    if (q.check_runs) {
      list.appendChild(item('checks: ' + q.check_runs + ' runs' + (q.landed_n ?
        ', ' + q.landed_n + ' landed: ' + (q.check_runs / q.landed_n).toFixed(2) + ' per landing' : ''), 'checks'));
    }
    const learned = (q.commands || []).filter(function (c) { return c.flaky; });
    if (learned.length) {
      list.appendChild(item('flaky, checked again before anyone is blamed: ' +
        learned.map(function (c) { return c.command + ' (' + c.passed_again + ' of ' + c.failed + ' failures passed again)'; }).join(', '), 'flaky'));
    }
    (q.landed || []).forEach(function (l) { if (l.file) receipts.set(l.c, l.file); });
    linkMerged();
    (q.recent || []).slice(-5).reverse().forEach(function (v) {
      let t = v.result + ': ' + v.kind + ' ' + v.c;
      if (v.commit) t += ' ' + v.commit.slice(0, 12);
      if (v.line) t += ' ' + v.line;
      const li = item(t, v.result, logHref(v));
      if (v.receipt) {
        li.dataset.merged = v.c;
        receiptLink(li, v.c);
      }
      list.appendChild(li);
    });
    if (!list.children.length) list.appendChild(item('empty; max_parallel ' + q.max_parallel));
    box.hidden = false;
  }

  function poll() {
    fetch('ci/queue', { cache: 'no-store' })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (q) { if (q && !q.absent) draw(q); else box.hidden = true; })
      .catch(function () {})
      .finally(function () { setTimeout(poll, 2000); });
  }
  poll();
}());
