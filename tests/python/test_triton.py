"""@tunefleet.autotune on a real Triton kernel (a GPU with torch and triton;
skipped elsewhere): fn[grid](...) launches the JITFunction with the table's
config, num_warps included, and the device model comes from torch."""

from __future__ import annotations

import json

import pytest

import tunefleet

torch = pytest.importorskip("torch", reason="no GPU with triton: torch is not installed")
triton = pytest.importorskip("triton", reason="no GPU with triton: triton is not installed")
if not torch.cuda.is_available():
    pytest.skip("no GPU with triton: torch sees no CUDA device", allow_module_level=True)

import triton.language as tl  # noqa: E402


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def device_model():
    major, minor = torch.cuda.get_device_capability()
    return f"{torch.cuda.get_device_name()} sm_{major}{minor}"


def table_for(model):
    spec = {"name": "vector_add", "default_config": "BLOCK=128,num_warps=4",
            "problem": [{"name": "N"}],
            "params": [{"name": "BLOCK", "values": ["128", "1024"]},
                       {"name": "num_warps", "values": ["4", "8"]}]}
    kernel = {"name": "vector_add", "default_config": "BLOCK=128,num_warps=4",
              "spec": {"kernel": spec}}
    row = {"kernel": "vector_add", "shape": "N=4096", "device_model": model,
           "toolkit": "triton", "config": "BLOCK=1024,num_warps=8", "median_seconds": 4e-6,
           "tuning_key": "k-vector-add"}
    return tunefleet.BestTable.parse(json.dumps({
        "format": "tunefleet.best_configs", "version": 1, "kernels": [kernel],
        "configs": [row]}))


def test_a_triton_kernel_launches_with_the_fleets_config():
    configs = [triton.Config({"BLOCK": 128}, num_warps=4),
               triton.Config({"BLOCK": 1024}, num_warps=8)]
    kernel = tunefleet.autotune(kernel="vector_add", configs=configs, key={"n": "N"},
                                table=table_for(device_model()))(add_kernel)
    for n in (4096, 5000):
        x = torch.rand(n, device="cuda")
        y = torch.rand(n, device="cuda")
        out = torch.empty_like(x)
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
        kernel[grid](x, y, out, n)
        torch.cuda.synchronize()
        assert torch.equal(out, x + y)
        assert kernel.last_choice.config is configs[1]
        assert kernel.last_choice.launch_kwargs["num_warps"] == 8
    assert [c.tier for c in kernel.cache.values()] == [tunefleet.EXACT, tunefleet.NEAREST]
