#!/usr/bin/env bash
# constraints.txt, generated (`make constraints`): every package that
# requirements.txt, requirements-torch.txt and requirements-lab.txt pull in,
# pinned by uv's resolver. uv keeps each pin already in constraints.txt that
# still fits, so a run changes nothing until a requirements file does: to move
# one pin, delete its line and run this again.
#
# Needs: .venv (make venv) and the package index; and the CPU build of torch
# 2.13.0 in the --find-links folder (TORCH_WHEELS, /opt/wheels on this
# project's machines, which their pip config names too), so that torch's
# dependencies are the CPU build's, not the CUDA build's from the index.
set -euo pipefail
cd "$(dirname "$0")/.."
TORCH_WHEELS=${TORCH_WHEELS:-/opt/wheels}
# uv: the one `make venv` put in .venv (the Makefile's UV_PIN)
UV_VERSION=$(.venv/bin/uv --version | cut -d' ' -f2)
command=(.venv/bin/uv pip compile requirements.txt requirements-torch.txt
         requirements-lab.txt --python .venv/bin/python
         --find-links "$TORCH_WHEELS" --no-emit-package torch --no-header
         --quiet -o constraints.txt)
"${command[@]}"
{
  cat <<HEADER
# Generated: do not edit. Every package that requirements.txt,
# requirements-torch.txt and requirements-lab.txt pull in, pinned; the Makefile
# installs with -c constraints.txt. \`make constraints\` (tools/constraints.sh)
# makes it, in the repository root, with uv $UV_VERSION (pip install uv==$UV_VERSION):
#   ${command[*]}
# It needs .venv, the package index, and the CPU build of torch 2.13.0 in the
# --find-links folder ($TORCH_WHEELS here, as this machine's pip config says;
# TORCH_WHEELS=folder elsewhere), so that torch's dependencies are the CPU
# build's. torch itself is pinned by requirements-torch.txt, not here (its
# CPU build is 2.13.0+cpu, a version the package index does not have).
# Pins already here are kept while they fit: delete a line to update it.
HEADER
  cat constraints.txt
} > constraints.txt.new
mv constraints.txt.new constraints.txt
