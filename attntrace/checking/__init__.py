"""Your own attention against attntrace's: `check` and `diff`.

`user_arrays` reads what a person saved, `compare` places each array among the stages
(`layout`), compares within `tolerance` and finds the first divergence; `diagnosis` asks
which of the known mistakes (`mistakes`), recomputed by `recompute`, reproduces it;
`report` holds the result; `diff` compares two traces. Views in `views/`.
"""
