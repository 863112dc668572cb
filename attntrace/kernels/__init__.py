"""How real kernels compute attention: FlashAttention's tiles and the online softmax.

`flash` is the tiled forward pass (v1 and v2) with its running max and sum, `flash_report`
its result beside the ordinary output, `online_softmax` the one-pass softmax; the float16
and bfloat16 casting rule itself is the kernel's (`attntrace.kernel.casting`). Views in
`views/`.
"""
