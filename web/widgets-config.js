// Loaded on widget pages just before require.js and the widget manager (embed-amd.js).
// It tells the manager that its fonts and chunks sit in this same folder of the site,
// so a page never asks a CDN for them, whether served over HTTP or opened as a file.
(function () {
  var here = document.currentScript && document.currentScript.src;
  if (here) {
    window.__jupyter_widgets_assets_path__ = here.replace(/[^/]*$/, "");
  }
})();
