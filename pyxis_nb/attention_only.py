"""A trainable attention-only transformer, with its backward pass by hand.

The model of Elhage et al. (2021), "A Mathematical Framework for Transformer
Circuits": token and position embeddings, ``L`` layers of multi-head causal
attention added to the residual stream, and an unembedding. No norm, no MLP,
no bias. Olsson et al. (2022), "In-context Learning and Induction Heads",
train such models and watch induction heads form; the book repeats that.

Shape legend (the book's notation):
    B        batch
    T        positions (queries and keys are the same tokens)
    V        vocabulary size
    d_model  width of the residual stream
    H        heads per layer; d_head = d_model // H
    L        layers

Weights use PyTorch's ``Linear`` layout, (out_features, in_features), so a
projection is ``x @ W.T``. ``state_dict()`` returns the model's own arrays
(as torch does), so an optimiser updates them in place.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ._checks import (as_float_array, check_bool, check_choice, check_int,
                      check_keys, check_needs, check_positive_int,
                      check_shape, check_token_ids)
from .circuits import (duplicate_token_score, induction_score,
                       previous_token_score)
from .masks import causal_mask_mod
from .multihead import merge_heads_core, split_heads_core
from .stable_softmax import softmax_core

__all__ = [
    "AttentionOnlyTransformer",
    "Adam",
    "softmax_backward",
    "attention_layer_forward",
    "attention_layer_backward",
    "cross_entropy",
    "repeated_tokens",
    "half_masks",
    "gradient_check",
    "train",
    "half_losses",
    "attention_probs",
    "head_scores",
    "copying_score",
    "path_patch",
    "value_from_embedding",
    "plot_half_losses",
    "plot_score_history",
    "TRAINED_HEADS_RUNS",
    "train_run",
    "load_trained_heads",
    "load_training_history",
]

IGNORE_INDEX = -100
DATA = Path(__file__).parent / "data" / "trained_heads.npz"

# The chapter's runs: (model keywords, training keywords). ``make
# trained-heads`` trains them and stores weights and loss histories in DATA.
_MAIN = dict(vocab_size=64, hidden_size=32, num_hidden_layers=2,
             num_attention_heads=4,
             max_position_embeddings=16, seed=0)
_TRAIN = dict(steps=1500, batch_size=16, half=(4, 8), lr=3e-3, seed=0)
_WIDE = dict(_MAIN, hidden_size=128, num_attention_heads=2)  # d_head 64
TRAINED_HEADS_RUNS = {  # the main run also records head scores
    "main": (_MAIN, dict(_TRAIN, score_every=10)),
    "wide, scale 1/sqrt(d_head)": (_WIDE, _TRAIN),
    "wide, scale 1 (unscaled)": (dict(_WIDE, scale=1.0), _TRAIN),
}
PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj")
SCORES = ("previous", "duplicate", "induction")
# The fixed batch that the head scores are measured on, during training
# and in the chapter: 256 sequences, every block length of the task.
SCORE_BATCH = dict(batch_size=256, seed=1)


def softmax_backward(weights, grad_weights) -> np.ndarray:
    """Gradient of the scores from the gradient of the softmax weights.

    Parameters
    ----------
    weights, grad_weights : ndarray, shape (..., S): ``p`` and ``dloss / dp``
    """
    p, g = np.asarray(weights), np.asarray(grad_weights)
    # row by row J @ g, J = diag(p) - p p^T the softmax's (symmetric)
    # Jacobian, without building J; a masked key (p = 0) gets gradient 0
    return p * (g - np.sum(g * p, axis=-1, keepdims=True))


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    """The log of the softmax over the last axis: the loss's, over logits."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def cross_entropy(logits, labels) -> tuple[np.ndarray, np.ndarray]:
    """Per-position cross-entropy and its gradient, ignoring label -100.

    Parameters
    ----------
    logits : ndarray, shape (B, T, V)
    labels : ndarray of int, shape (B, T); -100: no target here

    Returns
    -------
    token_loss : ndarray, shape (B, T)
        ``-log p(label)``; 0 where the label is -100.
    grad_logits : ndarray, shape (B, T, V)
        ``d token_loss.sum() / d logits`` (``softmax - one_hot``, 0 where
        ignored); divide by the number of targets for the mean.

    See Also
    --------
    torch.nn.functional.cross_entropy : with ``ignore_index=-100``.
    """
    valid = labels != IGNORE_INDEX  # (B, T)
    safe = np.where(valid, labels, 0)  # (B, T), any index where ignored
    logp = _log_softmax(logits)  # (B, T, V)
    picked = np.take_along_axis(logp, safe[..., None], axis=-1)[..., 0]
    grad = np.exp(logp)  # (B, T, V) softmax
    np.put_along_axis(grad, safe[..., None],
                      np.take_along_axis(grad, safe[..., None], -1) - 1, -1)
    return np.where(valid, -picked, 0.0), grad * valid[..., None]


