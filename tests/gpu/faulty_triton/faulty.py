"""A Triton kernel with failure modes chosen by its MODE param, for the
python backend's failure classification (tests/gpu/python_backend_test.py):
  0  correct: y = x + 1
  1  does not compile (a Triton CompilationError: an undefined name)
  2  reads far out of bounds: an illegal address (the context is lost)
  3  spins forever on a flag nothing sets (a hang)
  4  wrong result: y = x + 2
"""

import torch
import triton
import triton.language as tl


@triton.jit
def faulty_kernel(x_ptr, y_ptr, flag_ptr, n, MODE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if MODE == 1:
        x = tl.load(x_ptr + offs, mask=mask) + not_defined_anywhere  # noqa: F821
    elif MODE == 2:
        x = tl.load(x_ptr + offs + (1 << 40))
    elif MODE == 3:
        while tl.load(flag_ptr, volatile=True) == 0:
            pass
        x = tl.load(x_ptr + offs, mask=mask)
    else:
        x = tl.load(x_ptr + offs, mask=mask)
    y = x + (2.0 if MODE == 4 else 1.0)
    tl.store(y_ptr + offs, y, mask=mask)


def build(config, shape):
    mode = config["MODE"]
    block = config["BLOCK"]

    def run(x, y, flag):
        n = x.numel()
        faulty_kernel[(triton.cdiv(n, block),)](x, y, flag, n, MODE=mode, BLOCK=block)

    return run


def reference(x, y, flag):
    torch.add(x, 1.0, out=y)
