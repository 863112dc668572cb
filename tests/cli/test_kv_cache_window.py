"""kv-cache prices a sliding window: min(tokens, N) tokens on each local layer, every
token on a global one, against the closed form written here."""

from __future__ import annotations

import json

import jsonschema
import pytest
from helpers import invoke, one_line_error, schema
from hypothesis import given
from hypothesis import strategies as st

from attntrace.decode.kv_memory import PRESETS, Shape, kv_cache_bytes


def _closed_form(
    layers: int,
    local: int,
    kv: int,
    head_dim: int,
    width: int,
    tokens: int,
    window: int,
    batch: int,
) -> int:
    return (
        2
        * kv
        * head_dim
        * width
        * batch
        * (local * min(tokens, window) + (layers - local) * tokens)
    )


@given(
    st.integers(1, 40),
    st.integers(1, 8),
    st.integers(1, 5000),
    st.integers(1, 5000),
    st.integers(1, 4),
)
def test_a_window_caps_each_local_layer(
    layers: int, kv: int, tokens: int, window: int, batch: int
) -> None:
    local = layers // 2
    shape = Shape(layers, kv, kv, 64, window=window, local_layers=local)
    assert kv_cache_bytes(shape, kv, tokens, batch, "fp16") == _closed_form(
        layers, local, kv, 64, 2, tokens, window, batch
    )


def test_gemma3_prices_15_local_layers_and_3_global_ones_apart() -> None:
    gemma = PRESETS["gemma3-270m"]
    assert (
        gemma.layers,
        gemma.heads,
        gemma.kv_heads,
        gemma.head_dim,
        gemma.d_model,
        gemma.context,
        gemma.window,
        gemma.windowed_layers,
    ) == (18, 4, 1, 256, 640, 32768, 512, 15)
    document = json.loads(invoke("kv-cache", "--preset", "gemma3-270m", "--json").stdout)
    jsonschema.validate(document, schema("kv-cache-v1.schema.json"))
    per = 2 * 1 * 256 * 2  # K and V, one K/V head, head dim 256, fp16
    window = document["window"]
    assert window["local_bytes"] == per * 15 * 512
    assert window["global_bytes"] == per * 3 * 32768
    mine = next(v for v in document["variants"] if v["this_model"])
    assert mine["bytes"] == window["bytes"] == per * (15 * 512 + 3 * 32768)
    shown = invoke("kv-cache", "--preset", "gemma3-270m").stdout
    assert "window 512 on 15 of 18 layers" in shown
    for words in ("local", "global", "total", "7.50 MiB", "96.00 MiB", "103.50 MiB"):
        assert words in shown


def test_mistral_stops_growing_at_its_window() -> None:
    def bytes_at(*flags: str) -> int:
        document = json.loads(invoke("kv-cache", "--preset", "mistral-7b", "--json", *flags).stdout)
        return int(next(v["bytes"] for v in document["variants"] if v["this_model"]))

    full = 2 * 32 * 8 * 128 * 2 * 4096
    assert bytes_at() == bytes_at("--tokens", "4096") == bytes_at("--tokens", "9999") == full
    assert bytes_at("--no-window") == full * 8  # 32,768 tokens kept
    assert bytes_at("--window", "1024") == full // 4
    assert "stops growing at 4,096 tokens" in invoke("kv-cache", "--preset", "mistral-7b").stdout


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (("--preset", "gemma3-270m", "--window", "0"), "--window: expected a whole number"),
        (("--preset", "gpt2", "--window", "-3"), "got -3"),
        (("--preset", "gemma3-270m", "--window", "4", "--no-window"), "give one"),
        (("--window", "4"), "--window to apply to"),
        (("--preset", "mistral-7b", "--window", str(10**30)), "at most 2,147,483,647 tokens"),
        (("--preset", "gpt2", "--window", "9" * 4000), "got a 4,000-digit number"),
    ],
    ids=["zero", "negative", "both", "no-model", "too-long", "thousands-of-digits"],
)
def test_bad_windows_are_one_line_and_exit_2(flags: tuple[str, ...], words: str) -> None:
    one_line_error(invoke("kv-cache", *flags), words)


def test_a_window_on_a_preset_without_one_slides_every_layer() -> None:
    document = json.loads(
        invoke("kv-cache", "--preset", "gpt2", "--window", "100", "--json").stdout
    )
    assert document["shape"]["local_layers"] == 12
    assert document["window"]["bytes"] == 2 * 12 * 12 * 64 * 2 * 100


def test_the_longest_window_is_the_longest_a_model_file_takes() -> None:
    shown = invoke("kv-cache", "--preset", "mistral-7b", "--window", str(2**31 - 1))
    assert shown.exit_code == 0, shown.stderr


def _words(*flags: str) -> str:
    result = invoke("kv-cache", *flags)
    assert result.exit_code == 0, result.stderr
    return " ".join(result.stdout.split())


def test_a_window_longer_than_the_tokens_does_not_cut_in() -> None:
    # 32,768 tokens under a 100,000 window: every layer holds every token
    said = _words("--preset", "mistral-7b", "--window", "100000")
    assert "stops growing" not in said
    assert "the window of 100,000 tokens does not cut in at 32,768 tokens" in said
    # below Gemma 3's window of 512, the local layers too hold every token
    said = _words("--preset", "gemma3-270m", "--tokens", "100")
    assert "stops growing" not in said
    assert "does not cut in at 100 tokens" in said
    assert "stops growing at 4,096 tokens" in _words("--preset", "mistral-7b")


@pytest.mark.parametrize(
    ("preset", "below", "past"),
    [
        # 2 (K, V) × 32 layers × 8 K/V heads × 128 × 2 B; every layer slides: nothing past
        ("mistral-7b", 2 * 32 * 8 * 128 * 2, None),
        # 2 × 18 layers × 1 × 256 × 2 B below; past the window only the 3 global layers
        ("gemma3-270m", 2 * 18 * 1 * 256 * 2, 2 * 3 * 1 * 256 * 2),
    ],
)
def test_a_windowed_cache_says_what_a_token_adds(preset: str, below: int, past: int | None) -> None:
    after = "none" if past is None else f"{past:,} bytes"
    assert f"per token (batch 1): {below:,} bytes up to the window, {after} past it" in _words(
        "--preset", preset
    )


def test_a_token_count_past_the_byte_limit_is_one_line_even_when_a_window_caps_the_bytes() -> None:
    # mistral-7b's window holds 4,096 tokens whatever --tokens says, so the byte limit never
    # fired: a count of 4,000 digits was printed whole
    from helpers import invoke, one_line_error

    huge = "9" * 4000
    one_line_error(
        invoke("kv-cache", "--preset", "mistral-7b", "--tokens", huge),
        "--tokens",
        "4,000-digit number",
    )