def attention_probs(q, k, scale, is_causal=True):
    """``softmax(scale * q k^T)``, causal or not: the layer's weights.

    Unchecked; shared by :func:`attention_layer_forward` and the patched
    forward of :func:`path_patch`.

    Parameters
    ----------
    q, k : ndarray, shape (B, H, T, d_head)
    scale : float, multiplies ``q . k``
    is_causal : bool, default True
    """
    # (B, H, T, d_head) @ (B, H, d_head, T) -> (B, H, T, T)
    scores = scale * (q @ k.swapaxes(-1, -2))
    if is_causal:
        T = q.shape[2]
        keep = causal_mask_mod(0, 0, np.arange(T)[:, None], np.arange(T))
        scores = np.where(keep, scores, -np.inf)  # (T, T): True = kept
    return softmax_core(scores)


def attention_layer_forward(x, w, num_attention_heads, scale, is_causal):
    """One layer's attention output (B, T, d_model) and its cache.

    The trained-heads chapter's teaching form of a layer (unchecked), with
    what its backward pass needs; the models run the package's kernels.

    Parameters
    ----------
    x : ndarray, shape (B, T, d_model), the residual stream
    w : dict of str to ndarray: ``q_proj`` .. ``o_proj``, (d_model, d_model)
    num_attention_heads : int, ``H``, dividing ``d_model``
    scale : float, multiplies ``q . k``
    is_causal : bool

    Returns
    -------
    out, cache : ndarray (B, T, d_model), and ``(x, q, k, v, p, z)`` for
        :func:`attention_layer_backward` (``p``: the weights, (B, H, T, T))
    """
    d_head = x.shape[-1] // num_attention_heads  # d_model = H * d_head
    q, k, v = (split_heads_core(x @ w[n].T, d_head) for n in PROJECTIONS[:3])
    p = attention_probs(q, k, scale, is_causal)  # (B, H, T, T)
    # (B, H, T, T) @ (B, H, T, d_head) -> (B, H, T, d_head) -> (B, T, d_model)
    z = merge_heads_core(p @ v)
    return z @ w["o_proj"].T, (x, q, k, v, p, z)


def _linear_grad(dy: np.ndarray, x: np.ndarray) -> np.ndarray:
    """dloss/dW (out, in) of ``y = x @ W.T``, summed over batch and T."""
    # (out, B*T) @ (B*T, in) -> (out, in)
    return dy.reshape(-1, dy.shape[-1]).T @ x.reshape(-1, x.shape[-1])


def attention_layer_backward(dout, cache, w, scale):
    """Backward of ``attention_layer_forward``: (dloss/dx, {name: dW}).

    Parameters
    ----------
    dout : ndarray, shape (B, T, d_model), dloss/d(layer output)
    cache : tuple, what :func:`attention_layer_forward` returned
    w : dict of str to ndarray, the layer's four projections
    scale : float, the forward's

    Returns
    -------
    dx : ndarray, shape (B, T, d_model)
        dloss/dx through the layer only (the residual adds ``dout``).
    grads : dict of str to ndarray, dloss/dW of each projection
    """
    x, q, k, v, p, z = cache
    grads = {"o_proj": _linear_grad(dout, z)}
    # (B, T, d_model) -> (B, H, T, d_head)
    dz = split_heads_core(dout @ w["o_proj"], q.shape[-1])
    dp = dz @ v.swapaxes(-1, -2)  # (.., T, d_head) @ (.., d_head, T)
    dv = p.swapaxes(-1, -2) @ dz  # (B, H, T, T) @ (B, H, T, d_head)
    ds = scale * softmax_backward(p, dp)  # masked keys: p = 0, so ds = 0
    dq = ds @ k  # (B, H, T, T) @ (B, H, T, d_head) -> (B, H, T, d_head)
    dk = ds.swapaxes(-1, -2) @ q  # dscores[t, s] = q_t . k_s, so sum over t
    dx = np.zeros_like(x)
    for name, d in zip(PROJECTIONS[:3], (dq, dk, dv)):
        d = merge_heads_core(d)  # (B, T, d_model)
        grads[name] = _linear_grad(d, x)
        dx += d @ w[name]  # (B, T, d_model) @ (d_model, d_model)
    return dx, grads


