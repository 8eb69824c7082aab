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
