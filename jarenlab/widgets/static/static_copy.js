// A widget's static copy (jarenlab.widgets.display.StaticCopy: the text/html output beside the
// view, for readers without a kernel) is hidden while the widget's model lives in the page, with
// one style rule per widget, added when the model is created (anywidget's initialize): before the
// view and the copy render, so the page never lays out or paints the copy. When the model goes
// (the widget closed) the copy shows again. The rule names the copy itself, not an output that
// :has() it: a :has() rule over output areas would be re-checked on every change a widget makes to
// its own output's subtree. Every widget module that has a copy starts with this text and exports
// this initialize (jarenlab.widgets.display.es_module).
const hiddenCopies = new Map();

function hideStaticCopy(anchor) {
  if (!anchor) return () => {};
  let entry = hiddenCopies.get(anchor);
  if (!entry) {
    const style = document.createElement("style");
    style.textContent = `[data-jl-static-for="${anchor}"] { display: none; }`;
    document.head.append(style);
    entry = { style, models: 0 };
    hiddenCopies.set(anchor, entry);
  }
  entry.models += 1;
  return () => {
    entry.models -= 1;
    if (entry.models === 0) {
      entry.style.remove();
      hiddenCopies.delete(anchor);
    }
  };
}

function initialize({ model, signal }) {
  const showCopy = hideStaticCopy(model.get("anchor"));
  if (signal) signal.addEventListener("abort", showCopy, { once: true });
  else return showCopy;
}
