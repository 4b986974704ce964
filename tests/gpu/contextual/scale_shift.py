"""y = 2x + 1 as two @tunefleet.autotune Triton kernels launched by one
@tunefleet.contextual_autotune function (kernel.textproto)."""

import torch
import triton
import triton.language as tl

import tunefleet


@triton.jit
def _scale(x_ptr, t_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(t_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2.0, mask=mask)


@triton.jit
def _shift(t_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(t_ptr + offsets, mask=mask) + 1.0, mask=mask)


scale = tunefleet.autotune(kernel="scale", key=["n"], device="")(_scale)
shift = tunefleet.autotune(kernel="shift", key=["n"], device="")(_shift)


@tunefleet.contextual_autotune(kernel="scale_shift", key=["n"], device="")
def scale_shift(x, y, n):
    t = torch.empty_like(x)
    scale[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, t, n)
    shift[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](t, y, n)


build = scale_shift.build


def reference(x, y):
    torch.add(x * 2.0, 1.0, out=y)
