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
// * The language switch keeps the reader's place (issue 54, item 6): both
//   editions give a section the same id, so the link to the other edition
//   carries the section being read (the last heading above the top of the
//   screen, or the page's own fragment) and, on the search page, the query.
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
  function here() {
    var top = 80;  // the theme's header covers the first 60-odd pixels
    // the sections under the page's title: at the top, no fragment
    var id = "";
    document.querySelectorAll("article section section[id]").forEach(function (s) {
      if (s.getBoundingClientRect().top <= top) id = s.id;
    });
    return id ? "#" + id : location.hash;
  }
  function keepPlace(event) {
    var link = event.target.closest("a.pyxis-edition-switch");
    if (!link) return;
    var target = link.href.split("#")[0].split("?")[0];
    var query = /\/search\.html$/.test(target) ? location.search : "";
    link.href = target + query + here();
  }
  function start() {
    patch(document);
    // before the browser follows the link: click, and a middle click or
    // a keyboard Enter (both fire these)
    ["click", "auxclick", "keydown"].forEach(function (type) {
      document.addEventListener(type, keepPlace, true);
    });
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