def _check_ids(name: str, ids, V: int, shape=None, allow_ignore=False):
    ids = check_token_ids(name, ids, V, ndim=2, want="(B, T)",
                          ignore_index=IGNORE_INDEX if allow_ignore else None)
    return check_shape(name, ids, shape is None or ids.shape == shape,
                       f"{shape} (the shape of input_ids)")


def _check_divisible(name: str, value: int, by_name: str, by: int) -> int:
    """``value`` if ``by`` divides it (hidden_size by num_attention_heads)."""
    if value % by:
        raise ValueError(f"{name} = {value} must be divisible by "
                         f"{by_name} = {by}, got remainder {value % by}")
    return value


class AttentionOnlyTransformer:
    """Embeddings, ``L`` layers of causal multi-head attention, unembedding.

    ``x = embed_tokens[ids] + embed_positions[:T]``; per layer
    ``x = x + o_proj(attention(q_proj(x), k_proj(x), v_proj(x)))``;
    ``logits = x @ lm_head.T``. Nothing else: no norm, MLP or bias.

    Parameters
    ----------
    vocab_size, hidden_size, num_hidden_layers, num_attention_heads : int
        ``V``, ``d_model``, ``L``, ``H`` (must divide ``d_model``).
    max_position_embeddings : int
        The most ``T``.
    scale : float, optional
        Multiplies ``q . k``; default ``1 / sqrt(d_head)``, 1.0 = unscaled.
    seed : int
        Embeddings ~ N(0, 1) (torch's ``nn.Embedding``), projections and
        ``lm_head`` ~ N(0, 1 / in_features).
    dtype : float32 or float64

    See Also
    --------
    transformers.GPT2LMHeadModel : the same shape, plus norms and MLPs.
    """

    def __init__(self, vocab_size, hidden_size, num_hidden_layers,
                 num_attention_heads, max_position_embeddings, *, scale=None,
                 seed=0, dtype=np.float64):
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        self.hidden_size = check_positive_int("hidden_size", hidden_size)
        self.num_hidden_layers = check_positive_int("num_hidden_layers",
                                                    num_hidden_layers)
        self.num_attention_heads = check_positive_int("num_attention_heads",
                                                      num_attention_heads)
        self.max_position_embeddings = check_positive_int(
            "max_position_embeddings", max_position_embeddings)
        _check_divisible("hidden_size", hidden_size, "num_attention_heads",
                         num_attention_heads)
        self.head_dim = hidden_size // num_attention_heads
        self.scale = self._check_scale(scale, self.head_dim)
        self.dtype = np.dtype(dtype)
        check_choice("dtype", self.dtype, (np.dtype(np.float32),
                                           np.dtype(np.float64)))
        self._params = self._init_params(check_int("seed", seed, low=0))

    @staticmethod
    def _check_scale(scale, d_head: int) -> float:
        """None (``1 / sqrt(d_head)``) or a finite number > 0, as torch's."""
        if scale is None:
            return float(1.0 / np.sqrt(d_head))
        real = (isinstance(scale, (int, float, np.integer, np.floating))
                and not isinstance(scale, bool))
        if not real or not np.isfinite(scale) or scale <= 0:
            raise ValueError(
                f"scale must be a finite number > 0 or None, got {scale!r}")
        return float(scale)

    def _shapes(self) -> dict[str, tuple[int, int]]:
        V, d = self.vocab_size, self.hidden_size
        shapes = {"embed_tokens.weight": (V, d),
                  "embed_positions.weight": (self.max_position_embeddings, d)}
        for i in range(self.num_hidden_layers):
            for name in PROJECTIONS:
                shapes[f"layers.{i}.self_attn.{name}.weight"] = (d, d)
        shapes["lm_head.weight"] = (V, d)
        return shapes

    def _init_params(self, seed: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        params = {}
        for key, shape in self._shapes().items():
            std = 1.0 if key.startswith("embed") else shape[1] ** -0.5
            w = std * rng.standard_normal(shape)
            params[key] = w.astype(self.dtype)
        return params

    def state_dict(self) -> dict[str, np.ndarray]:
        """The weights by name; the arrays are the model's own (not copies).

        ``layers.{i}.self_attn.{q,k,v,o}_proj.weight``, embeddings, lm_head."""
        return dict(self._params)

    def load_state_dict(self, state_dict) -> None:
        """Copy weights in, in place; keys and shapes must match exactly.

        Parameters
        ----------
        state_dict : mapping of str to ndarray, as :meth:`state_dict`'s

        See Also
        --------
        torch.nn.Module.load_state_dict : with ``strict=True``.
        """
        shapes = self._shapes()
        check_keys("state_dict", state_dict, shapes, shapes)
        for key, shape in shapes.items():
            value = as_float_array(f"state_dict[{key!r}]", state_dict[key])
            check_shape(f"state_dict[{key!r}]", value, value.shape == shape,
                        str(shape))
            self._params[key][...] = value

    def _layer(self, i: int) -> dict[str, np.ndarray]:
        return {n: self._params[f"layers.{i}.self_attn.{n}.weight"]
                for n in PROJECTIONS}

    def _check_input(self, input_ids) -> np.ndarray:
        ids = _check_ids("input_ids", input_ids, self.vocab_size)
        return check_shape("input_ids", ids,
                           ids.shape[1] <= self.max_position_embeddings,
                           f"(B, T) with T <= max_position_embeddings = "
                           f"{self.max_position_embeddings}")

    def _forward(self, ids, is_causal=True):
        """Logits and every layer's cache; ``ids`` already checked."""
        T = ids.shape[1]
        x = self._params["embed_tokens.weight"][ids] \
            + self._params["embed_positions.weight"][:T]  # (B, T, d_model)
        caches = []
        for i in range(self.num_hidden_layers):
            out, cache = attention_layer_forward(
                x, self._layer(i), self.num_attention_heads, self.scale,
                is_causal)
            x = x + out  # the residual stream
            caches.append(cache)
        # (B, T, d_model) @ (d_model, V) -> (B, T, V)
        return x @ self._params["lm_head.weight"].T, x, caches

    def forward(self, input_ids, *, is_causal=True, output_attentions=False):
        """Logits (B, T, V) for ``input_ids`` (B, T).

        Parameters
        ----------
        input_ids : array_like of int, (B, T), T <= max_position_embeddings
        is_causal : bool, default True
            False: every position attends to every other (trained with True).
        output_attentions : bool, default False
            Also return each layer's weights, a list of (B, H, T, T).
        """
        ids = self._check_input(input_ids)
        is_causal = check_bool("is_causal", is_causal)
        logits, _, caches = self._forward(ids, is_causal)
        if check_bool("output_attentions", output_attentions):
            return logits, [cache[4] for cache in caches]
        return logits

    __call__ = forward

    def loss_and_grads(self, input_ids, labels):
        """Mean cross-entropy over labels != -100, and its gradients.

        No internal shift: ``logits[b, t]`` is scored against ``labels[b, t]``.

        Parameters
        ----------
        input_ids : array_like of int, shape (B, T)
        labels : array_like of int, (B, T); -100: no target (one at least)

        Returns
        -------
        loss, grads : float, and a dict of :meth:`state_dict`'s keys and shapes
        """
        ids = self._check_input(input_ids)
        labels = _check_ids("labels", labels, self.vocab_size, ids.shape,
                            allow_ignore=True)
        check_needs(bool((labels != IGNORE_INDEX).any()), "labels",
                    "a position that is not -100", "no position to score")
        token_loss, grads = self._loss_and_grads(ids, labels)
        return float(token_loss.sum() / (labels != IGNORE_INDEX).sum()), grads

    def _loss_and_grads(self, ids, labels):
        """Per-position losses (B, T) and gradients of their mean."""
        logits, x, caches = self._forward(ids)
        token_loss, dlogits = cross_entropy(logits, labels)
        dlogits = dlogits / int((labels != IGNORE_INDEX).sum())
        grads = {"lm_head.weight": _linear_grad(dlogits, x)}
        dx = dlogits @ self._params["lm_head.weight"]  # (B, T, d_model)
        for i in reversed(range(self.num_hidden_layers)):
            # the residual passes dx through unchanged, plus the layer's part
            dlayer, g = attention_layer_backward(dx, caches[i], self._layer(i),
                                            self.scale)
            dx = dx + dlayer
            for name, value in g.items():
                grads[f"layers.{i}.self_attn.{name}.weight"] = value
        grads["embed_positions.weight"] = np.zeros_like(
            self._params["embed_positions.weight"])
        grads["embed_positions.weight"][:ids.shape[1]] = dx.sum(axis=0)
        grads["embed_tokens.weight"] = np.zeros_like(
            self._params["embed_tokens.weight"])
        np.add.at(grads["embed_tokens.weight"], ids, dx)  # repeated ids add up
        return token_loss, {k: grads[k] for k in self._params}


class Adam:
    """Adam (Kingma and Ba, 2015) over a state dict, updated in place.

    Parameters
    ----------
    params : dict of str to ndarray, ``model.state_dict()``
    lr : float, default 1e-2
    betas : (float, float), default (0.9, 0.999)
        Decay rates of the first and second moment estimates.
    eps : float, default 1e-8, added to the root of the second moment

    See Also
    --------
    torch.optim.Adam : the same update (no weight decay).
    """

    def __init__(self, params, lr=1e-2, betas=(0.9, 0.999), eps=1e-8):
        self.params, self.lr, self.betas, self.eps = params, lr, betas, eps
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}
        self.t = 0

    def step(self, grads) -> None:
        """One update of every parameter from ``grads`` (same keys).

        Parameters
        ----------
        grads : dict of str to ndarray, each parameter's gradient
        """
        self.t += 1
        b1, b2 = self.betas
        for k, p in self.params.items():
            self.m[k] = b1 * self.m[k] + (1 - b1) * grads[k]
            self.v[k] = b2 * self.v[k] + (1 - b2) * grads[k] ** 2
            m_hat = self.m[k] / (1 - b1 ** self.t)  # undo the zero start
            v_hat = self.v[k] / (1 - b2 ** self.t)
            p -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)


