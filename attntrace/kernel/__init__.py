"""The shared kernel: a validated model and tokens in, the formulas of the block, the record.

What every capability builds on: the model (`spec`) and the field validators its readers
share (`fields`), the block's operations (`ops`: linear, RoPE, masks, softmax, attention),
the variants (`variants`, `masks`), the read-only trace record (`trace`, `frozen`,
`labels`, `stage_names`), the precision primitives (`precision`, `casting`,
`precision_record`) and files read within a bound (`reading`). Numpy only: no terminal,
no Rich, typer or YAML. docs/architecture.md says what lives here and what it may import.
"""
