// The live table's front end (an anywidget ES module, no build step). It keeps the row model the
// kernel sends (one columnar snapshot, then patches), and draws it as one table: every row while
// the table is small, only the visible rows (plus a few) once it is large, so the DOM stays
// bounded whatever the row count. Cell text follows jarenlab.live.render.cell.

const FULL = 60; // up to this many rows, every row is in the DOM
const OVERSCAN = 8; // rows drawn above and below the visible ones (at least; half a screen when taller)
const DATETIME = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d)(:\d\d(?:\.\d+)?)?(Z|[+-]\d\d:\d\d)?$/;

function number(v) {
  if (!Number.isFinite(v)) return String(v);
  if (Number.isInteger(v)) return String(v);
  return v.toFixed(4).replace(/0+$/, "").replace(/\.$/, "");
}

// [text, class, title] of one cell, as jarenlab.live.render.cell says.
function cell(v, missing) {
  if (missing) return ["", "jl-missing", "missing"];
  if (v === null || v === undefined) return ["null", "jl-null", null];
  if (typeof v === "boolean") return [v ? "true" : "false", "", null];
  if (typeof v === "number") {
    const t = number(v);
    return [t, "jl-num", t === String(v) ? null : String(v)];
  }
  if (typeof v === "string") {
    const m = DATETIME.exec(v);
    if (!m) return [v, "", null];
    let t = `${m[1]} ${m[2]}${m[3] && m[3] !== ":00" ? m[3] : ""}`;
    if (m[4]) t += m[4] === "Z" ? " UTC" : ` ${m[4]}`;
    return [t, "jl-date", v];
  }
  return [JSON.stringify(v), "jl-json", null];
}

function rank(v, missing) {
  if (missing) return 5;
  if (v === null) return 4;
  if (typeof v === "number") return 0;
  if (typeof v === "string") return 1;
  if (typeof v === "boolean") return 2;
  return 3;
}

