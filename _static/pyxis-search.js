// Opened as a file (file://), the browser will not let Sphinx's search fetch the
// pages it quotes snippets from: list titles only, with no failed fetches, and say
// in one line how to get snippets.
(function () {
  if (window.location.protocol !== "file:") return;
  if (typeof DOCUMENTATION_OPTIONS !== "undefined") DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;
  document.addEventListener("DOMContentLoaded", function () {
    if (typeof DOCUMENTATION_OPTIONS !== "undefined") DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;
    var results = document.getElementById("search-results");
    if (!results) return;
    var note = document.createElement("p");
    note.className = "pyxis-search-note";
    var serve = ".venv/bin/python -m http.server -d _build/html 8000";
    note.textContent = document.documentElement.lang === "ja"
      ? "ファイルとして開いた場合、検索結果にはページのタイトルだけが表示されます。" +
        "本文の抜粋も表示するには、サイトをHTTPサーバーで配信してください（READMEを参照）：" + serve
      : "Opened as a file, search lists page titles only; for snippets, serve " +
        "the site (README): " + serve;
    results.parentNode.insertBefore(note, results);
  });
})();

// Snippets are prose: the text Sphinx quotes under each result leaves out
// the page's contents list, code cells and their outputs, and gives maths as
// plain text (it quoted "# nbval-ignore-output" and raw TeX): a short inline
// formula in plain letters ("\\sqrt{d_{head}}" as "√d_head"), anything longer
// or displayed as "…".
function pyxisPlainMaths(el) {
  var tex = el.textContent.replace(/\\[()[\]]|\$/g, "").trim();
  if (el.tagName !== "SPAN" || /\\(frac|begin|left)/.test(tex)) return "…";
  var text = tex.replace(/\\sqrt/g, "\u221a")
    .replace(/\\(mathrm|text|mathbf|operatorname)/g, "")
    .replace(/\\([a-zA-Z]+)/g, "$1").replace(/[{}]/g, "").trim();
  return text.length <= 24 ? text : "…";
}
document.addEventListener("DOMContentLoaded", function () {
  if (typeof Search === "undefined" || !Search.htmlToText) return;
  var toText = Search.htmlToText;
  Search.htmlToText = function (html, anchor) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    doc.querySelectorAll("nav, .bd-toc, .toctree-wrapper, .onlyprint, " +
      ".bd-header-article, .cell_input, " +
      ".cell_output, div.highlight, pre").forEach(function (el) {
      el.remove();
    });
    doc.querySelectorAll(".math").forEach(function (el) {
      el.textContent = pyxisPlainMaths(el);
    });
    return toText(doc.documentElement.outerHTML, anchor);
  };
});
