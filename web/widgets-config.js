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

// The widget manager typesets labels with MathJax 2's API, MathJax.Hub.Queue(["Typeset",
// MathJax.Hub, element]), whenever a global MathJax exists. The site uses MathJax 3,
// which has no Hub: translate that one call to MathJax 3's typesetPromise. The manager
// renders on the window's load event, after MathJax (a deferred script) has started;
// this listener is added first, so it runs first.
window.addEventListener("load", function () {
  var mj = window.MathJax;
  if (mj && !mj.Hub && mj.typesetPromise) {
    mj.Hub = {
      Queue: function (call) {
        var element = call && call[2];
        mj.typesetPromise(element ? [element] : undefined).catch(function () {});
      },
    };
  }
});
