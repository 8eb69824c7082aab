// Loaded on widget pages after require.js and before the widget manager (embed-amd.js).
// The manager's bundled modules ("@jupyter-widgets/base", ".../controls", ...) find their
// fonts in the folder of their own module URL, which require.js derives from the module
// name. Map those names to this folder of the site, so a page never asks a CDN (or a
// missing folder) for anything, whether it is served over HTTP or opened as a file.
(function () {
  var here = document.currentScript && document.currentScript.src;
  if (!here) return;
  var folder = here.replace(/\/[^/]*$/, "");
  window.__jupyter_widgets_assets_path__ = folder + "/";
  window.require.config({
    paths: {
      "@jupyter-widgets": folder,
      "@jupyter-widgets/html-manager/dist": folder,
    },
  });
})();
