// What a reader can type into and Tab to (issue #41, items 5 and 14). Loaded
// with defer on every page (_ext/pyxis_book.py); no network, no kernel.
// * A slider's readout ("d = 8", "step 1") is text, not an edit field: the
//   widget manager makes it contenteditable, so typing changed the label but
//   not the picture and a screen reader announced an edit field. The
//   attribute is taken off whenever the manager puts it back (it does on
//   every change of the slider's model).
// * The copy buttons of code blocks (sphinx-copybutton) show only while the
//   pointer is over their block, and were 22 to 84 invisible Tab stops a
//   page between the reader and the widgets. They stay for the pointer and
//   touch; from the keyboard a block is copied by selecting it.
(function () {
  function readOnly(el) {
    if (el.hasAttribute("contenteditable")) el.removeAttribute("contenteditable");
  }
  function patch(root) {
    root.querySelectorAll(".widget-readout[contenteditable]").forEach(readOnly);
    root.querySelectorAll("button.copybtn:not([tabindex])").forEach(function (b) {
      b.tabIndex = -1;
    });
  }
  function start() {
    patch(document);
    new MutationObserver(function (changes) {
      changes.forEach(function (change) {
        if (change.type === "attributes") {
          if (change.target.classList.contains("widget-readout")) readOnly(change.target);
        } else if (change.addedNodes.length) {
          patch(change.target);
        }
      });
    }).observe(document.body, {
      subtree: true, childList: true, attributes: true,
      attributeFilter: ["contenteditable"],
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
