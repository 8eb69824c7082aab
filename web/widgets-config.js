// Loaded on widget pages after require.js and before the widget manager (embed-amd.js).
// The manager finds its fonts relative to the module path
// "@jupyter-widgets/html-manager/dist"; map that path to this folder of the site, so a
// page never asks a CDN (or a missing folder) for them, whether it is served over HTTP
// or opened as a file.
(function () {
  var here = document.currentScript && document.currentScript.src;
  if (!here) return;
  var folder = here.replace(/\/[^/]*$/, "");
  window.__jupyter_widgets_assets_path__ = folder + "/";
  window.require.config({ paths: { "@jupyter-widgets/html-manager/dist": folder } });
})();
