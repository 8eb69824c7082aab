"""What transformers computes from Gemma 3 270M's GGUF file: the reference
that tests/test_gemma3.py compares pyxis_nb with.

Run as a script, in a fresh interpreter that imports neither pyxis_nb nor
the tests' modules other than smollm2_reference
(``python tests/gemma3_reference.py FILE.gguf OUT.npz``): it loads the
file with transformers' own GGUF loader as a user does (float32; no patch)
and writes to OUT:

- ``prompt``: (1, 600) ids, the first 600 tokens of TEXT (past the
  512-token window);
- ``logits``: eager attention, the logits of the prompt's last 96
  positions, (1, 96, V);
- ``padded``: eager, the last 9 logits of ``padded_batch(prompt)``: two
  rows of 561 tokens, the second left-padded by PAD, (2, 9, V);
- ``greedy``: sdpa, ``generate`` of the prompt's first 560 tokens,
  8 greedy tokens, prompt included;
- ``record``: JSON of the model's class name, the state dict (name ->
  shape, dtype, sha256 of the
  float32 bytes; the q and k norms' values too, which the GGUF stores as
  1 + w), and the tokenizer's ids of each of TEXTS and TEXT with their
  decoded text (special tokens skipped).

tests/kept_reference.py keeps OUT, keyed by the file's sha256, the scripts'
text and the versions of PACKAGES: transformers loads the model and the
tokenizer from the file once (about 2 minutes), not once per run.
"""

import json
import sys

import numpy as np

import smollm2_reference
from smollm2_reference import tensor_record

SCRIPTS = (smollm2_reference,)
PACKAGES = smollm2_reference.PACKAGES
#: a text that reads as prose, repeated past the window
TEXT = " ".join(
    f"Chapter {i}. The river keeps flowing to the sea while the town sleeps;"
    f" lamp {i} is lit at dusk and the baker counts {3 * i} loaves."
    for i in range(60))
TEXTS = ["The capital of France is Paris.",
         "def f(x):\n    return x ** 2  # square\n",
         "日本語の文章を書きます。東京は日本の首都です。",
         "a    b\t\tc\n\n\n  d   ",
         "Café naïve résumé Ångström",
         "emoji 🎉🐍 and 👩\u200d💻!",
         "  leading spaces",
         "<bos>hello<eos> <start_of_turn>"]
PAD, PADDED_LENGTH = 24, 561


def padded_batch(prompt: np.ndarray) -> tuple:
    """(ids, attention_mask), each (2, 561): the prompt's first 561 tokens,
    and the same left-padded by PAD (pad id 0, mask 0)."""
    n = PADDED_LENGTH
    ids = np.stack([prompt[0, :n],
                    np.r_[np.zeros(PAD, int), prompt[0, :n - PAD]]])
    mask = np.ones_like(ids)
    mask[1, :PAD] = 0
    return ids, mask


def compute(file: str) -> dict:
    """The reference of the GGUF file ``file`` (see the module docstring)."""
    import pathlib

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = pathlib.Path(file)
    model = AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(path.parent,
                                              gguf_file=path.name)
    tokens = []
    for text in TEXTS + [TEXT]:
        ids = tokenizer(text).input_ids
        tokens.append({"ids": ids, "decoded": tokenizer.decode(
            ids, skip_special_tokens=True)})
    prompt = np.array([tokenizer(TEXT).input_ids[:600]])
    ids, mask = padded_batch(prompt)
    with torch.no_grad():
        model.set_attn_implementation("eager")
        logits = model(torch.tensor(prompt),
                       logits_to_keep=96).logits.numpy()
        padded = model(torch.tensor(ids), attention_mask=torch.tensor(mask),
                       logits_to_keep=9).logits.numpy()
        model.set_attn_implementation("sdpa")
        greedy = model.generate(torch.tensor(prompt[:, :560]),
                                max_new_tokens=8, do_sample=False).numpy()
    weights = {name: t.numpy() for name, t in model.state_dict().items()}
    state = {name: tensor_record(w) for name, w in weights.items()}
    norms = {name: w.tolist() for name, w in weights.items()
             if name.endswith(("q_norm.weight", "k_norm.weight"))}
    return {"prompt": prompt, "logits": logits, "padded": padded,
            "greedy": greedy, "record": {"class": type(model).__name__,
                                         "state": state, "norms": norms,
                                         "tokens": tokens}}


def main(file: str, out: str) -> None:
    ref = compute(file)
    record = np.array(json.dumps(ref.pop("record")))
    np.savez(out, record=record, **ref)


if __name__ == "__main__":
    main(*sys.argv[1:])
