// A widget's static copy (jarenlab.widgets.display.StaticCopy: the text/html output beside the
// view, for readers without a kernel) is controlled with one style rule per widget, added when the
// model is created (anywidget's initialize): before the view and the copy render, so the page
// never lays out or paints a copy that is about to go. The rule names the copy itself, not an
// output that :has() it: a :has() rule over output areas would be re-checked on every change a
// widget makes to its own output's subtree. Every widget module that has a copy starts with this
// text and exports this initialize (jarenlab.widgets.display.es_module).
//
// What the rule says depends on where the model lives:
// - no kernel behind the page (an HTML export, nbviewer: the widget manager has none): no rule, the
//   copy shows (it says when it was taken and that it is not live);
// - a kernel, and the copy already on the page (the notebook was reopened or the page reloaded: the
//   copy is the saved one): "stale", marked as such, until the view has the kernel's rows
//   (copyIsCurrent), then hidden;
// - a kernel, the copy not yet on the page (the cell has just run): hidden at once.
// When the model goes (the widget closed) the rule goes and the copy shows again.
const copies = new Map();

const COPY_RULES = {
  hidden: (sel) => `${sel} { display: none; }`,
  stale: (sel) =>
    `${sel} { opacity: 0.55; outline: 2px dashed var(--jp-warn-color1, #b45309); outline-offset: 2px; }` +
    ` ${sel}::before { content: "stale: the saved copy, waiting for the kernel"; display: block;` +
    ` font: var(--jp-ui-font-size0, 11px) var(--jp-ui-font-family, sans-serif);` +
    ` color: var(--jp-warn-color1, #b45309); }`,
};

// The kernel connection behind a model (JupyterLab's widget manager has one), or null.
function kernelOf(model) {
  const manager = model.widget_manager;
  return manager && manager.kernel ? manager.kernel : null;
}

function copySelector(anchor) {
  return `[data-jl-static-for="${anchor}"]`;
}

function holdCopy(anchor, mode) {
  let entry = copies.get(anchor);
  if (!entry) {
    const style = document.createElement("style");
    style.dataset.jlCopyRule = anchor;
    document.head.append(style);
    entry = { style, models: 0, mode: null };
    copies.set(anchor, entry);
  }
  if (entry.mode !== "hidden") {
    entry.mode = mode;
    entry.style.textContent = COPY_RULES[mode](copySelector(anchor));
  }
  entry.models += 1;
  return () => {
    entry.models -= 1;
    if (entry.models === 0) {
      entry.style.remove();
      copies.delete(anchor);
    }
  };
}

// The view shows the kernel's rows now: a stale copy goes (a no-op where it is hidden or shown).
function copyIsCurrent(model) {
  const entry = copies.get(model.get("anchor"));
  if (entry && entry.mode === "stale") {
    entry.mode = "hidden";
    entry.style.textContent = COPY_RULES.hidden(copySelector(model.get("anchor")));
  }
}

function initialize({ model, signal }) {
  const anchor = model.get("anchor");
  if (!anchor || !kernelOf(model)) return;
  const saved = document.querySelector(copySelector(anchor)) !== null;
  const release = holdCopy(anchor, saved ? "stale" : "hidden");
  if (signal) signal.addEventListener("abort", release, { once: true });
  else return release;
}