def repeated_tokens(batch_size, half, vocab_size, rng):
    """Random blocks repeated twice, ``[a b c .. | a b c ..]``, with labels.

    Parameters
    ----------
    batch_size : int, ``B``
    half : int or (int, int)
        The block length, or ``(low, high)`` to draw each row's from
        ``low .. high`` (position alone then cannot find the earlier copy);
        shorter rows are filled up to ``T = 2 * high``, labelled -100.
    vocab_size : int, ``V``
    rng : numpy.random.Generator

    Returns
    -------
    input_ids, labels, halves : ndarray of int, (B, T), (B, T) and (B,)
        ``labels[:, t] = input_ids[:, t + 1]`` inside the two copies, -100
        after them; ``halves``: each row's block length.
    """
    B = check_positive_int("batch_size", batch_size)
    low, high = (half, half) if np.isscalar(half) else half
    halves = rng.integers(low, high + 1, size=B)  # (B,)
    ids = rng.integers(0, vocab_size, size=(B, 2 * high))  # (B, T)
    t = np.arange(2 * high)  # (T,)
    # the second copy: position halves + j repeats position j
    second = (t >= halves[:, None]) & (t < 2 * halves[:, None])  # (B, T)
    rows, cols = np.nonzero(second)
    ids[rows, cols] = ids[rows, cols - halves[rows]]
    labels = np.full_like(ids, IGNORE_INDEX)
    inside = t[:-1] < 2 * halves[:, None] - 1  # (B, T - 1)
    labels[:, :-1] = np.where(inside, ids[:, 1:], IGNORE_INDEX)
    return ids, labels, halves


