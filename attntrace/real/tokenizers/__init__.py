"""The real models' tokenizers in pure Python, id for id as Hugging Face's.

WordPiece (MiniLM), byte-level BPE (SmolLM2) and SentencePiece-style BPE (Gemma 3), and
their tables cached per weight file.
"""
