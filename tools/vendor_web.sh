#!/usr/bin/env bash
# Fetch the JavaScript the website needs from the npm registry at build time, so that
# its pages load everything from the site itself (no CDN at view time):
#   the widget manager (embed.js)   -> _build/html/_static/widgets/  (widget pages only)
#   MathJax 3                       -> _build/html/_static/mathjax/  (pages with maths)
# Only the files a page loads are kept: embed.js and its woff2 fonts (every browser
# the site supports takes woff2, the first source of each @font-face), and MathJax's
# one TeX-to-CHTML bundle (tex-chtml.js: TeX input with the ams macros, HTML output)
# with its woff-v2 fonts. The book's maths needs no extension that the bundle loads
# on demand; one that did would show as a failed request in the website check.
# _vendor/ is copied into the site by Sphinx's html_extra_path. Each tarball's sha512
# integrity is checked against tools/vendor_integrity.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
pins=(
  "@jupyter-widgets/html-manager@1.0.15"
  "mathjax@3.2.2"
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
unpack mathjax-3.2.2.tgz mathjax

rm -rf "$static" && mkdir -p "$static/widgets"
# embed.js is the manager for the standard widgets with no module loader: require.js
# is not needed, and MathJax (which breaks when an AMD loader is present) can share a page.
cp "$tmp"/widgets/package/dist/embed.js "$static/widgets/"
cp "$tmp"/widgets/package/dist/*.woff2 "$static/widgets/"
cp web/widgets-config.js "$static/widgets/"
# MathJax loads its fonts relative to its own script
mkdir -p "$static/mathjax/output/chtml/fonts"
cp "$tmp"/mathjax/package/es5/tex-chtml.js "$static/mathjax/"
cp -r "$tmp"/mathjax/package/es5/output/chtml/fonts/woff-v2 "$static/mathjax/output/chtml/fonts/"
echo "$version" > "$stamp"
echo "vendored ${pins[*]} into $static"
