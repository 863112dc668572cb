"""The model file: YAML or JSON in, a checked ModelSpec out (and back, for ``train --save``).

Parsing (``parse``, ``yaml_file``), the keys (``model_file``, ``model_matrices``,
``model_variants``, ``npy_files``), what loading takes (``model_budget``), ``run --set``
edits (``edits``, ``edit_syntax``), the shipped samples and the writer.
docs/model-file.md is the contract.
"""
