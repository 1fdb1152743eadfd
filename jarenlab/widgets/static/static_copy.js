// A view hides its widget's static copy (jarenlab.widgets.display.StaticCopy: the text/html output
// beside the view, for readers without a kernel) while it is on the page, with one style rule per
// widget; the last view to go shows the copy again. The rule names the copy itself, not an output
// that :has() it: a :has() rule over output areas would be re-checked on every change a widget
// makes to its own output's subtree. Every widget module that has a copy starts with this text
// (jarenlab.widgets.display.es_module).
const hiddenCopies = new Map();

function hideStaticCopy(anchor) {
  if (!anchor) return () => {};
  let entry = hiddenCopies.get(anchor);
  if (!entry) {
    const style = document.createElement("style");
    style.textContent = `[data-jl-static-for="${anchor}"] { display: none; }`;
    document.head.append(style);
    entry = { style, views: 0 };
    hiddenCopies.set(anchor, entry);
  }
  entry.views += 1;
  return () => {
    entry.views -= 1;
    if (entry.views === 0) {
      entry.style.remove();
      hiddenCopies.delete(anchor);
    }
  };
}
