"""The model file's fields: what each must hold, and model files that must trace.

The bad-input catalogue's room for :mod:`attntrace.modelfile.model_file`,
:mod:`attntrace.modelfile.model_matrices` and :mod:`attntrace.modelfile.npy_files` (the
contract and the tools are in ``tests/catalogue.py``): the top level, missing and
unknown fields, values of the wrong kind, numbers that are not finite, matrices that are
not matrices, token keys, duplicate keys, .npy files. ``ACCEPTED`` holds the files that
must trace (YAML 1.1 words that are tokens in YAML 1.2, aliases, a BOM, suffixes).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from catalogue import (
    EMB,
    GOOD,
    J_EMB,
    J_W,
    WK,
    WQ,
    WV,
    Case,
    Make,
    W,
    assert_no_traceback,
    case,
    check_rejected,
    invoke,
    materialize,
    with_file,
    with_npy,
    with_npy_header,
    with_text,
)
from helpers import load_valid_trace

KNOWN_FIELDS = (
    "name, description, sentence, embeddings, weights, heads, kv_heads, causal, positions, "
    "context, vocabulary, biases, rope_base, rope_pairing, target, window, sinks, "
    "alibi_slopes, qk_norm, qk_norm_eps, q_norm, k_norm, softcap, sink_logit"
)
TOP_LEVEL = "expected a mapping of model fields at the top level (embeddings, weights, ...)"
TOKEN_MAP = "expected a non-empty mapping of token -> vector"
ONCE = "each key may appear once"
HUGE_INT = "1" + "0" * 400  # 10**400, written out: an integer no float64 can hold

REJECTED = [
    # --- --config - reads the model from stdin: JSON if it starts with {, else YAML
    case(
        "config-stdin-yaml-checked",
        None,
        "stdin: missing required field 'weights'",
        args=("cat", "--config", "-"),
        stdin=EMB.encode(),
    ),
    case(
        "config-stdin-json-by-its-brace",
        None,
        "stdin: line 2, column 31: malformed JSON: "
        "Expecting property name enclosed in double quotes (a trailing comma?)",
        args=("cat", "--config", "-"),
        stdin=b' \n{"embeddings": {"cat": [1, 2],}}',
    ),
    # --- the top level is not a mapping
    case("top-level-list", "- 1\n- 2\n", f"model.yaml: {TOP_LEVEL}, got a list of 2 items"),
    case("top-level-string", "hello\n", f"model.yaml: {TOP_LEVEL}, got a string 'hello'"),
    case("top-level-number", "42\n", f"model.yaml: {TOP_LEVEL}, got 42"),
    case("top-level-comment-only", "# nothing\n", f"model.yaml: {TOP_LEVEL}, got nothing (null)"),
    case(
        "json-top-level-list",
        "[1, 2]",
        f"model.json: {TOP_LEVEL}, got a list of 2 items",
        suffix=".json",
    ),
    case(
        "json-top-level-string",
        '"hello"',
        f"model.json: {TOP_LEVEL}, got a string 'hello'",
        suffix=".json",
    ),
    case("json-top-level-number", "42", f"model.json: {TOP_LEVEL}, got 42", suffix=".json"),
    case(
        "json-top-level-null",
        "null",
        f"model.json: {TOP_LEVEL}, got nothing (null)",
        suffix=".json",
    ),
    # --- fields: missing, unknown, wrong kind
    case("missing-embeddings", W, "model.yaml: missing required field 'embeddings'"),
    case("missing-weights", EMB, "model.yaml: missing required field 'weights'"),
    case(
        "missing-WQ",
        EMB + "weights:\n" + WK + WV,
        "model.yaml: weights: missing required matrix 'WQ'",
    ),
    case(
        "missing-WK",
        EMB + "weights:\n" + WQ + WV,
        "model.yaml: weights: missing required matrix 'WK'",
    ),
    case(
        "missing-WV",
        EMB + "weights:\n" + WQ + WK,
        "model.yaml: weights: missing required matrix 'WV'",
    ),
    case(
        "unknown-field-kv_head",
        GOOD + "kv_head: 1\n",
        "model.yaml: unknown field 'kv_head' (did you mean 'kv_heads'?) "
        f"(known fields: {KNOWN_FIELDS})",
    ),
    case(
        "unknown-fields-all-named",
        "kv_head: 1\n" + GOOD + "causl: false\n",
        "model.yaml: unknown fields 'kv_head' (did you mean 'kv_heads'?), "
        f"'causl' (did you mean 'causal'?) (known fields: {KNOWN_FIELDS})",
    ),
    case(
        "unknown-field-capitalized-did-you-mean",
        EMB + "Weights:\n" + WQ + WK + WV,
        f"model.yaml: unknown field 'Weights' (did you mean 'weights'?) (known fields: "
        f"{KNOWN_FIELDS})",
    ),
    case(
        "unknown-weight-WX",
        GOOD + "  WX: [[1, 0], [0, 1]]\n",
        "model.yaml: weights: unknown weight matrix 'WX' (known: WQ, WK, WV, WO)",
    ),
    case(
        "embeddings-a-list",
        "embeddings: [1, 2]\n" + W,
        f"model.yaml: embeddings: {TOKEN_MAP}, got a list of 2 items",
    ),
    case(
        "embeddings-empty-mapping",
        "embeddings: {}\n" + W,
        f"model.yaml: embeddings: {TOKEN_MAP}, got a mapping with 0 keys",
    ),
    case(
        "embeddings-null",
        "embeddings:\n" + W,
        f"model.yaml: embeddings: {TOKEN_MAP}, got nothing (null)",
    ),
    case(
        "embeddings-a-set",
        "embeddings: !!set {cat, eats}\n" + W,
        f"model.yaml: embeddings: {TOKEN_MAP}, got a set (!!set)",
    ),
    case(
        "weights-a-list",
        EMB + "weights: [1, 2]\n",
        "model.yaml: weights: expected a mapping with WQ, WK, WV, got a list of 2 items",
    ),
    case("name-a-number", "name: 123\n" + GOOD, "model.yaml: name: expected a string, got 123"),
    case(
        "sentence-a-number",
        "sentence: 12\n" + GOOD,
        "model.yaml: sentence: expected a string, got 12",
    ),
    case(
        "name-binary",
        "name: !!binary aGk=\n" + GOOD,
        "model.yaml: name: expected a string, got binary data (!!binary)",
    ),
    case(
        "blank-sentence-from-file-names-it",
        GOOD + "sentence: '   '\n",
        "model.yaml: sentence: empty sentence: expected at least one token, got '   '",
        args=with_file(sentence=None),
    ),
    case(
        "heads-zero",
        GOOD + "heads: 0\n",
        "model.yaml: heads: expected a whole number ≥ 1, got 0",
    ),
    case(
        "heads-true",
        GOOD + "heads: true\n",
        "model.yaml: heads: expected a whole number ≥ 1, got a boolean (true)",
    ),
    case(
        "causal-yes-is-a-string",
        GOOD + "causal: yes\n",
        "model.yaml: causal: expected true or false, got a string 'yes'",
    ),
    case(
        "positions-unknown-kind",
        GOOD + "positions: rotary\n",
        "model.yaml: positions: expected none, sinusoidal, rope, alibi, or a list of position "
        "vectors, "
        "got a string 'rotary'",
    ),
    # --- entries that are not (finite) numbers
    case(
        "json-nan-field-path",
        '{"embeddings": {"cat": [NaN, 2]}, ' + J_W + "}",
        "model.json: embeddings.cat[0]: expected a finite number, got a non-finite number (nan)",
        suffix=".json",
    ),
    case(
        "json-infinity-field-path",
        '{"embeddings": {"cat": [1, 2]}, "weights": {"WQ": [[Infinity, 0], [0, 1]], '
        '"WK": [[1, 0], [0, 1]], "WV": [[0, 1], [1, 0]]}}',
        "model.json: weights.WQ[0][0]: expected a finite number, got a non-finite number (inf)",
        suffix=".json",
    ),
    case(
        "json-negative-infinity-field-path",
        '{"embeddings": {"cat": [-Infinity, 2]}, ' + J_W + "}",
        "model.json: embeddings.cat[0]: expected a finite number, got a non-finite number (-inf)",
        suffix=".json",
    ),
    case(
        "json-nan-where-a-string-goes",
        '{"name": NaN, ' + J_EMB + ", " + J_W + "}",
        "model.json: name: expected a string, got a non-finite number (nan)",
        suffix=".json",
    ),
    case(
        "entry-quoted-number",
        "embeddings:\n  cat: ['1.5', 2]\n" + W,
        "model.yaml: embeddings.cat[0]: expected a number, got a string '1.5'",
    ),
    case(
        "json-entry-quoted-number",
        '{"embeddings": {"cat": ["1.5", 2]}, ' + J_W + "}",
        "model.json: embeddings.cat[0]: expected a number, got a string '1.5'",
        suffix=".json",
    ),
    case(
        "entry-true",
        "embeddings:\n  cat: [1, true]\n" + W,
        "model.yaml: embeddings.cat[1]: expected a number, got a boolean (true)",
    ),
    case(
        "entry-null",
        "embeddings:\n  cat: [null, 2]\n" + W,
        "model.yaml: embeddings.cat[0]: expected a number, got nothing (null)",
    ),
    case(
        "entry-nested-list",
        "embeddings:\n  cat: [[1], 2]\n" + W,
        "model.yaml: embeddings.cat[0]: expected a number, got a list of 1 item",
    ),
    case(
        "entry-date-is-a-string",  # YAML 1.2 has no timestamps
        "embeddings:\n  cat: [2020-01-01, 2]\n" + W,
        "model.yaml: embeddings.cat[0]: expected a number, got a string '2020-01-01'",
    ),
    case(
        "entry-binary",
        "embeddings:\n  cat: [!!binary aGk=, 2]\n" + W,
        "model.yaml: embeddings.cat[0]: expected a number, got binary data (!!binary)",
    ),
    case(
        "weight-entry-word",
        EMB + "weights:\n  WQ: [[1, x], [0, 1]]\n" + WK + WV,
        "model.yaml: weights.WQ[0][1]: expected a number, got a string 'x'",
    ),
    case(
        "yaml-inf",
        "embeddings:\n  cat: [.inf, 2]\n" + W,
        "model.yaml: embeddings.cat[0]: expected a finite number, got a non-finite number (inf)",
    ),
    case(
        "yaml-negative-inf",
        "embeddings:\n  cat: [1, -.inf]\n" + W,
        "model.yaml: embeddings.cat[1]: expected a finite number, got a non-finite number (-inf)",
    ),
    case(
        "yaml-nan-in-weights",
        EMB + "weights:\n" + WQ + WK + "  WV: [[0, 1], [.nan, 0]]\n",
        "model.yaml: weights.WV[1][0]: expected a finite number, got a non-finite number (nan)",
    ),
    case(
        "integer-too-large",
        f"embeddings:\n  cat: [{HUGE_INT}, 2]\n" + W,
        "model.yaml: embeddings.cat[0]: expected a finite number, "
        "got an integer of 1329 bits (too large for float64)",
    ),
    case(
        "json-integer-too-large",
        f'{{"embeddings": {{"cat": [{HUGE_INT}, 2]}}, {J_W}}}',
        "model.json: embeddings.cat[0]: expected a finite number, "
        "got an integer of 1329 bits (too large for float64)",
        suffix=".json",
    ),
    case(
        "json-float-too-large",
        '{"embeddings": {"cat": [1e400, 2]}, ' + J_W + "}",
        "model.json: embeddings.cat[0]: expected a finite number, got a non-finite number (inf)",
        suffix=".json",
    ),
    case(
        "yaml-float-too-large-1e400",
        "embeddings:\n  cat: [1e400, 2]\n" + W,
        "model.yaml: embeddings.cat[0]: expected a finite number, got a non-finite number (inf)",
    ),
    case(
        "yaml-sexagesimal-is-not-a-number",
        "embeddings:\n  cat: [1:30, 2]\n" + W,
        "model.yaml: embeddings.cat[0]: expected a number, got a string '1:30'",
        args=with_file(sentence="cat"),
    ),
    case(
        "yaml-underscore-digits-are-not-a-number",
        "embeddings:\n  cat: [1_000, 2]\n" + W,
        "model.yaml: embeddings.cat[0]: expected a number, got a string '1_000'",
    ),
    # --- matrices and vectors: a list of rows of one length, a non-empty list of numbers
    # (how the shapes fit together is ModelSpec's: tests/kernel/test_spec.py)
    case(
        "ragged-WK-row-1",
        EMB + "weights:\n" + WQ + "  WK: [[1, 0], [0, 1, 2]]\n" + WV,
        "model.yaml: weights.WK[1]: expected 2 numbers like row 0 "
        "(rows of a matrix have one length), got 3",
    ),
    case(
        "ragged-WV-row-1",
        EMB + "weights:\n" + WQ + WK + "  WV: [[0, 1], [1]]\n",
        "model.yaml: weights.WV[1]: expected 2 numbers like row 0 "
        "(rows of a matrix have one length), got 1",
    ),
    case(
        "WQ-a-flat-list",
        EMB + "weights:\n  WQ: [1, 0]\n" + WK + WV,
        "model.yaml: weights.WQ: expected a matrix (a non-empty list of rows, each a list of "
        "numbers), got a list of 2 items",
    ),
    case(
        "WQ-empty",
        EMB + "weights:\n  WQ: []\n" + WK + WV,
        "model.yaml: weights.WQ: expected a matrix (a non-empty list of rows, each a list of "
        "numbers), got a list of 0 items",
    ),
    case(
        "WQ-empty-rows",
        EMB + "weights:\n  WQ: [[], []]\n" + WK + WV,
        "model.yaml: weights.WQ[0]: expected a non-empty list of numbers, got a list of 0 items",
    ),
    case(
        "embedding-lengths-differ",
        "embeddings:\n  cat: [1, 2]\n  eats: [3, 1, 5]\n" + W,
        "model.yaml: embeddings.eats: expected a vector of 2 numbers "
        "(d_model, the length of 'cat'), got 3 numbers",
    ),
    case(
        "embedding-empty-vector",
        "embeddings:\n  cat: []\n" + W,
        "model.yaml: embeddings.cat: expected a non-empty list of numbers, got a list of 0 items",
    ),
    case(
        "embedding-a-string",
        "embeddings:\n  cat: '1 2'\n" + W,
        "model.yaml: embeddings.cat: expected a non-empty list of numbers, got a string '1 2'",
    ),
    # --- token keys
    case(
        "token-with-space",
        "embeddings:\n  big cat: [1, 2]\n" + W,
        "model.yaml: embeddings: expected tokens without spaces "
        "(a sentence is split on whitespace), got a string 'big cat'",
    ),
    case(
        "json-token-with-tab",
        '{"embeddings": {"a\\tb": [1, 2]}, ' + J_W + "}",
        "model.json: embeddings: expected tokens without spaces "
        "(a sentence is split on whitespace), got a string 'a\\tb'",
        suffix=".json",
    ),
    case(
        "json-empty-token",
        '{"embeddings": {"": [1, 2]}, ' + J_W + "}",
        "model.json: embeddings: expected a non-empty token, got a string ''",
        suffix=".json",
    ),
    case(
        "yaml-empty-token",
        "embeddings:\n  '': [1, 2]\n" + W,
        "model.yaml: embeddings: expected a non-empty token, got a string ''",
    ),
    case(
        "escape-in-a-field-path",
        'embeddings:\n  "\\e[31m": [1, x]\n  eats: [3, 1]\n' + W,
        "model.yaml: embeddings.\\x1b[31m[1]: expected a number, got a string 'x'",
        args=with_file(sentence="eats"),
    ),
    # --- duplicate keys: the mapping's field path, and the line where YAML has one
    case(
        "yaml-duplicate-token",
        "embeddings:\n  cat: [1, 2]\n  cat: [3, 1]\n" + W,
        f"model.yaml: embeddings: duplicate key 'cat' (line 3): {ONCE}",
    ),
    case(
        "yaml-duplicate-weight",
        EMB + "weights:\n" + WQ + WK + WV + WQ,
        f"model.yaml: weights: duplicate key 'WQ' (line 9): {ONCE}",
    ),
    case(
        "yaml-duplicate-field",
        GOOD + "weights: {}\n",
        f"model.yaml: duplicate key 'weights' (line 9): {ONCE}",
    ),
    case(
        "json-duplicate-token-field-path",
        '{"embeddings": {"cat": [1, 2], "cat": [3, 1]}, ' + J_W + "}",
        f"model.json: embeddings: duplicate key 'cat': {ONCE}",
        suffix=".json",
    ),
    case(
        "json-duplicate-field",
        "{" + J_EMB + ", " + J_W + ", " + J_W + "}",
        f"model.json: duplicate key 'weights': {ONCE}",
        suffix=".json",
    ),
    # --- matrices as .npy files beside the model file (a FIFO or a device: test_reading.py)
    case(
        "npy-missing",
        EMB + "weights:\n  WQ: wq.npy\n" + WK + WV,
        "model.yaml: weights.WQ: expected a .npy file (relative to the model file), got no "
        "file 'wq.npy'",
    ),
    case(
        "npy-not-an-array",
        lambda path: with_npy(
            path, EMB + "weights:\n  WQ: wq.npy\n" + WK + WV, {"wq.npy": "not numbers"}
        ),
        "model.yaml: weights.WQ: expected a 2-D array of real numbers, got a scalar of <U11",
    ),
    case(
        "npy-non-finite",
        lambda path: with_npy(
            path,
            EMB + "weights:\n  WQ: wq.npy\n" + WK + WV,
            {"wq.npy": [[1.0, float("inf")], [0.0, 1.0]]},
        ),
        "model.yaml: weights.WQ[0][1]: expected a finite number, got a non-finite number (inf)",
    ),
    case(
        "npy-vocabulary-length",
        lambda path: with_npy(
            path, "embeddings: e.npy\nvocabulary: [cat]\n" + W, {"e.npy": [[1.0, 2.0], [3.0, 1.0]]}
        ),
        "model.yaml: vocabulary: expected 2 tokens (one per row of embeddings), got 1",
        args=with_file(sentence="cat"),
    ),
    case(
        "npy-header-claims-more-than-the-file",
        lambda path: with_npy_header(
            path, EMB + "weights:\n  WQ: wq.npy\n" + WK + WV, "wq.npy", (100000, 100000)
        ),
        "model.yaml: weights.WQ: expected a .npy array file, got 'wq.npy': its header "
        "declares 100000 × 100000 float64 (76293.9 MiB), more than the 100 bytes the file "
        "holds after it",
    ),
    case(
        "npy-not-a-npy-file",
        lambda path: with_text(
            path, EMB + "weights:\n  WQ: wq.npy\n" + WK + WV, {"wq.npy": "hello"}
        ),
        "model.yaml: weights.WQ: expected a .npy array file, got 'wq.npy': it does not start "
        "as a .npy file does",
    ),
    case(
        "npy-vocabulary-numbers",
        lambda path: with_npy(
            path, "embeddings: e.npy\nvocabulary: [1, 2]\n" + W, {"e.npy": [[1.0, 2.0], [3.0, 1.0]]}
        ),
        "model.yaml: vocabulary[0]: expected a token (a string: quote numbers), got 1",
        args=with_file(sentence="cat"),
    ),
    case(
        "vocabulary-without-npy",
        GOOD + "vocabulary: [cat]\n",
        "model.yaml: vocabulary: expected nothing, unless embeddings is a .npy file, got a "
        "list of 1 item",
    ),
    # --- target: the block output --loss mse pulls toward (its width is checked here)
    case(
        "target-too-wide",
        GOOD + "target: [[1, 2, 3]]\n",
        "model.yaml: target: expected rows of 2 numbers (the block output's width: "
        "heads·d_v = 1·2), got 1 × 3",
    ),
    case(
        "target-with-wo-is-d_model-wide",
        GOOD + "  WO: [[1, 0], [0, 1]]\ntarget: [[1]]\n",
        "model.yaml: target: expected rows of 2 numbers (the block output's width: "
        "d_model, with WO), got 1 × 1",
    ),
    case(
        "target-not-a-matrix",
        GOOD + "target: [1, 2]\n",
        "model.yaml: target: expected a matrix (a non-empty list of rows, each a list of "
        "numbers), got a list of 2 items",
    ),
    case(
        "target-nan",
        GOOD + "target: [[.nan, 1]]\n",
        "model.yaml: target[0][0]: expected a finite number, got a non-finite number (nan)",
    ),
    # --- the attention variants' keys (docs/variants.md)
    case(
        "window-without-causal",
        GOOD + "window: 2\n",
        "model.yaml: window: a sliding window is a causal mask made narrower: a query sees "
        "itself and the window − 1 keys before it: expected causal: true with a window, got "
        "causal: false",
    ),
    case(
        "window-zero",
        GOOD + "causal: true\nwindow: 0\n",
        "model.yaml: window: expected a whole number ≥ 1 (a query sees itself and window − 1 "
        "keys before it), got 0",
    ),
    case(
        "window-fraction",
        GOOD + "causal: true\nwindow: 2.5\n",
        "model.yaml: window: expected a whole number ≥ 1 (a query sees itself and window − 1 "
        "keys before it), got 2.5",
    ),
    case(
        "window-yes-is-a-string",
        GOOD + "causal: true\nwindow: yes\n",
        "model.yaml: window: expected a whole number ≥ 1 (a query sees itself and window − 1 "
        "keys before it), got a string 'yes'",
    ),
    case(
        "sinks-negative",
        GOOD + "causal: true\nwindow: 2\nsinks: -1\n",
        "model.yaml: sinks: expected a whole number ≥ 0 (the first tokens kept past the window), "
        "got -1",
    ),
    case(
        "sinks-without-window",
        GOOD + "causal: true\nsinks: 1\n",
        "model.yaml: sinks: sinks keep the first tokens visible past a sliding window: expected "
        "window: N with sinks, got no window",
    ),
    case(
        "alibi-slopes-without-alibi",
        GOOD + "alibi_slopes: [0.5]\n",
        "model.yaml: alibi_slopes: alibi_slopes are ALiBi's, one per head: expected positions: "
        "alibi with alibi_slopes, got positions: none",
    ),
    case(
        "alibi-slopes-one-per-head",
        GOOD + "positions: alibi\nalibi_slopes: [0.5, 0.25]\n",
        "model.yaml: alibi_slopes: expected 1 slopes (one per head), got 2",
    ),
    case(
        "alibi-slope-zero",
        GOOD + "positions: alibi\nalibi_slopes: [0]\n",
        "model.yaml: alibi_slopes[0]: expected a number > 0, got 0",
    ),
    case(
        "alibi-slopes-a-number",
        GOOD + "positions: alibi\nalibi_slopes: 0.5\n",
        "model.yaml: alibi_slopes: expected a list of slopes, one per head, got 0.5",
    ),
    case(
        "alibi-with-a-context",
        GOOD + "positions: alibi\ncontext: cat\n",
        "model.yaml: positions: ALiBi's bias is the distance between a query and a key of one "
        "sequence; a context is another sequence: expected none, sinusoidal or learned with a "
        "context, got alibi",
    ),
    case(
        "qk-norm-yes",
        GOOD + "qk_norm: yes\n",
        "model.yaml: qk_norm: expected true or false, got a string 'yes'",
    ),
    case(
        "qk-norm-eps-without-qk-norm",
        GOOD + "qk_norm_eps: 1e-5\n",
        "model.yaml: qk_norm_eps: qk_norm_eps belongs to QK-norm: expected qk_norm: true with "
        "qk_norm_eps, got no qk_norm",
    ),
    case(
        "qk-norm-eps-zero",
        GOOD + "qk_norm: true\nqk_norm_eps: 0\n",
        "model.yaml: qk_norm_eps: expected a number > 0 (added to mean(row²)), got 0",
    ),
    case(
        "q-norm-with-qk-norm-false",
        GOOD + "qk_norm: false\nq_norm: [1, 1]\n",
        "model.yaml: q_norm: q_norm belongs to QK-norm: expected qk_norm: true with q_norm, got "
        "qk_norm: false",
    ),
    case(
        "q-norm-not-d_k",
        GOOD + "qk_norm: true\nq_norm: [1, 1, 1]\n",
        "model.yaml: q_norm: expected 2 numbers (d_k, shared by every head), got 3",
    ),
    case(
        "k-norm-nan",
        GOOD + "qk_norm: true\nk_norm: [1, .nan]\n",
        "model.yaml: k_norm[1]: expected a finite number, got a non-finite number (nan)",
    ),
    case(
        "softcap-zero",
        GOOD + "softcap: 0\n",
        "model.yaml: softcap: expected a number > 0 (logits are capped to ±softcap), got 0",
    ),
    case(
        "softcap-negative",
        GOOD + "softcap: -30\n",
        "model.yaml: softcap: expected a number > 0 (logits are capped to ±softcap), got -30",
    ),
    case(
        "softcap-a-word",
        GOOD + "softcap: high\n",
        "model.yaml: softcap: expected a number > 0 (logits are capped to ±softcap), got a "
        "string 'high'",
    ),
    case(
        "softcap-inf",
        GOOD + "softcap: .inf\n",
        "model.yaml: softcap: expected a finite number, got a non-finite number (inf)",
    ),
    case(
        "sink-logit-one-per-head",
        GOOD + "sink_logit: [1, 2]\n",
        "model.yaml: sink_logit: expected a number, or 1 (one per head), got 2 numbers",
    ),
    case(
        "sink-logit-one-for-two-heads",
        GOOD + "heads: 2\nsink_logit: [1]\n",
        "model.yaml: sink_logit: expected a number, or 2 (one per head), got 1 number",
    ),
    case(
        "sink-logit-a-word",
        GOOD + "sink_logit: big\n",
        "model.yaml: sink_logit: expected a number, or a list of one per head, got a string 'big'",
    ),
    case(
        "sink-logit-nan",
        GOOD + "sink_logit: .nan\n",
        "model.yaml: sink_logit: expected a finite number, got a non-finite number (nan)",
    ),
    case(
        "sink-logit-empty-list",
        GOOD + "sink_logit: []\n",
        "model.yaml: sink_logit: expected a number, or a list of one per head, got a list of 0 "
        "items",
    ),
    case(
        "sink-logit-item-a-word",
        GOOD + "sink_logit: [x]\n",
        "model.yaml: sink_logit[0]: expected a number, got a string 'x'",
    ),
]


@pytest.mark.parametrize("case", REJECTED)
def test_a_bad_model_file_is_one_clear_line_and_exit_2(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model file whose fields do not hold what docs/model-file.md says."""
    check_rejected(case, tmp_path, monkeypatch)