def half_masks(halves, T: int) -> tuple[np.ndarray, np.ndarray]:
    """Masks of the unpredictable and the copyable positions, each (B, T).

    Parameters
    ----------
    halves : array_like of int, shape (B,), from :func:`repeated_tokens`
    T : int
    """
    t = np.arange(T)
    h = np.asarray(halves)[:, None]  # (B, 1)
    return t < h, (t >= h) & (t < 2 * h - 1)


def gradient_check(model, input_ids, labels, *, per_key=2, eps=1e-6,
                   seed=0) -> dict[str, float]:
    """Largest relative error of ``loss_and_grads`` against finite differences.

    Central differences at ``per_key`` random entries of each weight.

    Parameters
    ----------
    model : AttentionOnlyTransformer; its weights are changed and restored
    input_ids, labels : array_like of int, shape (B, T)
    per_key : int, default 2
    eps : float, default 1e-6, the step
    seed : int, default 0, chooses the entries

    Returns
    -------
    dict of str to float: per weight name, the worst relative error
    """
    _, grads = model.loss_and_grads(input_ids, labels)
    rng = np.random.default_rng(seed)
    errors = {}
    for key, w in model.state_dict().items():
        worst = 0.0
        for _ in range(per_key):
            idx = tuple(rng.integers(0, n) for n in w.shape)
            old = w[idx]
            w[idx] = old + eps
            up, _ = model.loss_and_grads(input_ids, labels)
            w[idx] = old - eps
            down, _ = model.loss_and_grads(input_ids, labels)
            w[idx] = old
            numeric, exact = (up - down) / (2 * eps), grads[key][idx]
            denom = max(abs(numeric) + abs(exact), 1e-12)
            worst = max(worst, abs(numeric - exact) / denom)
        errors[key] = worst
    return errors


