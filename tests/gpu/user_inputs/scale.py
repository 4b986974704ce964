"""y = 2x in Triton, with the user's input generator and checker named by
kernel.textproto (reference.supply, reference.check)."""

import torch
import triton
import triton.language as tl

FIRST = 7.0  # supply's first element


@triton.jit
def _scale(x_ptr, y_ptr, n, factor, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, x * factor, mask=mask)


def build(config, shape):
    n, block = shape["n"], config["BLOCK"]
    factor = 2.0 if config["MODE"] == 0 else 2.0 * (1 + 1e-4)
    seen = []

    def run(x, y):
        if not seen and x.is_cuda:
            if x[0].item() != FIRST:
                raise RuntimeError("x[0] is %r: not the supplied input" % x[0].item())
            seen.append(True)
        _scale[(triton.cdiv(n, block),)](x, y, n, factor, BLOCK=block)

    return run


def supply(shape, seed):
    x = torch.arange(shape["n"], dtype=torch.float32, device="cuda") + FIRST
    return [x, torch.empty_like(x)]


def reference(x, y):
    torch.mul(x, 2.0, out=y)


def exact(outputs, expected):
    (y,), (want,) = outputs, expected
    if torch.equal(y, want):
        return None
    at = int((y != want).nonzero()[0].item())
    return "y[%d] is %r, not %r" % (at, y[at].item(), want[at].item())