# -------------------------------------------------------- accepted: the same contract

# Tokens that YAML 1.1 would turn into booleans, numbers or null.
WORD_TOKENS = (
    "embeddings:\n  no: [1, 2]\n  yes: [3, 1]\n  on: [2, 4]\n  1: [1, 1]\n"
    "  off: [0, 1]\n  null: [2, 2]\n  ~: [1, 0]\n" + W
)
DEFAULTS_SPELLED_OUT = (
    GOOD + "heads: 1\nkv_heads: 1\ncausal: false\npositions: none\ncontext: null\n"
)


def accepted(
    id: str,
    make: Make,
    sentence: str | None,
    tokens: list[str],
    *,
    x: list[list[float]] | None = None,
    suffix: str = ".yaml",
    bug: str | None = None,
) -> object:
    """A file that must trace: exit 0, these ``tokens``, and (if given) this stage X."""
    marks = [pytest.mark.xfail(strict=True, reason=f"BUG: {bug}")] if bug else []
    args = with_file("--json", suffix=suffix, sentence=sentence)
    return pytest.param(make, suffix, args, tokens, x, id=id, marks=marks)


ACCEPTED = [
    accepted("yaml-1.1-words-are-tokens", WORD_TOKENS, "no yes on 1", ["no", "yes", "on", "1"]),
    accepted("null-and-tilde-are-tokens", WORD_TOKENS, "null ~ off", ["null", "~", "off"]),
    accepted(
        "sentence-no-from-the-file",
        WORD_TOKENS + "sentence: no on\n",
        None,
        ["no", "on"],
    ),
    accepted(
        "defaults-spelled-out", DEFAULTS_SPELLED_OUT, "cat eats fish", ["cat", "eats", "fish"]
    ),
    accepted("positions-null", GOOD + "positions: null\ncausal: false\n", "cat", ["cat"]),
    accepted(
        "yaml-alias-as-value",
        EMB + "weights:\n  WQ: &id [[1, 0], [0, 1]]\n  WK: *id\n" + WV,
        "cat fish",
        ["cat", "fish"],
    ),
    accepted(
        "yaml-scalar-alias-as-key",
        "name: &a cat\nembeddings:\n  *a : [1, 2]\n  eats: [3, 1]\n" + W,
        "cat eats",
        ["cat", "eats"],
    ),
    accepted("yaml-with-bom", "\ufeff" + GOOD, "fish", ["fish"]),
    accepted(
        "json-with-bom",
        "\ufeff{" + J_EMB + ", " + J_W + "}",
        "fish",
        ["fish"],
        suffix=".json",
    ),
    accepted("yml-suffix", GOOD, "cat", ["cat"], suffix=".yml"),
    accepted(
        "upper-case-JSON-suffix", "{" + J_EMB + ", " + J_W + "}", "cat", ["cat"], suffix=".JSON"
    ),
    accepted("case-folded-lookup", GOOD, "Cat EATS fish", ["Cat", "EATS", "fish"]),
    accepted(
        "yaml-1.1-exponent",
        "embeddings:\n  cat: [1.0e+2, 2.5e-1]\n" + W,
        "cat",
        ["cat"],
        x=[[100.0, 0.25]],
    ),
    accepted(
        "yaml-scientific-notation",
        "embeddings:\n  cat: [1e-3, 2]\n  eats: [1.5e2, 1E+1]\n" + W,
        "cat eats",
        ["cat", "eats"],
        x=[[0.001, 2.0], [150.0, 10.0]],
    ),
    accepted(
        "yaml-leading-zero-is-decimal",
        "embeddings:\n  cat: [017, 2]\n" + W,
        "cat",
        ["cat"],
        x=[[17.0, 2.0]],
    ),
    accepted(
        "yaml-octal-and-hex-as-yaml-1.2-writes-them",
        "embeddings:\n  cat: [0o17, 0x1F]\n" + W,
        "cat",
        ["cat"],
        x=[[15.0, 31.0]],
    ),
    accepted(
        "yaml-a-matrix-shared-by-alias",
        EMB + "weights:\n  WQ: &eye [[1, 0], [0, 1]]\n  WK: *eye\n" + WV,
        "cat",
        ["cat"],
        x=[[1.0, 2.0]],
    ),
]