def half_losses(token_loss, halves) -> tuple[float, float]:
    """Mean loss over the unpredictable and the copyable half (``half_masks``).

    Parameters
    ----------
    token_loss : ndarray, shape (B, T), per position (:func:`cross_entropy`)
    halves : array_like of int, shape (B,), each row's block length
    """
    first, second = half_masks(halves, token_loss.shape[1])
    return (float(token_loss[first].mean()),
            float(token_loss[second].mean()))


def train(model, *, steps, batch_size=32, half=(6, 10), lr=1e-2, seed=0,
          frozen=(), score_every=None):
    """Train on fresh repeated-token batches with Adam.

    Parameters
    ----------
    model : AttentionOnlyTransformer, trained in place
    steps : int, >= 1
    batch_size : int, default 32
    half : int or (int, int), default (6, 10), as :func:`repeated_tokens`'s
    lr : float, default 1e-2
    seed : int, default 0, seeds the batches
    frozen : iterable of str, default (); weights kept (gradient set to 0)
    score_every : int, optional
        Every so many steps (and after the last), also record
        ``head_scores`` on ``SCORE_BATCH`` (its own seed: the training
        batches do not change).

    Returns
    -------
    dict with "first_half" and "second_half": ndarray, shape (steps,)
        The loss of each half on each step's batch (before its update).
        With ``score_every``, also "score_steps" (N,) and one (N, L, H)
        array per name of ``SCORES``, the scores before that step's update.
    """
    steps = check_positive_int("steps", steps)
    rng = np.random.default_rng(seed)
    opt = Adam(model.state_dict(), lr=lr)
    history = np.zeros((steps, 2))
    recorded = {}
    if score_every is not None:
        every = check_positive_int("score_every", score_every)
        probe = repeated_tokens(SCORE_BATCH["batch_size"], half,
                                model.vocab_size,
                                np.random.default_rng(SCORE_BATCH["seed"]))
        recorded = {"score_steps": [*range(0, steps, every), steps]}
    for step in range(steps + 1):
        if step in recorded.get("score_steps", ()):
            for name, s in head_scores(model, probe[0], probe[2]).items():
                recorded.setdefault(name, []).append(s)
        if step == steps:
            break
        ids, labels, halves = repeated_tokens(batch_size, half,
                                              model.vocab_size, rng)
        token_loss, grads = model._loss_and_grads(ids, labels)
        history[step] = half_losses(token_loss, halves)
        for key in frozen:
            grads[key] = np.zeros_like(grads[key])
        opt.step(grads)
    return {"first_half": history[:, 0], "second_half": history[:, 1],
            **{k: np.array(v) for k, v in recorded.items()}}


def head_scores(model, input_ids, halves) -> dict[str, np.ndarray]:
    """The ``SCORES`` of every head on repeated-token ``input_ids``.

    Parameters
    ----------
    model : AttentionOnlyTransformer
    input_ids : array_like of int, shape (B, T), from :func:`repeated_tokens`
    halves : array_like of int, shape (B,), each row's block length

    Returns
    -------
    dict of str to ndarray, shape (L, H)
        "previous", "duplicate" and "induction" (:mod:`pyxis_nb.circuits`).
    """
    _, weights = model.forward(input_ids, output_attentions=True)
    funcs = {"previous": lambda w: previous_token_score(w),
             "duplicate": lambda w: duplicate_token_score(w, halves),
             "induction": lambda w: induction_score(w, halves)}
    return {name: np.stack([f(w) for w in weights])
            for name, f in funcs.items()}


