"""Run every benchmark in this folder: ``make bench``.

Each ``bench_*.py`` module has a ``main()`` that measures in this one run and
prints its ratios. Targets live here, never in timed unit tests.
"""

import importlib.util
import sys
from pathlib import Path

here = Path(__file__).parent
only = sys.argv[1:]
failed = []
for path in sorted(here.glob("bench_*.py")):
    if only and path.stem not in only:
        continue
    print(f"\n=== {path.stem} ===", flush=True)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if module.main() is False:
        failed.append(path.stem)
if failed:
    sys.exit(f"targets missed: {', '.join(failed)}")
