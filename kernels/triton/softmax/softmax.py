"""Row-wise softmax of an fp16 M x N matrix in Triton (fp32 arithmetic),
Y[i, :] = exp(X[i, :] - max) / sum: one program per ROWS rows, the row walked
in BLOCK_N-wide chunks with an online max/sum (one read pass for the
statistics, one read-and-write pass for the output), so any N fits.

build(config, shape) returns a callable on (x, y); reference() is
torch.softmax in fp32.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, M, N, stride_x, stride_y,
                   BLOCK_N: tl.constexpr, ROWS: tl.constexpr):
    first = tl.program_id(0) * ROWS
    for r in tl.static_range(ROWS):
        row = first + r
        if row < M:
            x_row = x_ptr + row * stride_x
            y_row = y_ptr + row * stride_y
            m = tl.full((BLOCK_N,), -float("inf"), tl.float32)
            s = tl.zeros((BLOCK_N,), tl.float32)
            for start in range(0, N, BLOCK_N):
                cols = start + tl.arange(0, BLOCK_N)
                x = tl.load(x_row + cols, mask=cols < N, other=-float("inf")).to(tl.float32)
                m_new = tl.maximum(m, x)
                s = s * tl.exp(m - m_new) + tl.exp(x - m_new)
                s = tl.where(m_new == -float("inf"), 0.0, s)
                m = m_new
            row_max = tl.max(m, 0)
            row_sum = tl.sum(s * tl.exp(m - row_max), 0)
            for start in range(0, N, BLOCK_N):
                cols = start + tl.arange(0, BLOCK_N)
                x = tl.load(x_row + cols, mask=cols < N, other=-float("inf")).to(tl.float32)
                y = tl.exp(x - row_max) / row_sum
                tl.store(y_row + cols, y.to(tl.float16), mask=cols < N)


def build(config, shape):
    block_n = config["BLOCK_N"]
    rows = config["ROWS"]
    num_warps = config["num_warps"]

    def run(x, y):
        M, N = x.shape
        softmax_kernel[(triton.cdiv(M, rows),)](x, y, M, N, x.stride(0), y.stride(0),
                                                BLOCK_N=block_n, ROWS=rows,
                                                num_warps=num_warps)

    return run


def reference(x, y):
    y.copy_(torch.softmax(x.to(torch.float32), dim=-1).to(y.dtype))
