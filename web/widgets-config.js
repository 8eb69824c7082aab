// Loaded on widget pages just before the widget manager (@jupyter-widgets/html-manager's
// embed.js). The manager looks for its fonts under this path: point it at this folder of
// the site, so a page never asks a CDN (or a missing folder) for anything, whether it is
// served over HTTP or opened as a file.
(function () {
  var here = document.currentScript && document.currentScript.src;
  if (here) {
    window.__jupyter_widgets_assets_path__ = here.replace(/[^/]*$/, "");
  }
})();

// Accessibility of the rendered widgets. The manager draws the controls without
// the ARIA a screen reader needs; this observer adds it to every control it
// draws, and keeps it current as the reader clicks:
// * a toggle-buttons widget is a labelled group; each button says aria-pressed;
// * a selection slider's handle is named by its label and reads its value as
//   "head size 64", not as the option's index;
// * a dropdown is named by its label;
// * the model view's grid of thumbnails is one Tab stop, keyed by arrows;
// * the attention explorer's sentence is a polite live region, so the new
//   sentence is read out when the reader picks another token or view.
(function () {
  function label(control) {
    var el = control.querySelector(":scope > .widget-label");
    var text = el ? el.textContent.replace(/\s*:\s*$/, "").trim() : "";
    return text;
  }
  function set(el, name, value) {
    if (value === null || value === undefined || value === "") return;
    if (el.getAttribute(name) !== value) el.setAttribute(name, value);
  }
  function patch(root) {
    root.querySelectorAll(".widget-toggle-buttons").forEach(function (control) {
      var buttons = control.querySelectorAll("button.widget-toggle-button");
      var group = buttons.length ? buttons[0].parentElement : null;
      if (group) {
        set(group, "role", "group");
        set(group, "aria-label", label(control) || "view");
      }
      buttons.forEach(function (b) {
        set(b, "aria-pressed", b.classList.contains("mod-active") ? "true" : "false");
      });
    });
    root.querySelectorAll(".widget-slider, .widget-hslider").forEach(function (control) {
      var handle = control.querySelector(".noUi-handle");
      if (!handle) return;
      var name = label(control) || "view";
      var readout = control.querySelector(".widget-readout");
      var value = readout ? readout.textContent.replace(/\u00a0/g, " ").trim() : "";
      set(handle, "aria-label", name);
      set(handle, "aria-valuetext", value ? name + " " + value : "");
    });
    root.querySelectorAll(".widget-dropdown").forEach(function (control) {
      var select = control.querySelector("select");
      if (select && !select.getAttribute("aria-label")) set(select, "aria-label", label(control) || "view");
    });
    root.querySelectorAll(".pyxis-mv-grid").forEach(roving);
    root.querySelectorAll(".pyxis-describe-stack").forEach(function (stack) {
      set(stack, "aria-live", "polite");
      set(stack, "aria-atomic", "true");
    });
  }
  // The model view's thumbnails are one Tab stop (a roving tabindex): the
  // selected head takes the focus, and the arrow keys move the selection by
  // head (left, right) and by layer (up, down), Home and End to the ends.
  function roving(grid) {
    var buttons = Array.prototype.slice.call(
      grid.querySelectorAll("button.widget-toggle-button"));
    if (!buttons.length) return;
    var active = grid.querySelector("button.widget-toggle-button.mod-active") || buttons[0];
    buttons.forEach(function (b) { set(b, "tabindex", b === active ? "0" : "-1"); });
    if (grid.pyxisRoving) return;
    grid.pyxisRoving = true;
    grid.addEventListener("keydown", function (event) {
      var all = Array.prototype.slice.call(
        grid.querySelectorAll("button.widget-toggle-button"));
      var now = all.indexOf(document.activeElement);
      if (now < 0) return;
      var columns = getComputedStyle(all[0].parentElement)
        .gridTemplateColumns.split(" ").length || 1;
      var step = {ArrowRight: 1, ArrowLeft: -1, ArrowDown: columns, ArrowUp: -columns}[event.key];
      var next = event.key === "Home" ? 0 : event.key === "End" ? all.length - 1
        : step === undefined ? -1 : now + step;
      if (next < 0 || next >= all.length) return;
      event.preventDefault();
      if (next === now) return;
      all.forEach(function (b, k) { b.setAttribute("tabindex", k === next ? "0" : "-1"); });
      all[next].focus();
      all[next].click();
    });
  }
  // patch() only writes an attribute that differs, and watches none it writes
  var observer = new MutationObserver(function () { patch(document); });
  function start() {
    patch(document);
    observer.observe(document.body, {
      subtree: true, childList: true, characterData: true,
      attributes: true, attributeFilter: ["class", "aria-valuenow"],
    });
  }
  if (document.body) start();
  else document.addEventListener("DOMContentLoaded", start);
})();
