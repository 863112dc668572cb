"""The forward trace: `run`, `render`, `softmax`, `--focus` and `--dtype`.

`attention.trace_block` computes the block stage by stage into a `Trace`; `focus` and
`softmax_walk` spell one row out by hand; `dtype` traces it by a dtype's casting rule;
`trace_json` writes the trace document and `replay` reads one back, checked field by
field; `words` says what each stage means. Its tables and step mode are in `views/`.
"""
