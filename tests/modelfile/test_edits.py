"""``--set PATH=VALUE`` (attntrace.modelfile.edits): how an edit is read, where it goes, and
every way one is refused.

The bad-input catalogue's room for edits (the contract and the tools are in
``tests/catalogue.py``): each refused edit is exit 2 with one line that names the
``--set`` (a path that does not fit, a value that is not YAML) or the model file's own
field, its source naming the edits (a value the model refuses). The numbers an edit
changes are checked against tests/naive.py in tests/cli/test_set_flag.py.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from catalogue import EMB, GOOD, Case, case, check_rejected, with_npy
from helpers import invoke, load_valid_trace

from attntrace.errors import InputError
from attntrace.modelfile.edit_syntax import spelled
from attntrace.modelfile.edits import Edit, apply_edits, parse_edit
from attntrace.modelfile.model_file import model_from_document
from attntrace.modelfile.parse import parse_document

# ------------------------------------------------------------------------ reading


@pytest.mark.parametrize(
    ("text", "steps", "value"),
    [
        # the three examples
        ("WQ[0][1]=0.5", ("weights", "WQ", 0, 1), 0.5),
        ("embeddings.cat=[1,0]", ("embeddings", "cat"), [1, 0]),
        ("causal=true", ("causal",), True),
        # the long form, biases and their shorthand, whole matrices
        ("weights.WQ[0][1]=0.5", ("weights", "WQ", 0, 1), 0.5),
        ("biases.bQ[1]=-2", ("biases", "bQ", 1), -2),
        ("bV=[1, 2]", ("biases", "bV"), [1, 2]),
        ("WO=[[1, 0], [0, 1]]", ("weights", "WO"), [[1, 0], [0, 1]]),
        # YAML 1.2 values: a string, null, an exponent, a quoted number, a flow mapping
        ("positions=rope", ("positions",), "rope"),
        ("context=null", ("context",), None),
        ("rope_base=1e4", ("rope_base",), 1e4),
        ("causal=yes", ("causal",), "yes"),  # YAML 1.2: a string, refused by validation
        ('embeddings.x="1"', ("embeddings", "x"), "1"),
        ("biases={bQ: [0, 1]}", ("biases",), {"bQ": [0, 1]}),
        # keys as written: a digit is a token, quotes keep '.' and '=' in a key
        ("embeddings.1=[0, 1]", ("embeddings", "1"), [0, 1]),
        ('embeddings["."]=[0, 1]', ("embeddings", "."), [0, 1]),
        ("embeddings['a=b']=[0, 1]", ("embeddings", "a=b"), [0, 1]),
        ("embeddings.didn't=[0, 1]", ("embeddings", "didn't"), [0, 1]),
        # spaces around PATH and VALUE, and an '=' inside the value
        ("  WQ[0][1] = 0.5 ", ("weights", "WQ", 0, 1), 0.5),
        ("sentence=a=b", ("sentence",), "a=b"),
    ],
)
def test_an_edit_reads_as_its_path_and_a_yaml_value(
    text: str, steps: tuple[Any, ...], value: Any
) -> None:
    edit = parse_edit(text)
    assert edit.steps == steps
    assert edit.value == value
    assert isinstance(edit.value, type(value))  # 1 stays an int, true a bool
    assert text.strip().startswith(edit.path)  # the path as written, for messages
    assert edit.field == f"--set {edit.path}"


def test_a_path_is_spelled_as_the_model_files_messages_spell_it() -> None:
    assert spelled(("weights", "WQ", 0, 1)) == "weights.WQ[0][1]"
    assert spelled(("embeddings", ".")) == "embeddings['.']"
    assert spelled(()) == "the model"
    # what spelled() writes reads back as the same steps
    for steps in (("weights", "WQ", 0, 1), ("embeddings", "."), ("embeddings", "a=b")):
        assert parse_edit(f"{spelled(steps)}=1").steps == steps


# ----------------------------------------------------------------------- applying


def _document(text: str = GOOD) -> Any:
    return parse_document(text, "model.yaml", is_json=False)


def test_edits_are_made_in_order_on_a_copy() -> None:
    document = _document()
    before = copy.deepcopy(document)
    edits = [parse_edit(e) for e in ("WQ=[[2, 0], [0, 2]]", "WQ[0][1]=3", "causal=true")]
    edited = apply_edits(document, edits)
    assert edited["weights"]["WQ"] == [[2, 3], [0, 2]]
    assert edited["causal"] is True
    assert document == before  # the parsed document given is as it was
    # the other order: the whole matrix, set last, wins
    edits.reverse()
    assert apply_edits(document, edits)["weights"]["WQ"] == [[2, 0], [0, 2]]


def test_an_edit_value_is_not_changed_by_a_later_edit() -> None:
    """An edit into a value an earlier edit set copies it: the same edits made twice
    (check recomputes a model) give the same model."""
    edits = [parse_edit("WQ=[[1, 0], [0, 1]]"), parse_edit("WQ[0][1]=5")]
    first = apply_edits(_document(), edits)
    second = apply_edits(_document(), edits)
    assert first["weights"]["WQ"] == second["weights"]["WQ"] == [[1, 5], [0, 1]]
    assert edits[0].value == [[1, 0], [0, 1]]


def test_a_missing_mapping_on_the_path_is_made() -> None:
    edited = apply_edits(_document(), [parse_edit("bQ=[1, 0]")])
    assert edited["biases"] == {"bQ": [1, 0]}
    spec = model_from_document(edited, "model.yaml")
    np.testing.assert_array_equal(spec.biases["bQ"], [1.0, 0.0])


def test_a_key_the_file_gives_twice_is_still_refused_after_an_edit() -> None:
    """The copy keeps the parser's record of duplicated keys: an edit elsewhere does not
    make a file with a duplicate key valid."""
    document = _document(EMB + "  cat: [5, 5]\n" + GOOD.removeprefix(EMB))
    edit = parse_edit("causal=true")
    with pytest.raises(InputError, match=r"embeddings: duplicate key 'cat' \(line 5\)"):
        model_from_document(document, "model.yaml", edits=[edit])


def test_a_python_callers_arrays_are_edited_in_a_copy() -> None:
    wq = np.eye(2)
    document = {
        "embeddings": {"a": np.array([1.0, 2.0])},
        "weights": {"WQ": wq, "WK": np.eye(2), "WV": np.eye(2)},
    }
    spec = model_from_document(document, "model", edits=[parse_edit("WQ[0][1]=0.5")])
    np.testing.assert_array_equal(spec.WQ, [[1.0, 0.5], [0.0, 1.0]])
    np.testing.assert_array_equal(wq, np.eye(2))
    assert wq.flags.writeable
    assert document["weights"]["WQ"] is wq


def test_an_array_is_checked_as_its_lists_are() -> None:
    """A numpy matrix is checked at numpy's speed (model_matrices), with the message its
    lists would get: the same field path, the same words for what was found."""
    for dtype in ("float64", "float32", "float16"):
        array = np.array([[1.0, 2.0], [np.inf, 3.0]], dtype=dtype)
        messages = []
        for wq in (array, array.tolist()):
            document = {
                "embeddings": {"a": [1.0, 2.0]},
                "weights": {"WQ": wq, "WK": np.eye(2), "WV": np.eye(2)},
            }
            with pytest.raises(InputError) as caught:
                model_from_document(document, "model")
            messages.append(str(caught.value))
        assert messages[0] == messages[1]
        assert messages[0] == (
            "model: weights.WQ[1][0]: expected a finite number, got a non-finite number (inf)"
        )


# ----------------------------------------------------------- .npy matrices, edited


def _npy_model(path: Path) -> None:
    """A model file whose WQ and embedding table are .npy files beside it."""
    text = (
        "sentence: cat eats fish\n"
        "embeddings: emb.npy\n"
        "vocabulary: [cat, eats, fish]\n"
        "weights:\n  WQ: wq.npy\n  WK: [[1, 0], [0, 1]]\n  WV: [[0, 1], [1, 0]]\n"
    )
    with_npy(path, text, {"emb.npy": np.array([[1.0, 2], [3, 1], [2, 4]]), "wq.npy": np.eye(2)})


@pytest.mark.parametrize(
    ("edits", "sentence", "expected_x", "expected_wq"),
    [
        (("WQ[0][1]=0.5",), "cat eats fish", [[1, 2], [3, 1], [2, 4]], [[1, 0.5], [0, 1]]),
        (("WQ[1]=[2, 3]",), "cat eats fish", [[1, 2], [3, 1], [2, 4]], [[1, 0], [2, 3]]),
        (("embeddings.cat[1]=7",), "cat eats fish", [[1, 7], [3, 1], [2, 4]], [[1, 0], [0, 1]]),
        (("embeddings.dog=[0.5, 0.25]",), "dog cat", [[0.5, 0.25], [1, 2]], [[1, 0], [0, 1]]),
        (("WQ[0][1]=0.5", "WQ[0][1]=2", "WQ[1][0]=-1"), "fish", [[2, 4]], [[1, 2], [-1, 1]]),
    ],
)
def test_an_edit_into_a_npy_matrix_changes_that_matrix(
    edits: tuple[str, ...],
    sentence: str,
    expected_x: list[list[float]],
    expected_wq: list[list[float]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    _npy_model(Path("model.yaml"))
    files = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    args = ["run", sentence, "--config", "model.yaml", "--json"]
    for edit in edits:
        args += ["--set", edit]
    result = invoke(*args)
    assert result.exit_code == 0, result.stderr
    trace = load_valid_trace(result.stdout)
    stages = {s["name"]: s for s in trace["stages"]}
    assert stages["X"]["data"] == expected_x  # small whole numbers and halves: exact
    q = [[sum(x[k] * expected_wq[k][j] for k in range(2)) for j in range(2)] for x in expected_x]
    assert stages["Q"]["data"] == q
    # the model file and its .npy files are as they were
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == files


# ---------------------------------------------------------------- refused edits

NPY_MODEL = (
    "sentence: cat eats fish\n" + EMB + "weights:\n  WQ: wq.npy\n"
    "  WK: [[1, 0], [0, 1]]\n  WV: [[0, 1], [1, 0]]\n"
)


def _with_wq_npy(path: Path) -> None:
    with_npy(path, NPY_MODEL, {"wq.npy": np.eye(2)})


def _without_npy(path: Path) -> None:
    path.write_text(NPY_MODEL, encoding="utf-8")


def _set(*edits: str) -> tuple[str, ...]:
    args: tuple[str, ...] = ("cat eats fish", "--config", "model.yaml")
    for edit in edits:
        args += ("--set", edit)
    return args


PATH_FORM = "expected a PATH of keys and [index] parts, as in weights.WQ[0][1] or embeddings.cat"
REJECTED = [
    # --- not PATH=VALUE
    case(
        "no-equals",
        GOOD,
        "--set: expected PATH=VALUE, as in WQ[0][1]=0.5, got 'WQ' (no '=')",
        args=_set("WQ"),
    ),
    case(
        "no-path", GOOD, f"--set: {PATH_FORM}, got nothing before the '=' of '=1'", args=_set("=1")
    ),
    case(
        "empty-key",
        GOOD,
        f"--set: {PATH_FORM}, got 'weights..WQ': a key is missing after the '.' at character 8",
        args=_set("weights..WQ=1"),
    ),
    case(
        "trailing-dot",
        GOOD,
        f"--set: {PATH_FORM}, got 'causal.': a key is missing after the '.' at character 7",
        args=_set("causal.=1"),
    ),
    case(
        "starts-with-dot",
        GOOD,
        f"--set: {PATH_FORM}, got '.WQ': a path starts with a key",
        args=_set(".WQ=1"),
    ),
    case(
        "negative-index",
        GOOD,
        f"--set: {PATH_FORM}, got 'WQ[-1]': [-1]: an index counts from 0 (no negative indices)",
        args=_set("WQ[-1]=1"),
    ),
    case(
        "word-index",
        GOOD,
        f"--set: {PATH_FORM}, got 'WQ[x]': [x] is neither an index [0] nor a quoted key ['x']",
        args=_set("WQ[x]=1"),
    ),
    case(
        "unclosed-bracket",
        GOOD,
        f"--set: {PATH_FORM}, got 'WQ[0': a '[' at character 3 without its ']'",
        args=_set("WQ[0=1"),
    ),
    case(
        "stray-bracket",
        GOOD,
        f"--set: {PATH_FORM}, got 'WQ[0]]': ']' at character 6: a key follows a '.', an index "
        "is in [ ]",
        args=_set("WQ[0]]=1"),
    ),
    case(
        "huge-index",
        GOOD,
        f"--set: {PATH_FORM}, got 'WQ[{'9' * 30}]': an index of 30 digits",
        args=_set(f"WQ[{'9' * 30}]=1"),
    ),
    # --- a VALUE that is none, or not YAML, or not plain data
    case(
        "empty-value",
        GOOD,
        "--set WQ[0][1]: expected a value after '=' (null for nothing), got nothing",
        args=_set("WQ[0][1]="),
    ),
    case(
        "two-lines",
        GOOD,
        "--set WQ[0][1]: expected a value on one line ([1, 0], {a: 1}), got a line break",
        args=_set("WQ[0][1]=1\n2"),
    ),
    case(
        "unclosed-list",
        GOOD,
        "--set WQ[0]: the value '[1,': at its end: malformed YAML: did not find expected node "
        "content",
        args=_set("WQ[0]=[1,"),
    ),
    case(
        "python-tag",
        GOOD,
        "--set WQ: the value '!!python/object:os.system {}': column 1: YAML tag "
        "!!python/object:os.system is not allowed: a model file holds plain data (mappings, "
        "lists, numbers, strings)",
        args=_set("WQ=!!python/object:os.system {}"),
    ),
    # --- a PATH that does not fit the model
    case(
        "index-out-of-range",
        GOOD,
        "--set WQ[0][9]: expected an index from 0 to 1 (weights.WQ[0] has 2 numbers), got 9",
        args=_set("WQ[0][9]=1"),
    ),
    case(
        "row-out-of-range",
        GOOD,
        "--set WQ[2]: expected an index from 0 to 1 (weights.WQ has 2 rows), got 2",
        args=_set("WQ[2]=[1, 0]"),
    ),
    case(
        "through-a-number",
        GOOD,
        "--set WQ[0][1][0]: weights.WQ[0][1] is 0, not a mapping or a list: the path ends there",
        args=_set("WQ[0][1][0]=1"),
    ),
    case(
        "through-a-boolean",
        GOOD + "causal: false\n",
        "--set causal.on: causal is a boolean (false), not a mapping or a list: the path ends "
        "there",
        args=_set("causal.on=1"),
    ),
    case(
        "key-of-a-list",
        GOOD,
        "--set WQ.first: weights.WQ is a list: name an item by its index (weights.WQ[0]), not "
        ".first",
        args=_set("WQ.first=1"),
    ),
    case(
        "index-of-a-mapping",
        GOOD,
        "--set embeddings[0]: embeddings is a mapping: name a key (embeddings.KEY), not [0] "
        "(keys: cat, eats, fish)",
        args=_set("embeddings[0]=[1, 0]"),
    ),
    case(
        "index-into-a-typo",
        GOOD,
        "--set weight.WQ[0][1]: the model has no weight (did you mean 'weights'?): a new entry "
        "is set whole, not indexed into",
        args=_set("weight.WQ[0][1]=0.5"),
    ),
    case(
        "index-into-no-bias",
        GOOD,
        "--set bQ[0]: the model has no biases: a new entry is set whole, not indexed into",
        args=_set("bQ[0]=1"),
    ),
    case(
        "index-into-a-new-token",
        GOOD,
        "--set embeddings.dog[0]: the model has no embeddings.dog: a new entry is set whole, "
        "not indexed into",
        args=_set("embeddings.dog[0]=1"),
    ),
    # --- a VALUE the model refuses: the model file's message, its source naming the edits
    case(
        "not-a-number",
        GOOD,
        "model.yaml (with --set WQ[0][1]): weights.WQ[0][1]: expected a number, got a string 'x'",
        args=_set("WQ[0][1]=x"),
    ),
    case(
        "not-finite",
        GOOD,
        "model.yaml (with --set WQ[0][1]): weights.WQ[0][1]: expected a finite number, got a "
        "non-finite number (nan)",
        args=_set("WQ[0][1]=.nan"),
    ),
    case(
        "yes-is-no-boolean",
        GOOD,
        "model.yaml (with --set causal): causal: expected true or false, got a string 'yes'",
        args=_set("causal=yes"),
    ),
    case(
        "unknown-field",
        GOOD,
        "model.yaml (with --set kv_head): unknown field 'kv_head' (did you mean 'kv_heads'?) "
        "(known fields: name, description, sentence, embeddings, weights, heads, kv_heads, "
        "causal, positions, context, vocabulary, biases, rope_base, rope_pairing, target, "
        "window, sinks, alibi_slopes, qk_norm, qk_norm_eps, q_norm, k_norm, softcap, "
        "sink_logit)",
        args=_set("kv_head=2"),
    ),
    case(
        "short-row",
        GOOD,
        "model.yaml (with --set WQ[1]): weights.WQ[1]: expected 2 numbers like row 0 (rows of a "
        "matrix have one length), got 3",
        args=_set("WQ[1]=[1, 2, 3]"),
    ),
    case(
        "token-too-long",
        GOOD,
        "model.yaml (with --set embeddings.cat): embeddings.eats: expected a vector of 3 numbers "
        "(d_model, the length of 'cat'), got 2 numbers",
        args=_set("embeddings.cat=[1, 0, 0]"),
    ),
    case(
        "shape-after-edit",
        GOOD,
        None,
        contains=("model.yaml (with --set WK): weights.WK: expected 2 × 2",),
        args=_set("WK=[[1], [0]]"),
    ),
    case(
        "many-edits-named",
        GOOD,
        "model.yaml (with --set causal, heads, WQ[0][0], ...): weights.WQ[0][1]: expected a "
        "number, got a string 'x'",
        args=_set("causal=true", "heads=1", "WQ[0][0]=2", "WQ[0][1]=x"),
    ),
    case(
        "unknown-token-after-edit",
        GOOD,
        "model.yaml (with --set sentence): embeddings: unknown token 'dog' (vocabulary: cat, "
        "eats, fish)",
        args=("--config", "model.yaml", "--set", "sentence=dog"),
    ),
    # --- edits into a .npy matrix
    case(
        "npy-not-a-number",
        _with_wq_npy,
        "model.yaml (with --set WQ[0][1]): weights.WQ[0][1]: expected a number, got a string 'x'",
        args=_set("WQ[0][1]=x"),
    ),
    case(
        "npy-short-row",
        _with_wq_npy,
        "model.yaml (with --set WQ[0]): weights.WQ[1]: expected 3 numbers like row 0 (rows of a "
        "matrix have one length), got 2",
        args=_set("WQ[0]=[1, 2, 3]"),
    ),
    case(
        "npy-out-of-range",
        _with_wq_npy,
        "--set WQ[5][0]: expected an index from 0 to 1 (weights.WQ has 2 rows), got 5",
        args=_set("WQ[5][0]=1"),
    ),
    case(
        "npy-through-a-number",
        _with_wq_npy,
        "--set WQ[0][0][0]: weights.WQ[0][0] is 1.0, not a mapping or a list: the path ends there",
        args=_set("WQ[0][0][0]=1"),
    ),
    case(
        "npy-key-of-a-list",
        _with_wq_npy,
        "--set WQ.a: weights.WQ is a list: name an item by its index (weights.WQ[0]), not .a",
        args=_set("WQ.a=1"),
    ),
    case(
        "npy-missing",
        _without_npy,
        None,
        contains=(
            "model.yaml (with --set WQ[0][1]): weights.WQ: expected a .npy file "
            "(relative to the model file), got no file ",
        ),
        args=_set("WQ[0][1]=1"),
    ),
    # --- a trained model is not edited
    case(
        "with-a-trained-model",
        None,
        "--set edits a model file or a sample: it does not go with --model (a trained "
        "model's weights)",
        args=("--model", "minilm", "--set", "causal=true"),
    ),
]


@pytest.mark.parametrize("case", REJECTED)
def test_a_bad_edit_is_one_line_naming_it(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    check_rejected(case, tmp_path, monkeypatch)


def test_the_python_field_is_edits() -> None:
    with pytest.raises(InputError) as caught:
        apply_edits(_document(), [parse_edit("WQ[0][9]=1", flag="edits")])
    assert str(caught.value) == (
        "edits WQ[0][9]: expected an index from 0 to 1 (weights.WQ[0] has 2 numbers), got 9"
    )


def test_an_edit_is_a_frozen_record() -> None:
    edit = parse_edit("WQ[0][1]=0.5")
    assert edit == Edit("WQ[0][1]=0.5", "WQ[0][1]", ("weights", "WQ", 0, 1), 0.5)
    with pytest.raises(AttributeError):
        edit.value = 1  # type: ignore[misc]
