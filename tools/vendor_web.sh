#!/usr/bin/env bash
# Fetch the JavaScript the website needs from the npm registry at build time, so that
# its pages load everything from the site itself (no CDN at view time):
#   the widget manager (embed.js)   -> _build/html/_static/widgets/  (widget pages only)
#   KaTeX's stylesheet and fonts    -> _build/html/_static/katex/    (pages with maths)
# Only the files a page loads are kept: embed.js and its woff2 fonts (every browser
# the site supports takes woff2, the first source of each @font-face), and KaTeX's
# katex.min.css with its woff2 fonts. The maths itself is HTML written at build time
# (sphinxcontrib-katex, katex_prerender in _config.yml): no script typesets a page, so
# nothing moves when it would have finished (issue 41, item 9).
# _vendor/ is copied into the site by Sphinx's html_extra_path. Each tarball's sha512
# integrity is checked against tools/vendor_integrity.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
pins=(
  "@jupyter-widgets/html-manager@1.0.15"
  "katex@0.16.22"
)
static=_vendor/_static
stamp=_vendor/.pins
version="${pins[*]} $(sha1sum web/widgets-config.js tools/vendor_web.sh)"
if [[ -f $stamp && "$(cat "$stamp")" == "$version" ]]; then
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent --json "${pins[@]}" > pack.json)
python3 - "$tmp/pack.json" tools/vendor_integrity.txt <<'PY'
import json, sys
packed, pinfile = sys.argv[1], sys.argv[2]
want = dict(line.split() for line in open(pinfile) if line.strip() and not line.startswith("#"))
for entry in json.load(open(packed)):
    spec = f"{entry['name']}@{entry['version']}"
    if want.get(spec) != entry["integrity"]:
        sys.exit(f"integrity mismatch for {spec}: got {entry['integrity']}, pinned {want.get(spec)}")
PY
unpack() { mkdir -p "$tmp/$2" && tar xzf "$tmp/$1" -C "$tmp/$2"; }
unpack jupyter-widgets-html-manager-1.0.15.tgz widgets
unpack katex-0.16.22.tgz katex

rm -rf "$static" && mkdir -p "$static/widgets"
# embed.js is the manager for the standard widgets with no module loader: require.js
# is not needed.
cp "$tmp"/widgets/package/dist/embed.js "$static/widgets/"
cp "$tmp"/widgets/package/dist/*.woff2 "$static/widgets/"
cp web/widgets-config.js "$static/widgets/"
# KaTeX's stylesheet loads its fonts from fonts/ beside it
mkdir -p "$static/katex/fonts"
cp "$tmp"/katex/package/dist/katex.min.css "$static/katex/"
cp "$tmp"/katex/package/dist/fonts/*.woff2 "$static/katex/fonts/"
echo "$version" > "$stamp"
echo "vendored ${pins[*]} into $static"
