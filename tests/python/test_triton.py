"""@tunefleet.autotune on a real Triton kernel (a GPU with torch and triton;
skipped elsewhere): fn[grid](...) launches the JITFunction with the table's
config, num_warps included, and the device model comes from torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys

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


def test_the_compile_step_warms_a_kernel_without_a_cuda_context(tmp_path):
    """The worker's compile step (the one-request form of
    tunefleet.backend.compile) compiles fused_moe into TRITON_CACHE_DIR for
    this device's target without creating a CUDA context: contexts are made
    one at a time by the driver, and a host's compile servers all start
    their first compile together."""
    from google.protobuf import text_format
    from tunefleet.v1 import bench_child_pb2

    source = os.path.join(os.environ.get("TUNEFLEET_SOURCE_DIR", os.path.join(
        os.path.dirname(__file__), "..", "..")), "kernels", "triton", "fused_moe")
    request = bench_child_pb2.PythonCompileRequest(source_dir=source,
                                                   output=str(tmp_path / "artifact.zip"))
    with open(os.path.join(source, "kernel.textproto")) as f:
        text_format.Parse(f.read(), request.kernel)
    for name, value in (("M", 16), ("N", 256), ("K", 512), ("E", 4), ("TOPK", 2)):
        request.shape.dims.add(name=name, value=value)
    config = dict(BLOCK_SIZE_M=16, BLOCK_SIZE_N=64, BLOCK_SIZE_K=64, GROUP_SIZE_M=1,
                  num_warps=4, num_stages=3)
    for name, value in config.items():
        request.config.values.add(name=name, value=value)
    major, minor = torch.cuda.get_device_capability()
    for name, value in (("cc_major", major), ("cc_minor", minor), ("warp_size", 32),
                        ("max_smem_per_block_optin", 232448)):
        request.limits.add(name=name, value=value)
    path = tmp_path / "request.pb"
    path.write_bytes(request.SerializeToString())
    cache = tmp_path / "triton"
    env = dict(os.environ, TRITON_CACHE_DIR=str(cache))
    done = subprocess.run([sys.executable, "-m", "tunefleet.backend.compile", str(path)],
                          env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warmed in" in done.stdout, done.stdout
    assert "CUDA context" not in done.stdout, done.stdout
    assert list(cache.rglob("fused_moe_kernel.cubin")), sorted(str(p) for p in cache.rglob("*"))


def compile_artifact(tmp_path, name, kernel_dir, shape, config, reference):
    """A fused_moe artifact built by the worker's compile step (one request)."""
    from google.protobuf import text_format
    from tunefleet.v1 import bench_child_pb2

    request = bench_child_pb2.PythonCompileRequest(source_dir=kernel_dir, reference=reference,
                                                   output=str(tmp_path / f"{name}.zip"))
    with open(os.path.join(kernel_dir, "kernel.textproto")) as f:
        text_format.Parse(f.read(), request.kernel)
    for dim, value in shape.items():
        request.shape.dims.add(name=dim, value=value)
    for param, value in config.items():
        request.config.values.add(name=param, value=value)
    path = tmp_path / f"{name}.pb"
    path.write_bytes(request.SerializeToString())
    done = subprocess.run([sys.executable, "-m", "tunefleet.backend.compile", str(path)],
                          env=dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "triton")),
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    return request


def test_the_benchmark_child_calibrates_every_measurement(tmp_path):
    """docs/measurement.md, Calibration: the child probes the SM clock after
    every sample, and the measurement carries the time a million cycles took
    at those clocks (about 1 / MHz seconds)."""
    from tunefleet.backend import bench_child
    from tunefleet.v1 import bench_child_pb2, types_pb2

    kernel_dir = os.path.join(os.environ.get("TUNEFLEET_SOURCE_DIR", os.path.join(
        os.path.dirname(__file__), "..", "..")), "kernels", "triton", "fused_moe")
    shape = dict(M=16, N=256, K=512, E=4, TOPK=2)
    config = dict(BLOCK_SIZE_M=16, BLOCK_SIZE_N=64, BLOCK_SIZE_K=64, GROUP_SIZE_M=1,
                  num_warps=4, num_stages=3)
    reference = compile_artifact(tmp_path, "reference", kernel_dir, shape, {}, True)
    candidate = compile_artifact(tmp_path, "config", kernel_dir, shape, config, False)

    runner = bench_child.Runner(torch)
    prepare = bench_child_pb2.PrepareRequest(kernel=reference.kernel, shape=reference.shape,
                                             seed=1, reference_artifact=reference.output)
    prepare.measure.budget_seconds = 0.05
    runner.prepare(prepare)
    result = types_pb2.TrialResult()
    runner.run(bench_child_pb2.RunRequest(index=0, config=candidate.config,
                                          artifact=candidate.output),
               result, bench_child_pb2.TrialPhases())
    assert result.status == types_pb2.TRIAL_STATUS_OK, result.error
    assert result.measurement.median_seconds > 0
    assert result.measurement.calibration_seconds > 0, result.measurement
    mhz = 1 / result.measurement.calibration_seconds
    print("median %.2f us at %.0f MHz" % (result.measurement.median_seconds * 1e6, mhz))
    assert 500 < mhz < 5000, result.measurement
