#!/usr/bin/env bash
# Fetch the widget manager's JavaScript from the npm registry at build time, so the
# website's widget pages load everything from the site itself (no CDN at view time).
#   _vendor/_static/widgets/  ->  copied to _build/html/_static/widgets/ (html_extra_path)
# The tarballs' sha512 integrity is checked against the pins below.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=_vendor/_static/widgets
pins=(
  "@jupyter-widgets/html-manager@1.0.15"
  "requirejs@2.3.8"
)
stamp="$dest/.pins"
if [[ -f $stamp && "$(cat "$stamp")" == "${pins[*]}" ]]; then exit 0; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent --json "${pins[@]}" > pack.json)
python3 - "$tmp" tools/vendor_integrity.txt <<'PY'
import json, sys
tmp, pinfile = sys.argv[1], sys.argv[2]
want = dict(line.split() for line in open(pinfile) if line.strip() and not line.startswith("#"))
for entry in json.load(open(f"{tmp}/pack.json")):
    spec = f"{entry['name']}@{entry['version']}"
    if want.get(spec) != entry["integrity"]:
        sys.exit(f"integrity mismatch for {spec}: got {entry['integrity']}, pinned {want.get(spec)}")
PY
rm -rf "$dest" && mkdir -p "$dest"
tar xzf "$tmp"/jupyter-widgets-html-manager-1.0.15.tgz -C "$tmp"
cp "$tmp"/package/dist/embed-amd.js "$dest/"
cp "$tmp"/package/dist/*.{woff2,woff,ttf,eot,svg} "$dest/"
mkdir -p "$tmp/rq" && tar xzf "$tmp"/requirejs-2.3.8.tgz -C "$tmp/rq"
cp "$tmp"/rq/package/require.js "$dest/"
cp web/widgets-config.js "$dest/"
echo "${pins[*]}" > "$stamp"
echo "vendored widget manager into $dest"