@pytest.mark.parametrize(("make", "suffix", "args", "tokens", "x"), ACCEPTED)
def test_accepted_input_traces(
    make: Make,
    suffix: str,
    args: tuple[str, ...],
    tokens: list[str],
    x: list[list[float]] | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    materialize(make, Path(f"model{suffix}"))

    result = invoke(args)

    assert_no_traceback(result)
    assert result.stderr == ""
    assert result.exit_code == 0
    trace = load_valid_trace(result.stdout)
    assert trace["tokens"] == tokens

    if x is not None:
        stage = trace["stages"][0]
        assert stage["name"] == "X"
        assert stage["data"] == x


NUMBER_WORDS = {20: "Twenty", 21: "Twenty-one", 22: "Twenty-two", 23: "Twenty-three"}
NUMBER_WORDS |= {24: "Twenty-four", 25: "Twenty-five", 26: "Twenty-six", 27: "Twenty-seven"}


def test_the_docs_count_and_list_the_fields_the_reader_knows() -> None:
    """docs/model-file.md's fields table names each field the reader knows, once, and
    the sentence above it counts them (it said fourteen when there were 24: issue 29)."""
    from attntrace.modelfile.model_file import KNOWN_FIELDS

    text = (Path(__file__).parents[2] / "docs" / "model-file.md").read_text(encoding="utf-8")
    section = text.split("\n## Fields\n", 1)[1].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("| `")]
    named = [name.strip().strip("`") for line in table for name in line.split("|")[1].split(",")]
    assert sorted(named) == sorted(KNOWN_FIELDS)
    assert f"\n{NUMBER_WORDS[len(KNOWN_FIELDS)]} top-level fields " in section
