"""Attention learning: `grad` (the backward pass), `train` (gradient descent), `scaling`.

`backward.grad_block` is the block's backward pass, `losses` and `objective` the loss a
user names, `grad_trace` the gradients as labelled stages, `grad_focus` one row by hand,
`train` the descent, `scaling` why ÷ √d_k; the `*_json` modules write their documents.
Views in `views/`.
"""
