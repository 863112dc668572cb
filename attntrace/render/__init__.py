"""Human output: every view of a trace (and of decode, kv-cache, softmax), drawn with Rich.

Reads what the core computed, never computes. The tables: ``view`` (the display
choices), ``titles``, ``stage_table`` (a stage fitted to the width, drawn as a ``grid``),
``stage_block`` (title, table or ``equation``, caption from ``explain``), ``document``
(the whole trace) and ``display`` (``print(trace)``, Jupyter). The other views are
chosen in ``present``; the pieces they share: ``wrap``, ``fitted``, ``split_table``,
``numbers``, ``shown`` and ``heatmap``.
"""
