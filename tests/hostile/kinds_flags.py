"""Every command with bad flag values: out of range, of the wrong type, naming what is
not there, or clashing with another flag."""

from __future__ import annotations

from hostile.runner import Kind, kind

# command -> {name: extra arguments}; each kind is the command with one bad flag.
BAD: dict[str, dict[str, tuple[str, ...]]] = {
    "run": {
        "precision-16": ("--precision", "16"),
        "precision-abc": ("--precision", "abc"),
        "max-rows-negative": ("--max-rows", "-1"),
        "top-0": ("--map", "--top", "0"),
        "top-huge": ("--map", "--top", "99999999999999999999999"),
        "stages-unknown": ("--json", "--stages", "bogus"),
        "stages-empty": ("--json", "--stages", ","),
        "heads-out-of-range": ("--json", "--heads", "9"),
        "heads-abc": ("--json", "--heads", "a,b"),
        "dtype-float8": ("--dtype", "float8"),
        "softmax-dtype-alone": ("--softmax-dtype", "float16"),
        "accumulate-bogus": ("--dtype", "float16", "--accumulate", "nowhere"),
        "focus-unknown": ("--focus", "dog"),
        "focus-index-past": ("--focus", "99"),
        "focus-hash-past": ("--focus", "cat#9"),
        "set-path-unknown": ("--set", "WX[0][0]=1"),
        "set-index-past": ("--set", "WQ[9][9]=1"),
        "set-value-abc": ("--set", "WQ[0][0]=abc"),
        "set-no-equals": ("--set", "WQ"),
        "set-nan": ("--set", "WQ[0][0]=nan"),
        "set-deep-value": ("--set", "WQ=" + "[" * 10_000 + "]" * 10_000),
        "context-unknown-token": ("--context", "dog"),
        "sample-unknown": ("--sample", "nosuch"),
        "model-unknown": ("--model", "nosuch"),
        "config-and-sample": ("-c", "x.yaml", "-s", "causal"),
        "layer-without-model": ("--layer", "3"),
        "layer-past-minilm": ("--model", "minilm", "--layer", "99"),
        "head-past-minilm": ("--model", "minilm", "--head", "99"),
        "unknown-option": ("--bogus",),
        "step-and-json": ("--step", "--json"),
    },
    "render": {
        "missing-argument": (),
        "precision-abc": ("t.json", "--precision", "abc"),
        "export-bad-suffix": ("-", "--export", "x.pdf"),
    },
    "check": {
        "rtol-abc": ("a.npz", "--rtol", "abc"),
        "rtol-negative": ("a.npz", "--rtol", "-1"),
        "atol-nan": ("a.npz", "--atol", "nan"),
        "layout-bogus": ("a.npz", "--layout", "sideways"),
        "missing-argument": (),
        "export-bad-suffix": ("a.npz", "--export", "x.svg"),
    },
    "diff": {
        "three-arguments": ("a.json", "b.json", "c.json"),
        "set-bad": ("--set", "WQ[0]=1"),
        "precision-negative": ("--precision", "-1"),
        "json-and-export-bad": ("--set", "causal=true", "--export", "x.txt"),
    },
    "grad": {
        "loss-bogus": ("--loss", "hinge"),
        "from-unknown": ("--from", "dog", "--to", "cat"),
        "to-unknown": ("--from", "cat", "--to", "dog"),
        "head-past": ("--from", "cat", "--to", "fish", "--head", "9"),
        "mse-without-target": ("--loss", "mse"),
        "focus-unknown": ("--focus", "dog"),
    },
    "train": {
        "steps-0": ("--steps", "0"),
        "steps-past": ("--steps", "100001"),
        "steps-abc": ("--steps", "abc"),
        "lr-0": ("--lr", "0"),
        "lr-negative": ("--lr", "-1"),
        "lr-nan": ("--lr", "nan"),
        "lr-inf": ("--lr", "inf"),
        "train-unknown": ("--train", "WX"),
        "train-empty": ("--train", ""),
        "init-bogus": ("--init", "zeros"),
        "seed-negative": ("--init", "random", "--seed", "-1"),
        "seed-huge": ("--init", "random", "--seed", "1" + "0" * 40),
        "save-bad-suffix": ("--steps", "1", "--save", "x.exe"),
    },
    "scaling": {
        "seed-negative": ("--seed", "-1"),
        "seed-2e64": ("--seed", "18446744073709551616"),
        "keys-1": ("--keys", "1"),
        "keys-past": ("--keys", "4097"),
        "samples-5": ("--samples", "5"),
        "samples-past": ("--samples", "100001"),
        "max-dk-3": ("--max-dk", "3"),
        "max-dk-past": ("--max-dk", "32768"),
        "keys-abc": ("--keys", "abc"),
    },
    "softmax": {
        "abc": ("abc",),
        "empty": ("",),
        "nan": ("nan", "1"),
        "inf": ("inf", "1"),
        "1e400": ("1e400", "1"),
        "dtype-bogus": ("--dtype", "int4", "1"),
        "none": (),
        "precision-past": ("--precision", "99", "1"),
    },
    "decode": {
        "dtype-bogus": ("--dtype", "float12"),
        "head-without-model": ("--head", "1"),
        "unknown-token": ("dog",),
        "max-cols-abc": ("--max-cols", "abc"),
    },
    "flash": {
        "block-q-0": ("--block-q", "0"),
        "block-k-abc": ("--block-k", "abc"),
        "variant-3": ("--variant", "3"),
        "sram-0": ("--sram", "0"),
        "sram-negative": ("--sram", "-5"),
        "sram-abc": ("--sram", "abc"),
        "head-past": ("--head", "7"),
        "max-tiles-negative": ("--max-tiles", "-1"),
    },
    "kv-cache": {
        "preset-unknown": ("--preset", "gpt5"),
        "layers-0": ("--layers", "0", "--heads", "1", "--head-dim", "1"),
        "layers-abc": ("--layers", "abc", "--heads", "1", "--head-dim", "1"),
        "heads-negative": ("--layers", "1", "--heads", "-1", "--head-dim", "1"),
        "kv-heads-not-dividing": (
            "--layers",
            "1",
            "--heads",
            "4",
            "--kv-heads",
            "3",
            "--head-dim",
            "1",
        ),
        "d-model-and-head-dim": (
            "--layers",
            "1",
            "--heads",
            "2",
            "--head-dim",
            "2",
            "--d-model",
            "4",
        ),
        "d-model-not-dividing": ("--layers", "1", "--heads", "3", "--d-model", "4"),
        "dtype-fp8": ("--preset", "gpt2", "--dtype", "fp8"),
        "window-0": ("--preset", "gemma3-270m", "--window", "0"),
        "window-and-no-window": ("--preset", "gemma3-270m", "--window", "4", "--no-window"),
        "tokens-nan": ("--preset", "gpt2", "--tokens", "nan"),
        "batch-0": ("--preset", "gpt2", "--batch", "0"),
        "half-a-shape": ("--layers", "2"),
    },
    "heads": {
        "top-negative": ("--top", "-1"),
        "from-unknown": ("--from", "zebra"),
        "model-unknown": ("--model", "nosuch"),
    },
    "samples": {
        "unknown": ("nosuch",),
        "path": ("../../etc/passwd",),
        "two": ("causal", "rope"),
    },
    "models": {"unknown-option": ("--all",)},
}
TOP_LEVEL = [
    kind("flag-unknown-command", "bogus"),
    kind("flag-unknown-top-option", "--bogus"),
    # docs/cli.md's exit codes: the help, then exit 2 (as Click has it; git prints its
    # help too): the one case where exit 2 writes no error line
    kind(
        "flag-no-command",
        expect="ok",
        verdicts=(2,),
        check=lambda ran: None if b"Usage: attntrace" in ran.stdout else "no help shown",
    ),
]


# Odd values the command may take in its stride: a --top past the keys is all of them, a
# seed has no upper bound, and --save writes YAML unless the name ends in .json.
EITHER = {"flag-run-top-huge", "flag-train-seed-huge", "flag-train-save-bad-suffix"}
LOSS = ("--from", "cat", "--to", "fish")  # so that grad's and train's flag is what is judged


def bad_flag(command: str, name: str, extra: tuple[str, ...]) -> Kind:
    if command in ("grad", "train") and "--from" not in extra and "--loss" not in extra:
        extra = (*extra, *LOSS)
    id = f"flag-{command}-{name}"
    return kind(id, command, *extra, expect="either" if id in EITHER else "error")


KINDS: list[Kind] = [
    bad_flag(command, name, extra)
    for command, flags in BAD.items()
    for name, extra in flags.items()
] + TOP_LEVEL
