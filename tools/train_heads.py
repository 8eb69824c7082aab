"""Train the trained-heads chapter's runs and store them (make trained-heads).

    python tools/train_heads.py [pyxis_nb/data/trained_heads.npz] [RUN ...]

Weights of the main run (float32: the chapter only reads them), the loss
histories of every run and the main run's head-score history (every 10
steps, float32), in one compressed .npz. The wide runs of the sqrt(d)
section store only their loss histories: the chapter plots nothing else of
them. Naming runs (e.g. ``main``) retrains only those and keeps the other
runs' arrays from the existing file. Each run prints its time; on the
shared 2-core development machine the main run took 14-24 s and each wide
run about 3 minutes (10 s and 12 s per 100 steps).
"""

import sys
import time

import numpy as np

import pyxis_nb as px
from pyxis_nb.attention_only import DATA, SCORES


def main(path=DATA, *names) -> None:
    arrays, begin = {}, time.perf_counter()
    if names:  # keep the runs that are not retrained
        with np.load(path) as old:
            arrays = {k: old[k] for k in old.files
                      if k.split("/")[0] not in names}
    for name in names or px.attention_only.TRAINED_HEADS_RUNS:
        start = time.perf_counter()
        model, history = px.attention_only.train_run(name)
        for part, values in history.items():
            if part in SCORES:
                values = values.astype(np.float32)
            arrays[f"{name}/{part}"] = values
        if name == "main":
            for key, w in model.state_dict().items():
                arrays[f"{name}/{key}"] = w.astype(np.float32)
        print(f"{name}: {time.perf_counter() - start:.1f} s, last 100 steps: "
              f"first half {history['first_half'][-100:].mean():.3f}, "
              f"second half {history['second_half'][-100:].mean():.3f}")
    np.savez_compressed(path, **arrays)
    print(f"wrote {path} in {time.perf_counter() - begin:.0f} s")


if __name__ == "__main__":
    main(*sys.argv[1:])
