// The jobs dashboard's front end (an anywidget ES module): the kernel renders the dashboard as
// HTML (jarenlab.jobs.views.dashboard_html); this shows it under a root the page can find, with a
// refresh button that asks the kernel for a fresh view. The dashboard's static copy is hidden while
// its model lives in a page with a kernel (initialize: static_copy.js, which this module's text
// follows); without one (an export) the view stays empty and the copy shows the saved dashboard.

function render({ model, el }) {
  if (!kernelOf(model)) return undefined;
  copyIsCurrent(model); // a model is restored with the kernel's state: the view is current
  const root = document.createElement("div");
  root.className = "jl-jobs";
  root.dataset.jlWidget = "jobs";
  const button = document.createElement("button");
  button.className = "jl-refresh jupyter-button";
  button.textContent = "Refresh";
  button.title = "read the queue now";
  button.addEventListener("click", () => model.send({ type: "refresh" }));
  const view = document.createElement("div");
  root.append(button, view);
  el.append(root);
  const draw = () => {
    view.innerHTML = model.get("html");
    button.disabled = !model.get("live");
  };
  model.on("change:html", draw);
  model.on("change:live", draw);
  draw();
  return () => {
    model.off("change:html", draw);
    model.off("change:live", draw);
  };
}

export default { initialize, render };
