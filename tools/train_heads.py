"""Train the trained-heads chapter's runs and store them (make trained-heads).

    python tools/train_heads.py [pyxis_nb/data/trained_heads.npz]

Weights of the main run (float32: the chapter only reads them) and the loss
histories of every run, in one compressed .npz. The wide runs of the sqrt(d)
section store only their histories: the chapter plots nothing else of them.
"""

import sys
import time

import numpy as np

import pyxis_nb as px
from pyxis_nb.attention_only import DATA


def main(path=DATA) -> None:
    arrays = {}
    for name in px.TRAINED_HEADS_RUNS:
        start = time.perf_counter()
        model, history = px.train_run(name)
        for part, values in history.items():
            arrays[f"{name}/{part}"] = values
        if name == "main":
            for key, w in model.state_dict().items():
                arrays[f"{name}/{key}"] = w.astype(np.float32)
        print(f"{name}: {time.perf_counter() - start:.1f} s, last 100 steps: "
              f"first half {history['first_half'][-100:].mean():.3f}, "
              f"second half {history['second_half'][-100:].mean():.3f}")
    np.savez_compressed(path, **arrays)
    print(f"wrote {path}")


if __name__ == "__main__":
    main(*sys.argv[1:])