function compare(a, am, b, bm) {
  const ra = rank(a, am);
  const rb = rank(b, bm);
  if (ra !== rb) return ra - rb;
  if (ra === 0 || ra === 2) return a - b;
  if (ra === 1) return a < b ? -1 : a > b ? 1 : 0;
  if (ra === 3) {
    const x = JSON.stringify(a);
    const y = JSON.stringify(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  return 0;
}

function clock(ms) {
  return `${new Date(ms).toISOString().slice(11, 19)} UTC`;
}

// The status line. ``link`` is "live" (the kernel answers), "none" (no kernel behind the page: an
// export) or "lost" (the kernel died, restarted or its connection dropped); ``updatedAt`` is the
// wall-clock time (ms) of the last change the page heard of.
function statusText(s, age, link, updatedAt) {
  if (link === "none") return "not live · no kernel: the saved copy below shows the rows as they were";
  if (link === "lost") {
    const parts = ["kernel disconnected", updatedAt === null ? "no update received" : `last update ${clock(updatedAt)}`];
    if (s) parts.push(`${s.rows.toLocaleString("en-US")} rows`, `seq ${s.seq}`);
    return parts.join(" · ");
  }
  if (!s) return "waiting for the kernel…";
  const when =
    age === null
      ? "no change yet"
      : age < 120
        ? `updated ${age.toFixed(1)} s ago`
        : `updated ${Math.round(age / 60)} min ago`;
  const parts = [s.state, `${s.rows.toLocaleString("en-US")} rows`, `seq ${s.seq}`, when, s.strategy];
  if (s.error) parts.push(s.error);
  return parts.join(" · ");
}

function el(tag, cls) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  return e;
}

function render({ model, el: host }) {
  const st = {
    v: null, columns: [], layout: [], keys: [], rows: [], missing: [],
    status: null, receivedAt: 0, receivedWall: 0, sort: null, order: null, rowH: 22, rowMeasured: false,
    link: kernelOf(model) ? "live" : "none", lostAt: 0,
  };
  const root = el("div", "jl-live");
  root.dataset.jlWidget = "live-table";
  const status = el("div", "jl-status");
  const scroller = el("div", "jl-scroll");
  const table = el("table", "jl-grid");
  const colgroup = el("colgroup");
  const thead = el("thead");
  const tbody = el("tbody");
  table.append(colgroup, thead, tbody);
  scroller.append(table);
  root.append(status, scroller);
  host.append(root);

  const isMissing = (r, c) => c >= st.rows[r].length || (st.missing[r] !== null && st.missing[r].has(c));
  // The age of the last change ticks while the kernel answers, and stops when it is gone.
  const age = () => {
    if (!st.status || st.status.age_s === null) return null;
    const now = st.link === "lost" ? st.lostAt : performance.now();
    return st.status.age_s + (now - st.receivedAt) / 1000;
  };
  const updatedAt = () =>
    st.status && st.status.age_s !== null ? st.receivedWall - st.status.age_s * 1000 : null;

  function order() {
    if (!st.sort) return null;
    if (st.order) return st.order;
    const c = st.columns.indexOf(st.sort.column);
    const idx = st.rows.map((_, i) => i);
    if (c < 0) return null;
    const sign = st.sort.desc ? -1 : 1;
    idx.sort((i, j) => sign * compare(st.rows[i][c], isMissing(i, c), st.rows[j][c], isMissing(j, c)) || i - j);
    st.order = idx;
    return idx;
  }

  Object.defineProperty(root, "jlState", {
    get() {
      const idx = order() || st.rows.map((_, i) => i);
      const n = st.columns.length;
      return {
        columns: st.columns.slice(),
        rows: idx.map((r) => Array.from({ length: n }, (_, c) => (isMissing(r, c) ? null : st.rows[r][c]))),
        keys: idx.map((r) => st.keys[r]),
        status: st.link === "none" ? "no kernel" : st.link === "lost" ? "disconnected" : st.status ? st.status.state : "live",
        age_s: age() ?? 0,
        updated_at: updatedAt(),
        sort: st.sort ? { ...st.sort } : null,
        seq: st.status ? st.status.seq : null,
      };
    },
  });

  function drawStatus() {
    const text = statusText(st.status, age(), st.link, updatedAt());
    if (status.textContent !== text) status.textContent = text;
    root.classList.toggle("jl-closed", !!st.status && st.status.state === "closed");
    root.classList.toggle("jl-stale", !!st.status && st.status.state === "stale");
    root.classList.toggle("jl-lost", st.link === "lost");
    root.classList.toggle("jl-nokernel", st.link === "none");
  }

  function drawHead() {
    // Fixed layout with the table's width the sum of its columns: each column is as wide as its
    // content says (jarenlab.live.render.layout), and a longer value is cut with an ellipsis.
    const chars = st.layout.reduce((sum, c) => sum + c.width + 1, 0);
    table.style.width = `calc(${chars}ch + ${st.layout.length * 16}px)`;
    colgroup.replaceChildren(
      ...st.layout.map((c) => {
        const col = el("col");
        col.style.width = `calc(${c.width + 1}ch + 16px)`;
        return col;
      }),
    );
    const tr = el("tr");
    st.layout.forEach((c) => {
      const th = el("th", c.numeric ? "jl-num" : "");
      const mark = st.sort && st.sort.column === c.name ? (st.sort.desc ? " ▼" : " ▲") : "";
      th.textContent = c.name + mark;
      th.title = `${c.name}: click to sort`;
      th.dataset.column = c.name;
      tr.append(th);
    });
    thead.replaceChildren(tr);
  }

  // The drawn rows: a pool of <tr> slots between two spacer rows, reused from one redraw to the
  // next. A slot is rewritten only when the row it shows changed (rows are replaced, never mutated,
  // so a reference comparison says so), and a cell only when its text, class or tooltip did: a
  // patch far from the viewport touches no node at all, and nothing is created or measured per
  // redraw (the row height is measured once, when the first row is on screen).
  const padTop = el("tr", "jl-pad");
  const padBottom = el("tr", "jl-pad");
  padTop.append(el("td"));
  padBottom.append(el("td"));
  const slots = [];
  let drawnColumns = null; // the layout the slots were drawn with

  function setPad(tr, rows, ncols) {
    const td = tr.firstChild;
    if (td.colSpan !== ncols) td.colSpan = ncols;
    const h = `${rows * st.rowH}px`;
    if (td.style.height !== h) td.style.height = h;
    tr.hidden = rows === 0;
  }

  function drawSlot(slot, r) {
    const row = st.rows[r];
    const miss = st.missing[r];
    const key = st.keys[r];
    if (slot.row === row && slot.miss === miss && slot.key === key && slot.layout === drawnColumns) return;
    slot.row = row;
    slot.miss = miss;
    slot.layout = drawnColumns;
    if (slot.key !== key) {
      slot.key = key;
      slot.tr.dataset.key = String(key);
    }
    const tds = slot.tr.children;
    for (let c = 0; c < st.columns.length; c++) {
      const [text, cls, title] = cell(row[c], isMissing(r, c));
      const td = tds[c];
      const width = st.layout[c] ? st.layout[c].width : 40;
      const tip = title !== null ? title : text.length > width ? text : "";
      if (td.textContent !== text) td.textContent = text;
      if (td.className !== cls) td.className = cls;
      if (td.title !== tip) td.title = tip;
    }
  }

  function newSlot(ncols) {
    const tr = el("tr");
    for (let c = 0; c < ncols; c++) tr.append(el("td"));
    return { tr, row: undefined, miss: undefined, key: undefined, layout: null };
  }

  function drawRows() {
    const n = st.rows.length;
    const idx = order();
    const ncols = Math.max(st.columns.length, 1);
    if (drawnColumns !== st.layout) {
      // new columns (or widths): start the pool again with the new cell count
      drawnColumns = st.layout;
      slots.length = 0;
    }
    let start = 0;
    let end = n;
    if (n > FULL) {
      const h = scroller.clientHeight || 420;
      // The visible rows and a margin: a redraw lays out every drawn row, so the margin is kept
      // small (a scroll redraws in the same frame, before it is painted).
      const visible = Math.ceil(h / st.rowH) + 1;
      const over = Math.max(OVERSCAN, Math.ceil(visible / 2));
      start = Math.max(0, Math.floor(scroller.scrollTop / st.rowH) - over);
      end = Math.min(n, start + visible + 2 * over);
    }
    const count = end - start;
    const fresh = slots.length === 0 && count > 0;
    while (slots.length < count) slots.push(newSlot(st.columns.length));
    if (fresh || tbody.childElementCount !== count + 2 || slots.length > count) {
      slots.length = count;
      tbody.replaceChildren(padTop, ...slots.map((s) => s.tr), padBottom);
    }
    setPad(padTop, start, ncols);
    setPad(padBottom, n - end, ncols);
    for (let p = start; p < end; p++) drawSlot(slots[p - start], idx ? idx[p] : p);
    if (!st.rowMeasured && count > 0) {
      // once a row is on screen: the height the theme gives it (the CSS asks for 22 px)
      const h = slots[0].tr.getBoundingClientRect().height;
      if (h > 0) {
        st.rowMeasured = true;
        if (Math.abs(h - st.rowH) > 0.5) {
          st.rowH = h;
          if (n > FULL) schedule(false);
        }
      }
    }
  }

  let pending = null;
  let headDirty = true;
  function schedule(head) {
    headDirty = headDirty || head;
    if (pending !== null) return;
    const run = () => {
      pending = null;
      if (headDirty) drawHead();
      headDirty = false;
      drawRows();
      drawStatus();
    };
    pending = typeof requestAnimationFrame === "function" ? requestAnimationFrame(run) : setTimeout(run, 0);
  }

  function setStatus(s) {
    st.status = s;
    st.receivedAt = performance.now();
    st.receivedWall = Date.now();
  }

  function load(msg) {
    st.v = msg.v;
    st.columns = msg.columns;
    st.layout = msg.layout;
    st.keys = msg.keys.slice();
    const n = st.keys.length;
    st.rows = Array.from({ length: n }, (_, r) => msg.data.map((col) => col[r]));
    st.missing = Array.from({ length: n }, () => null);
    msg.missing.forEach((rows, c) =>
      rows.forEach((r) => {
        if (st.missing[r] === null) st.missing[r] = new Set();
        st.missing[r].add(c);
      }),
    );
    st.order = null;
    setStatus(msg.status);
  }

  function apply(msg) {
    if (msg.columns) st.columns = msg.columns;
    if (msg.layout) st.layout = msg.layout;
    for (const op of msg.ops) {
      if (op[0] === "+") {
        st.rows.splice(op[1], 0, op[3]);
        st.keys.splice(op[1], 0, op[2]);
        st.missing.splice(op[1], 0, op[4].length ? new Set(op[4]) : null);
      } else if (op[0] === "-") {
        st.rows.splice(op[1], 1);
        st.keys.splice(op[1], 1);
        st.missing.splice(op[1], 1);
      } else {
        st.rows[op[1]] = op[2];
        st.missing[op[1]] = op[3].length ? new Set(op[3]) : null;
      }
    }
    st.v = msg.v;
    st.order = null;
    setStatus(msg.status);
  }

  function onMessage(msg) {
    if (!msg || typeof msg !== "object") return;
    if (msg.type === "snapshot") {
      load(msg);
      st.link = "live";
      copyIsCurrent(model);
      schedule(true);
    } else if (msg.type === "patch") {
      if (st.v === null || msg.v <= st.v) return; // before the snapshot, or already in it
      if (msg.v !== st.v + 1) {
        st.v = null; // a message went missing: start again from a snapshot
        model.send({ type: "sync" });
        return;
      }
      apply(msg);
      schedule(!!(msg.columns || msg.layout));
    } else if (msg.type === "status") {
      setStatus(msg.status);
      drawStatus();
    }
  }

  thead.addEventListener("click", (event) => {
    const th = event.target.closest("th");
    if (!th) return;
    const column = th.dataset.column;
    if (!st.sort || st.sort.column !== column) st.sort = { column, desc: false };
    else if (!st.sort.desc) st.sort = { column, desc: true };
    else st.sort = null;
    st.order = null;
    schedule(true);
  });
  scroller.addEventListener("scroll", () => schedule(false), { passive: true });
  model.on("msg:custom", onMessage);

  // The kernel going away: it died or restarted (its widgets are gone for good), or the page lost
  // its connection to it (when that comes back the view asks for the rows again).
  const kernel = kernelOf(model);
  let gone = false;
  function lose() {
    if (st.link === "lost") return;
    st.link = "lost";
    st.lostAt = performance.now();
    drawStatus();
  }
  function onKernelStatus(_, s) {
    if (s === "dead" || s === "restarting" || s === "autorestarting" || s === "terminating") {
      gone = true;
      lose();
    }
  }
  function onConnection(_, s) {
    if (s !== "connected") lose();
    else if (!gone && st.link === "lost") model.send({ type: "sync" });
  }
  if (kernel) {
    kernel.statusChanged.connect(onKernelStatus);
    kernel.connectionStatusChanged.connect(onConnection);
    if (kernel.isDisposed || kernel.status === "dead") lose();
  }
  const ticker = setInterval(() => {
    if (st.link === "live") drawStatus();
  }, 1000);
  drawStatus();
  if (kernel) model.send({ type: "sync" });
  else scroller.hidden = true; // nothing to draw: the saved copy shows the rows
  return () => {
    clearInterval(ticker);
    model.off("msg:custom", onMessage);
    if (kernel && !kernel.isDisposed) {
      kernel.statusChanged.disconnect(onKernelStatus);
      kernel.connectionStatusChanged.disconnect(onConnection);
    }
  };
}

export default { initialize, render };
