// Sphinx's search scorer for this book (html_search_scorer in _config.yml).
// Sphinx's own scores, plus one rule: a page whose own title holds every
// word of the query comes first. Without it, "rope" listed "A real model"
// (one of its section titles says RoPE) above the RoPE chapter, and "KV
// cache" put the KV-cache chapter third, since equal scores sort by name.
var Scorer = {
  score: (result) => {
    const [, title, , , score] = result;
    const words = (new URLSearchParams(window.location.search).get("q") || "")
      .toLowerCase().split(/\s+/).filter((w) => w.length > 1);
    // "Page > Section" for a section hit, "Page" for the page itself
    const page = title.split(" > ")[0].toLowerCase();
    if (!words.length || !words.every((w) => page.includes(w))) return score;
    return score + (title.includes(" > ") ? 30 : 60);
  },
  // Sphinx 7.4's defaults
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 },
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
};
