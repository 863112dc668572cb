"""Students for `attntrace grade`: attention functions as homework writes them, each a
whole file's source, written into a test's tmp_path (a syntax error or an endless loop
can be a student; as a module here it could not).

Each is ``attention(X, WQ, WK, WV, causal=False)`` written from scratch, the way a
student does, with ONE bug where it has one, never as "attntrace's answer, perturbed".
``CAUSES`` says which catalogue id grade must name for the buggy ones.
"""

from __future__ import annotations

from pathlib import Path

_HEAD = "import numpy as np\n\n\n"

CORRECT_NUMPY = (
    _HEAD
    + """def attention(X, WQ, WK, WV, causal=False):
    Q, K, V = X @ WQ, X @ WK, X @ WV
    scores = Q @ K.T / np.sqrt(K.shape[-1])
    if causal:
        future = np.triu(np.ones(scores.shape, dtype=bool), k=1)
        scores = np.where(future, -np.inf, scores)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=-1, keepdims=True)
    return weights @ V
"""
)

CORRECT_TORCH = """import torch
import torch.nn.functional as F


def attention(X, WQ, WK, WV, causal=False):
    x = torch.from_numpy(X)
    q, k, v = x @ torch.from_numpy(WQ), x @ torch.from_numpy(WK), x @ torch.from_numpy(WV)
    out = F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=causal)
    return out[0]
"""

CORRECT_LISTS = """import math


def attention(X, WQ, WK, WV, causal=False):
    def mm(a, b):
        return [[sum(a[i][k] * b[k][j] for k in range(len(b))) for j in range(len(b[0]))]
                for i in range(len(a))]
    X, WQ, WK, WV = X.tolist(), WQ.tolist(), WK.tolist(), WV.tolist()
    Q, K, V = mm(X, WQ), mm(X, WK), mm(X, WV)
    d_k = len(WQ[0])
    out = []
    for i, q in enumerate(Q):
        s = [sum(a * b for a, b in zip(q, k)) / math.sqrt(d_k) for k in K]
        if causal:
            s = s[: i + 1]
        top = max(s)
        e = [math.exp(x - top) for x in s]
        w = [x / sum(e) for x in e]
        out.append([sum(w[j] * V[j][c] for j in range(len(w))) for c in range(len(V[0]))])
    return out
"""


def _with(old: str, new: str) -> str:
    assert old in CORRECT_NUMPY, old
    return CORRECT_NUMPY.replace(old, new)


NO_SCALING = _with(" / np.sqrt(K.shape[-1])", "")
# ng-video-lecture #42's slip: the softmax (max and sum alike) along axis 0, the columns
SOFTMAX_WRONG_AXIS = CORRECT_NUMPY.replace(".max(axis=-1", ".max(axis=0").replace(
    ".sum(axis=-1", ".sum(axis=0"
)
WEIGHTS_TRANSPOSED = _with("return weights @ V", "return weights.T @ V")
MASK_WRONG_TRIANGLE = _with(
    "np.triu(np.ones(scores.shape, dtype=bool), k=1)",
    "np.tril(np.ones(scores.shape, dtype=bool), k=-1)",
)
MASK_FILL_TOO_SMALL = _with("-np.inf, scores", "-1e4, scores")
UNSTABLE = _with("    scores = scores - scores.max(axis=-1, keepdims=True)\n", "")
# forgot K's transpose: Q @ K fails when d_k differs from n, as it does in the first case
RAISES = _with("Q @ K.T", "Q @ K")
ENDLESS = (
    _HEAD
    + """def attention(X, WQ, WK, WV, causal=False):
    while True:
        pass
"""
)
# a loop that ends once there are two rows: never, for one token
HANGS_ON_ONE_TOKEN = _with("    Q, K, V", "    while X.shape[0] < 2:\n        pass\n    Q, K, V")
WRONG_SHAPE = _with("return weights @ V", "return (weights @ V).T")
RETURNS_NAN = _with("return weights @ V", "return np.full((X.shape[0], WV.shape[1]), np.nan)")
RETURNS_TUPLE = _with("return weights @ V", "return weights @ V, weights")
DIES = _with("    Q, K, V", "    import os\n    os._exit(3)\n    Q, K, V")
# prints ANSI escapes and a line that looks like JSON, and is right
PRINTS = _with(
    "    return weights @ V", '    print("\\x1b[2J{\\"schema\\": 1}")\n    return weights @ V'
)
STAGES_NO_SCALING = _with(
    "    return weights @ V",
    '    return {"Q": Q, "K": K, "V": V, "softmax": weights, "output": weights @ V}',
).replace(" / np.sqrt(K.shape[-1])", "")

SYNTAX_ERROR = _HEAD + "def attention(X, WQ, WK, WV, causal=False)\n    return X\n"
IMPORT_RAISES = _HEAD + "import no_such_module_anywhere\n"
NOT_CALLABLE = _HEAD + "attention = 3\n"

#: The buggy students grade must name, and the catalogue id it names. Where the id is
#: being added by check's catalogue work (weights-transposed, mask-fill-too-small), the
#: student still fails, named or not: the tests accept the id or None.
CAUSES = {
    "no_scaling": ("no-scaling",),
    "softmax_wrong_axis": ("softmax-over-columns",),
    "mask_wrong_triangle": ("mask-wrong-triangle",),
    "weights_transposed": ("weights-transposed", None),
    "mask_fill_too_small": ("mask-fill-too-small", None),
    "unstable": ("unstable-softmax",),
}

SOURCES = {
    "correct_numpy": CORRECT_NUMPY,
    "correct_torch": CORRECT_TORCH,
    "correct_lists": CORRECT_LISTS,
    "no_scaling": NO_SCALING,
    "softmax_wrong_axis": SOFTMAX_WRONG_AXIS,
    "weights_transposed": WEIGHTS_TRANSPOSED,
    "mask_wrong_triangle": MASK_WRONG_TRIANGLE,
    "mask_fill_too_small": MASK_FILL_TOO_SMALL,
    "unstable": UNSTABLE,
    "raises": RAISES,
    "endless": ENDLESS,
    "hangs_on_one_token": HANGS_ON_ONE_TOKEN,
    "wrong_shape": WRONG_SHAPE,
    "returns_nan": RETURNS_NAN,
    "returns_tuple": RETURNS_TUPLE,
    "dies": DIES,
    "prints": PRINTS,
    "stages_no_scaling": STAGES_NO_SCALING,
    "syntax_error": SYNTAX_ERROR,
    "import_raises": IMPORT_RAISES,
    "not_callable": NOT_CALLABLE,
}


def student_file(folder: Path, name: str) -> Path:
    """The student ``name`` written as ``folder/NAME.py``."""
    path = folder / f"{name}.py"
    path.write_text(SOURCES[name], encoding="utf-8")
    return path
