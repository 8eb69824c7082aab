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
// or displayed as "…". The maths is KaTeX's, rendered at build time: its
// text is the formula three times (MathML, TeX source, HTML: "t+1t + 1t+1"),
// so the TeX source alone is read.
function pyxisPlainMaths(el) {
  var source = el.querySelector('annotation[encoding="application/x-tex"]');
  var tex = (source || el).textContent.replace(/\\[()[\]]|\$/g, "").trim();
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

// The Japanese edition looks a query up as pairs of characters
// (_ext/pyxis_search_ja.py: 線形アテンション as 線形, 形ア, アテ, ...): the
// snippet is taken where a word as typed is, and the words as typed are
// highlighted, not the pairs (which lit up every アテンション).
document.addEventListener("DOMContentLoaded", function () {
  if (typeof Search === "undefined" || !Search._parseQuery) return;
  if (document.documentElement.lang !== "ja") return;
  var typed = function (query) {  // searchtools.js's own words
    return query.toLowerCase().split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/u)
      .filter(function (w) { return w; });
  };
  var parse = Search._parseQuery;
  Search._parseQuery = function (query) {
    var parsed = parse(query);
    parsed[3] = new Set(typed(query));
    if (typeof SPHINX_HIGHLIGHT_ENABLED !== "undefined" && SPHINX_HIGHLIGHT_ENABLED)
      localStorage.setItem("sphinx_highlight_terms", Array.from(parsed[3]).join(" "));
    return parsed;
  };
  var summary = Search.makeSearchSummary;
  Search.makeSearchSummary = function (html, keywords, anchor) {
    // the last keyword found decides where the snippet starts
    var query = new URLSearchParams(window.location.search).get("q") || "";
    return summary(html, Array.from(keywords).concat(typed(query)), anchor);
  };
});

// A section whose own title holds every word of the query comes before pages
// that only mention the words (issue 55, item 6). Sphinx lists a section by
// its title only when the title holds the query as typed and is at most
// twice its length, so "linear attention" missed "Linear attention and Gated
// DeltaNet" and "attention sink" ranked SmolLM2's "Attention sinks" below
// six pages. Every such section is listed and raised by PYXIS_SECTION_BOOST; a
// page whose title holds the words, and its sections, are raised by the
// scorer instead (_ext/search_scorer.js), the page first.
var PYXIS_SECTION_BOOST = 50;
document.addEventListener("DOMContentLoaded", function () {
  if (typeof Search === "undefined" || !Search._performSearch
      || typeof _orderResultsByScoreThenName === "undefined") return;
  var perform = Search._performSearch;
  Search._performSearch = function (query) {
    var results = perform.apply(this, arguments);
    var index = Search._index;
    var words = query.toLowerCase().split(/\s+/).filter(function (w) { return w.length > 1; });
    if (!words.length || !index || !index.alltitles) return results;
    var holds = function (title) {
      var lower = title.toLowerCase();
      return words.every(function (w) { return lower.includes(w); });
    };
    var listed = new Map();  // "doc#anchor" -> its result
    results.forEach(function (r) { listed.set(r[0] + r[2], r); });
    Object.entries(index.alltitles).forEach(function (entry) {
      var title = entry[0];
      if (!holds(title)) return;
      entry[1].forEach(function (found) {
        var file = found[0], id = found[1];
        // a page's own title, and the sections of a page whose title holds the
        // words, are raised by the scorer, the page above its sections
        if (id === null || index.titles[file] === title || holds(index.titles[file])) return;
        var key = index.docnames[file] + "#" + id, r = listed.get(key);
        if (!r) {
          r = [index.docnames[file], index.titles[file] + " > " + title, "#" + id,
               null, Scorer.title, index.filenames[file]];
          if (Scorer.score) r[4] = Scorer.score(r);
          results.push(r);
          listed.set(key, r);
        }
        if (!r.pyxisBoosted) { r[4] += PYXIS_SECTION_BOOST; r.pyxisBoosted = true; }
      });
    });
    // searchtools.js's own order: the best last (it shows results from the end)
    return results.sort(_orderResultsByScoreThenName);
  };
});
