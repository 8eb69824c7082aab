// Figures that do not fit: a figure or widget picture wider than its column is
// shown scaled to the column (pyxis.css). This script puts a "Full size" button
// under each such picture; the button, or a tap on the picture, opens it at its
// own size in a dialog that scrolls both ways (Escape, the Close button or a tap
// beside it closes it). Pictures the widget manager draws later, and views that
// a control switches to, are handled as they appear (observers). Loaded with
// defer on every page (_ext/pyxis_book.py); no network, no kernel.
(function () {
  var PICTURES = "article .cell_output img, article .pyxis-view img";
  var dialog = null;
  // the words it shows, in the page's language (the Japanese edition: <html lang="ja">)
  var LANGUAGES = {
    en: {dialog: "Figure at full size", close: "Close", button: "Full size",
         label: "Open the figure at full size"},
    ja: {dialog: "原寸の図", close: "閉じる", button: "原寸で表示",
         label: "図を原寸で開く"},
  };
  var WORDS = LANGUAGES[document.documentElement.lang] || LANGUAGES.en;

  function zoom(img) {
    if (!dialog) {
      dialog = document.createElement("dialog");
      dialog.className = "pyxis-zoom";
      dialog.setAttribute("aria-label", WORDS.dialog);
      var close = document.createElement("button");
      close.type = "button";
      close.className = "pyxis-zoom-close";
      close.textContent = WORDS.close;
      close.addEventListener("click", function () { dialog.close(); });
      var body = document.createElement("div");
      body.className = "pyxis-zoom-body";
      dialog.append(close, body);
      // a tap on the backdrop (the dialog itself, not its picture) closes it
      dialog.addEventListener("click", function (e) {
        if (e.target === dialog || e.target === body) dialog.close();
      });
      document.body.appendChild(dialog);
    }
    var big = document.createElement("img");
    big.src = img.currentSrc || img.src;
    big.alt = img.alt;
    big.style.width = own(img) + "px";  // its own size, however many pixels
    dialog.querySelector(".pyxis-zoom-body").replaceChildren(big);
    dialog.showModal();
  }

  // a picture's own width in CSS px: a figure drawn at twice its size in
  // pixels (tools/execute_notebooks.py) carries it as its style's width
  function own(img) {
    return parseFloat(img.style.width) || img.naturalWidth;
  }

  // a picture with an overlay (the explorer's outlined row) sits in a box
  // of its own size, span.pyxis-over: the button goes after that box
  function box(img) {
    return img.closest(".pyxis-over") || img;
  }

  function button(img) {
    var next = box(img).nextElementSibling;
    return next && next.classList.contains("pyxis-full-size") ? next : null;
  }

  function update(img) {
    var shown = img.getBoundingClientRect().width;
    if (!shown || !img.naturalWidth) return;  // hidden view, or not loaded yet
    var scaled = own(img) > Math.round(shown) + 1;
    var b = button(img);
    if (scaled && !b) {
      b = document.createElement("button");
      b.type = "button";
      b.className = "pyxis-full-size";
      b.textContent = WORDS.button;
      b.setAttribute("aria-label", WORDS.label);
      b.addEventListener("click", function () { zoom(img); });
      box(img).after(b);
    }
    img.classList.toggle("pyxis-scaled", scaled);
    if (b) b.hidden = !scaled;
  }

  var sizes = new ResizeObserver(function (entries) {
    entries.forEach(function (entry) { update(entry.target); });
  });
  function watch(root) {
    root.querySelectorAll(PICTURES).forEach(function (img) {
      if (img.dataset.pyxisWatched) return;
      img.dataset.pyxisWatched = "1";
      img.addEventListener("load", function () { update(img); });
      sizes.observe(img);
      update(img);
    });
  }

  document.addEventListener("click", function (e) {
    var img = e.target.closest && e.target.closest("img.pyxis-scaled");
    if (img && !img.closest("dialog")) zoom(img);
  });
  // "Back to top" (the theme shows it while the reader scrolls up): hidden
  // while it would cover a figure or a widget, checked a frame after the
  // theme's own scroll handler has shown or hidden it
  var OVER = "article .cell_output img, article .widget-subarea, article figure img";
  function overlaps(a, b) {
    return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  }
  var pending = false;
  function placeBackToTop() {
    pending = false;
    var pill = document.getElementById("pst-back-to-top");
    if (!pill) return;
    pill.classList.remove("pyxis-over-figure");
    if (pill.style.display === "none" || !pill.getClientRects().length) return;
    var box = pill.getBoundingClientRect();
    var covered = Array.prototype.some.call(document.querySelectorAll(OVER), function (el) {
      return overlaps(box, el.getBoundingClientRect());
    });
    pill.classList.toggle("pyxis-over-figure", covered);
  }
  window.addEventListener("scroll", function () {
    if (!pending) { pending = true; requestAnimationFrame(placeBackToTop); }
  }, { passive: true });

  function start() {
    watch(document);
    // the widget manager draws its pictures on the window's load event
    new MutationObserver(function () { watch(document); })
      .observe(document.body, { subtree: true, childList: true });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