def copying_score(model, layer: int) -> np.ndarray:
    """Per head of ``layer``: the fraction of tokens its OV circuit copies.

    Elhage et al.'s copying, measured by argmax: token t's embedding goes
    through the head's values and output alone,
    ``lm_head @ W_O[:, h] @ W_V[h] @ embed_tokens[t]``, straight to the
    logits; a token counts if its own logit comes out highest (a random
    head: about ``1 / V``).

    Parameters
    ----------
    model : AttentionOnlyTransformer
    layer : int, ``0 .. L-1``
    """
    layer = check_int("layer", layer, low=0,
                      high=model.num_hidden_layers - 1)
    w, d_head = model._layer(layer), model.head_dim
    E = model._params["embed_tokens.weight"]  # (V, d_model)
    W_U = model._params["lm_head.weight"]  # (V, d_model)
    scores = []
    for h in range(model.num_attention_heads):
        cols = slice(h * d_head, (h + 1) * d_head)
        # (V, d_model) @ (d_model, d_head) @ (d_head, d_model) -> (V, d_model)
        out = E @ w["v_proj"][cols].T @ w["o_proj"][:, cols].T
        logits = out @ W_U.T  # (V, d_model) @ (d_model, V) -> (V, V)
        scores.append(np.mean(logits.argmax(-1) == np.arange(len(E))))
    return np.array(scores)


def _heads(xq, xk, xv, w, d_head, scale):
    """Causal attention weights (B, H, T, T) and head outputs (B, H, T,
    d_head) with queries, keys and values read from separate streams."""
    q, k, v = (split_heads_core(x @ w[n].T, d_head)
               for x, n in zip((xq, xk, xv), PROJECTIONS))
    p = attention_probs(q, k, scale)  # (B, H, T, T), causal
    return p, p @ v  # (B, H, T, T) @ (B, H, T, d_head)


def _patched_forward(model, ids, layer, head, into=(), values=None):
    """Logits with head (layer, head)'s output subtracted from the
    ``into`` inputs of every later layer, its values optionally read from
    one embedding only (``values``: "tokens" or "positions")."""
    T, d_head = ids.shape[1], model.head_dim
    parts = {"tokens": model._params["embed_tokens.weight"][ids],
             "positions": model._params["embed_positions.weight"][:T]}
    x = parts["tokens"] + parts["positions"]  # (B, T, d_model)
    removed = 0.0  # the head's output, once it is written
    for i in range(model.num_hidden_layers):
        w = model._layer(i)
        p, z = _heads(*(x - removed if n in into else x
                        for n in ("query", "key", "value")),
                      w, d_head, model.scale)
        cols = slice(head * d_head, (head + 1) * d_head)
        if i == layer and values is not None:
            v = parts[values] @ w["v_proj"][cols].T  # (B, T, d_head)
            z[:, head] = p[:, head] @ v  # (B, T, T) @ (B, T, d_head)
        if i == layer:
            # (B, T, d_head) @ (d_head, d_model) -> (B, T, d_model)
            removed = z[:, head] @ w["o_proj"][:, cols].T
        x = x + merge_heads_core(z) @ w["o_proj"].T
    return x @ model._params["lm_head.weight"].T  # (B, T, V)


def path_patch(model, input_ids, *, layer, head, into):
    """Logits with one head's output removed from some inputs of later layers.

    Every later layer reads the inputs ``into`` from the residual stream
    minus the output of head ``head`` of ``layer``; its other inputs, and
    ``lm_head``, read the whole stream. Path patching with a zero patch
    (Wang et al., 2022).

    Parameters
    ----------
    model : AttentionOnlyTransformer
    input_ids : array_like of int, shape (B, T)
    layer, head : int, ``0 .. L-1`` and ``0 .. H-1``
    into : str or iterable of str, of ("query", "key", "value")
    """
    ids = model._check_input(input_ids)
    layer = check_int("layer", layer, low=0,
                      high=model.num_hidden_layers - 1)
    head = check_int("head", head, low=0,
                     high=model.num_attention_heads - 1)
    into = (into,) if isinstance(into, str) else tuple(into)
    for name in into:
        check_choice("into", name, ("query", "key", "value"))
    return _patched_forward(model, ids, layer, head, into)


def value_from_embedding(model, input_ids, *, head, part):
    """Logits when a layer-0 head reads its values from one embedding only.

    The head's weights do not change; only its values come from
    ``embed_tokens[ids]`` or ``embed_positions[:T]`` alone.

    Parameters
    ----------
    model : AttentionOnlyTransformer
    input_ids : array_like of int, shape (B, T)
    head : int, a head of layer 0
    part : {"tokens", "positions"}
    """
    ids = model._check_input(input_ids)
    head = check_int("head", head, low=0,
                     high=model.num_attention_heads - 1)
    part = check_choice("part", part, ("tokens", "positions"))
    return _patched_forward(model, ids, 0, head, values=part)


