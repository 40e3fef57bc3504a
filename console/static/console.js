// shepherd console: loads the page's data fragments with the admin token,
// follows the event feed and refreshes what an event touches, and posts
// approval decisions. No framework, no build step.
//
// The token is kept in this tab's sessionStorage and only ever sent in the
// Authorization header: never in a URL, never in a cookie. Fragments are
// HTML the server rendered and escaped; this script never builds HTML from
// data.
(function () {
  'use strict';

  var KEY = 'shepherd.console.token';
  var body = document.body;
  var liveEl = document.getElementById('live');
  var tokenBox = document.getElementById('token');
  var tokenForm = document.getElementById('token-form');
  var tokenInput = document.getElementById('token-input');
  var tokenError = document.getElementById('token-error');
  var forgetBtn = document.getElementById('forget');
  var seenEvents = null; // ids of activity rows shown, to mark new ones
  var feed = null; // AbortController of the running feed
  var timers = {};

  function token() {
    try { return sessionStorage.getItem(KEY) || ''; } catch (e) { return ''; }
  }

  function headers(extra) {
    var h = extra || {};
    var t = token();
    if (t) { h['Authorization'] = 'Bearer ' + t; }
    return h;
  }

  // ---- token ----

  function askToken(refused) {
    tokenBox.hidden = false;
    tokenError.hidden = !refused;
    forgetBtn.hidden = true;
    body.dataset.auth = 'needed';
    setLive('off', 'token needed');
    tokenInput.focus();
  }

  tokenForm.addEventListener('submit', function (e) {
    e.preventDefault();
    var t = tokenInput.value.trim();
    if (!t) { return; }
    try { sessionStorage.setItem(KEY, t); } catch (err) { /* private mode: kept nowhere */ }
    tokenInput.value = '';
    tokenBox.hidden = true;
    start();
  });

  forgetBtn.addEventListener('click', function () {
    try { sessionStorage.removeItem(KEY); } catch (e) { /* nothing kept */ }
    stopFeed();
    location.reload();
  });

  // ---- fragments ----

  function fragments() {
    return Array.prototype.slice.call(document.querySelectorAll('.frag[data-src]'));
  }

  function fragmentURL(el) {
    var src = el.dataset.src;
    var form = el.dataset.filter && document.getElementById(el.dataset.filter);
    if (!form) { return src; }
    var q = new URLSearchParams();
    Array.prototype.forEach.call(form.elements, function (f) {
      if (!f.name) { return; }
      if (f.type === 'checkbox') { if (f.checked) { q.set(f.name, f.value); } return; }
      if (f.value.trim()) { q.set(f.name, f.value.trim()); }
    });
    var s = q.toString();
    return s ? src + (src.indexOf('?') < 0 ? '?' : '&') + s : src;
  }

  // load fetches one fragment and puts it in place. It resolves to false
  // when the token was refused.
  // Loads of one fragment may overlap (an event arrives while one is in
  // flight); only the latest one started is put in place, so an older
  // answer never overwrites a newer one.
  function load(el) {
    var seq = (el.loadSeq || 0) + 1;
    el.loadSeq = seq;
    return fetch(fragmentURL(el), { headers: headers(), cache: 'no-store', credentials: 'omit' })
      .then(function (res) {
        if (res.status === 401) { return false; }
        return res.text().then(function (html) {
          if (el.loadSeq === seq) { replace(el, html); }
          return true;
        });
      })
      .catch(function () { return true; });
  }

  function replace(el, html) {
    // An unchanged fragment is left alone: nothing flickers, and a click
    // or a note being typed is never interrupted by a refresh.
    if (el.lastHTML === html) { return; }
    el.lastHTML = html;
    // Keep what a person is typing in approval notes across a refresh:
    // the text, the focus and the caret.
    var notes = {};
    var focused = null;
    el.querySelectorAll('[data-approval] .note').forEach(function (n) {
      var id = n.closest('[data-approval]').dataset.approval;
      notes[id] = n.value;
      if (document.activeElement === n) { focused = { id: id, start: n.selectionStart, end: n.selectionEnd }; }
    });
    // Keep the revert panels a person opened (the edit journal).
    var panels = {};
    el.querySelectorAll('[data-revert-panel]').forEach(function (p) {
      if (!p.hidden) { panels[p.dataset.revertPanel] = p.innerHTML; }
    });
    el.innerHTML = html;
    el.querySelectorAll('[data-revert-panel]').forEach(function (p) {
      var kept = panels[p.dataset.revertPanel];
      if (kept === undefined) { return; }
      p.innerHTML = kept;
      p.hidden = false;
      var b = el.querySelector('[aria-controls="' + p.id + '"]');
      if (b) { b.setAttribute('aria-expanded', 'true'); }
    });
    el.querySelectorAll('[data-approval] .note').forEach(function (n) {
      var id = n.closest('[data-approval]').dataset.approval;
      if (notes[id]) { n.value = notes[id]; }
      if (focused && focused.id === id) {
        n.focus();
        n.setSelectionRange(focused.start, focused.end);
      }
    });
    localTimes(el);
    countdowns();
    markFresh(el);
    el.dataset.loaded = String(Date.now());
  }

  function loadAll() {
    return Promise.all(fragments().map(load)).then(function (oks) {
      return oks.every(Boolean);
    });
  }

  // refresh reloads the fragments named (data-refresh) soon: events that
  // arrive together cause one load, and a steady stream of events still
  // refreshes every 200 ms.
  function refresh(names) {
    names.forEach(function (name) {
      if (timers[name]) { return; }
      timers[name] = setTimeout(function () {
        timers[name] = null;
        fragments().forEach(function (el) {
          if (el.dataset.refresh === name) {
            load(el).then(function (ok) { if (!ok) { askToken(true); } });
          }
        });
      }, 200);
    });
  }

  function localTimes(root) {
    root.querySelectorAll('time[datetime]').forEach(function (t) {
      if (!t.getAttribute('datetime')) { return; }
      var d = new Date(t.getAttribute('datetime'));
      if (!isNaN(d)) {
        t.title = d.toLocaleString() + ' (' + t.getAttribute('datetime') + ')';
        // Lines of a timeline or of the activity list show the time of day.
        t.textContent = t.closest('.items, .activity') ? d.toLocaleTimeString() : d.toLocaleString();
      }
    });
  }

  function markFresh(root) {
    var rows = root.querySelectorAll('.activity li[data-event]');
    if (!rows.length) { return; }
    var ids = {};
    rows.forEach(function (li) {
      ids[li.dataset.event] = true;
      if (seenEvents && !seenEvents[li.dataset.event]) { li.classList.add('fresh'); }
    });
    seenEvents = ids;
  }

  function countdowns() {
    var now = Date.now();
    document.querySelectorAll('[data-expires]').forEach(function (el) {
      var ms = new Date(el.dataset.expires).getTime() - now;
      if (isNaN(ms)) { return; }
      if (ms <= 0) { el.textContent = 'expired'; return; }
      var s = Math.round(ms / 1000);
      el.textContent = s < 60 ? s + 's left' : Math.floor(s / 60) + 'm ' + String(s % 60).padStart(2, '0') + 's left';
    });
  }
  setInterval(countdowns, 1000);

  // ---- filter ----

  var filter = document.getElementById('filter');
  if (filter) {
    filter.addEventListener('submit', function (e) { e.preventDefault(); refresh(['sessions']); });
    filter.addEventListener('input', function () { refresh(['sessions']); });
    filter.addEventListener('change', function () { refresh(['sessions']); });
  }

  // ---- approvals ----

  document.addEventListener('click', function (e) {
    var btn = e.target.closest('button[data-decision]');
    if (!btn) { return; }
    var card = btn.closest('[data-approval]');
    var err = card && card.querySelector('.error');
    var note = card && card.querySelector('.note');
    card.querySelectorAll('button').forEach(function (b) { b.disabled = true; });
    fetch(btn.dataset.action, {
      method: 'POST',
      headers: headers({ 'Content-Type': 'application/json' }),
      credentials: 'omit',
      body: JSON.stringify({ decision: btn.dataset.decision, note: note ? note.value : '', by: 'console' })
    }).then(function (res) {
      if (res.status === 401) { askToken(true); return; }
      if (!res.ok) {
        return res.text().then(function (t) {
          var msg = t;
          try { msg = JSON.parse(t).error || t; } catch (x) { /* plain text */ }
          throw new Error(res.status + ' ' + msg);
        });
      }
      card.dataset.decided = btn.dataset.decision;
      refresh(['approvals', 'session', 'sessions']);
    }).catch(function (x) {
      if (err) { err.textContent = 'Not recorded: ' + x.message; err.hidden = false; }
      card.querySelectorAll('button').forEach(function (b) { b.disabled = false; });
    });
  });

  // ---- edits: the revert panel ----

  // Revert… loads the revert fragment (the reverse patch and the command
  // that applies it) into the entry's panel; a second click closes it.
  document.addEventListener('click', function (e) {
    var btn = e.target.closest('button[data-revert]');
    if (!btn) { return; }
    var panel = document.getElementById(btn.getAttribute('aria-controls'));
    if (!panel) { return; }
    if (!panel.hidden) {
      panel.hidden = true;
      panel.textContent = '';
      btn.setAttribute('aria-expanded', 'false');
      return;
    }
    btn.disabled = true;
    fetch(btn.dataset.revert, { headers: headers(), cache: 'no-store', credentials: 'omit' })
      .then(function (res) {
        if (res.status === 401) { askToken(true); return; }
        return res.text().then(function (html) {
          panel.innerHTML = html;
          panel.hidden = false;
          btn.setAttribute('aria-expanded', 'true');
        });
      })
      .catch(function (x) {
        panel.textContent = 'Could not load the revert: ' + x.message;
        panel.hidden = false;
      })
      .then(function () { btn.disabled = false; });
  });

  // ---- live feed ----

  function setLive(state, text) {
    liveEl.className = 'live ' + state;
    liveEl.textContent = text;
    body.dataset.live = state;
  }

  function stopFeed() {
    if (feed) { feed.abort(); feed = null; }
  }

  // follow reads the SSE feed with fetch (EventSource cannot send the
  // Authorization header), resuming after a break with Last-Event-ID.
  function follow(url) {
    stopFeed();
    var ctl = new AbortController();
    feed = ctl;
    var last = '';
    var wait = 500;

    function connect() {
      if (ctl.signal.aborted) { return; }
      var h = headers({ 'Accept': 'text/event-stream' });
      if (last) { h['Last-Event-ID'] = last; }
      fetch(url, { headers: h, cache: 'no-store', credentials: 'omit', signal: ctl.signal })
        .then(function (res) {
          if (res.status === 401) { askToken(true); ctl.abort(); return; }
          if (!res.ok || !res.body) { throw new Error('feed ' + res.status); }
          setLive('on', 'live');
          wait = 500;
          if (last) { refresh(['sessions', 'session', 'approvals', 'edits']); }
          return read(res.body.getReader());
        })
        .catch(function () { /* retried below */ })
        .then(function () {
          if (ctl.signal.aborted) { return; }
          setLive('off', 'reconnecting…');
          // Without a feed the page still refreshes, slowly.
          refresh(['sessions', 'session', 'approvals', 'edits']);
          setTimeout(connect, wait);
          wait = Math.min(wait * 2, 10000);
        });
    }

    function read(reader) {
      var dec = new TextDecoder();
      var buf = '';
      function pump() {
        return reader.read().then(function (r) {
          if (r.done) { return; }
          buf += dec.decode(r.value, { stream: true });
          var m;
          while ((m = /\r?\n\r?\n/.exec(buf))) {
            frame(buf.slice(0, m.index));
            buf = buf.slice(m.index + m[0].length);
          }
          return pump();
        });
      }
      return pump();
    }

    function frame(text) {
      var ev = { id: '', type: 'message', data: '' };
      text.split(/\r?\n/).forEach(function (line) {
        if (!line || line.charAt(0) === ':') { return; }
        var i = line.indexOf(':');
        var field = i < 0 ? line : line.slice(0, i);
        var value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
        if (field === 'id') { ev.id = value; } else if (field === 'event') { ev.type = value; } else if (field === 'data') { ev.data += (ev.data ? '\n' : '') + value; }
      });
      if (ev.id) { last = ev.id; }
      if (!ev.data) { return; }
      onEvent(ev);
    }

    connect();
  }

  function onEvent(ev) {
    body.dataset.lastEvent = ev.id;
    var names = ['session', 'sessions'];
    if (/^call\.(held|approved|denied)/.test(ev.type)) { names.push('approvals'); }
    // A later turn may mark an edit failed: its end refreshes the journal too.
    if (/^edit\./.test(ev.type) || ev.type === 'request.finished') { names.push('edits'); }
    refresh(names);
  }

  // ---- start ----

  function start() {
    loadAll().then(function (ok) {
      if (!ok) { askToken(!!token()); return; }
      body.dataset.auth = 'ok';
      forgetBtn.hidden = !token();
      if (body.dataset.feed) { follow(body.dataset.feed); }
    });
  }

  start();
})();
