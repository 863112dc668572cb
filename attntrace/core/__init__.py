"""The numpy core: a validated model and tokens in, every stage of attention out.

Pure computation on numpy arrays: no files, no terminal, no Rich, typer or YAML.
docs/architecture.md says what lives here and what it may import.
"""
