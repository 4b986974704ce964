"""The compile step's device target (python/tunefleet/backend/compile.py):
what Triton is told instead of asking CUDA, read from the request's limits."""

from tunefleet.backend import compile as compile_step
from tunefleet.v1 import bench_child_pb2


def request_with(**limits):
    request = bench_child_pb2.PythonCompileRequest()
    for name, value in limits.items():
        request.limits.add(name=name, value=value)
    return request


def test_the_target_is_the_devices_capability_and_warp_size():
    request = request_with(cc_major=9, cc_minor=0, warp_size=32, sm_count=132)
    assert compile_step.device_target(request.limits) == (90, 32)
    request = request_with(cc_major=8, cc_minor=9, warp_size=32)
    assert compile_step.device_target(request.limits) == (89, 32)


def test_a_missing_minor_or_warp_size_takes_the_cuda_default():
    assert compile_step.device_target(request_with(cc_major=10).limits) == (100, 32)


def test_without_a_capability_triton_asks_the_device():
    assert compile_step.device_target(request_with(sm_count=132).limits) is None
    assert compile_step.device_target(request_with().limits) is None