def plot_half_losses(histories: dict, vocab_size: int, ax=None):
    """Loss of each half, per step, for one or more runs; ln V dashed.

    Parameters
    ----------
    histories : dict of str to dict, run label -> what :func:`train` returned
    vocab_size : int, ``V``
    ax : matplotlib Axes, optional; default a new figure

    Returns
    -------
    matplotlib Axes
    """
    import matplotlib.pyplot as plt  # lazily: the package never needs it

    if ax is None:
        ax = plt.subplots(figsize=(6.5, 5), layout="constrained")[1]
    for label, hist in histories.items():
        for part, style in (("first_half", "--"), ("second_half", "-")):
            name = part.replace("_", " ")
            ax.plot(hist[part], style, label=f"{label}: {name}")
    ax.axhline(np.log(vocab_size), color="grey", lw=0.8, ls=":",
               label=f"ln V = {np.log(vocab_size):.2f}")
    ax.set(xlabel="training step", ylabel="cross-entropy (nats)",
           ylim=(0, None))
    # below the axes: clear of the curves at any text size
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22))
    return ax


def plot_score_history(history: dict, score: str, heads=None, ax=None):
    """One head score per recorded step (``train(..., score_every=...)``).

    Parameters
    ----------
    history : dict, what :func:`train` returned with ``score_every``
    score : {"previous", "duplicate", "induction"}
    heads : iterable of (int, int), optional
        (layer, head) pairs; default every head (layer 0 dashed).
    ax : matplotlib Axes, optional; default a new figure

    Returns
    -------
    matplotlib Axes
    """
    import matplotlib.pyplot as plt  # lazily: the package never needs it

    check_choice("score", score, SCORES)
    if ax is None:
        ax = plt.subplots(figsize=(6.5, 3.5), layout="constrained")[1]
    values = history[score]  # (N, L, H)
    if heads is None:
        heads = np.ndindex(*values.shape[1:])
    for layer, head in heads:
        ax.plot(history["score_steps"], values[:, layer, head],
                "--" if layer == 0 else "-", label=f"L{layer}H{head}")
    ax.set(xlabel="training step", ylabel=f"{score} score", ylim=(0, 1))
    # below the axes, four to a row: clear of the curves at any text size
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=4)
    return ax


def train_run(name: str, *, steps=None):
    """Build and train one of ``TRAINED_HEADS_RUNS`` from its seed.

    Parameters
    ----------
    name : str, a key of ``TRAINED_HEADS_RUNS``
    steps : int, optional
        Shortens the run (a test retrains the first steps); default its own.

    Returns
    -------
    model, history : AttentionOnlyTransformer, and what :func:`train` returned
    """
    model_kw, train_kw = TRAINED_HEADS_RUNS[name]
    model = AttentionOnlyTransformer(**model_kw)
    history = train(model, **dict(train_kw, steps=steps or train_kw["steps"]))
    return model, history


def _stored_run(name: str, path) -> dict:
    """Every array stored for run ``name``, under its name in the run."""
    check_choice("name", name, tuple(TRAINED_HEADS_RUNS))
    prefix = f"{name}/"
    with np.load(path) as data:
        stored = {k[len(prefix):]: data[k] for k in data.files
                  if k.startswith(prefix)}
    if not stored:
        raise ValueError(f"name {name!r}: {path} holds nothing of that run; "
                         "`make trained-heads` writes it")
    return stored


def load_trained_heads(name: str = "main", path=DATA):
    """The stored result of ``train_run(name)``: (model, history).

    Parameters
    ----------
    name : str, default "main"
        A run of ``TRAINED_HEADS_RUNS`` whose weights the file keeps (the wide
        runs keep their histories only: :func:`load_training_history`).
    path : path-like, default the package's ``data/trained_heads.npz``
    """
    stored = _stored_run(name, path)
    weights = {k: v for k, v in stored.items() if ".weight" in k}
    if not weights:
        raise ValueError(f"name {name!r}: {path} keeps the history of that "
                         "run but not its weights; load_training_history("
                         f"{name!r}) reads the history")
    model = AttentionOnlyTransformer(**TRAINED_HEADS_RUNS[name][0])
    model.load_state_dict(weights)
    return model, {k: v for k, v in stored.items() if ".weight" not in k}


def load_training_history(name: str, path=DATA) -> dict:
    """The losses (and head scores) recorded while ``train_run(name)`` ran.

    Parameters
    ----------
    name : str, a key of ``TRAINED_HEADS_RUNS``
    path : path-like, default the package's ``data/trained_heads.npz``"""
    return {k: v for k, v in _stored_run(name, path).items()
            if ".weight" not in k}
