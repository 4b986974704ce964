"""The Triton-style file `tunectl export KERNEL --format triton` writes, read
by tunefleet.BestTable and served by the decorator without a fleet.

tests/client/data/triton_matmul.autotune.json is what the C++ writer makes
of tests/client/data/triton_matmul.best.json on the H100
(tests/client/export_formats_test.cc checks that): here both files are read
and must answer the same configs.
"""

from __future__ import annotations

import json
import os

import pytest

import tunefleet

SOURCE_DIR = os.environ.get(
    "TUNEFLEET_SOURCE_DIR",
    os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
DATA = os.path.join(SOURCE_DIR, "tests", "client", "data")
TRITON_FILE = os.path.join(DATA, "triton_matmul.autotune.json")
TABLE_FILE = os.path.join(DATA, "triton_matmul.best.json")
H100 = "NVIDIA H100 80GB HBM3 sm_90"
TOOLKIT = "triton-3.1.0"


class Config:
    """Shaped like triton.Config."""

    def __init__(self, kwargs, num_warps=4, num_stages=3):
        self.kwargs, self.num_warps, self.num_stages = kwargs, num_warps, num_stages

    def all_kwargs(self):
        return {**self.kwargs, "num_warps": self.num_warps, "num_stages": self.num_stages}


class FakeJITFunction:
    """Shaped like a Triton JITFunction: arg_names, fn[grid](...) and run()."""
    arg_names = ["a", "b", "c", "M", "N", "K"]

    def __init__(self):
        self.launches = []

    def run(self, *args, grid, warmup, **kwargs):
        self.launches.append(kwargs)


def test_the_file_answers_each_cached_shape_exactly():
    table = tunefleet.BestTable.load(TRITON_FILE)
    assert len(table) == 4
    assert table.kernels() == ["triton_matmul"]
    best = table.lookup("triton_matmul", "M=16,N=14336,K=4096", H100, TOOLKIT)
    assert best.tier == tunefleet.EXACT
    assert best.config == {"BLOCK_M": 16, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8,
                           "num_warps": 4, "num_stages": 3}
    assert best.median_seconds == 2.51e-05
    assert (best.tuned_shape, best.device_model, best.toolkit) == \
        ("M=16,N=14336,K=4096", H100, TOOLKIT)


def test_other_shapes_and_devices_get_the_files_default():
    table = tunefleet.BestTable.load(TRITON_FILE)
    default = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4,
               "num_stages": 4}
    near = table.lookup("triton_matmul", "M=32,N=14336,K=4096", H100)
    assert (near.tier, near.config) == (tunefleet.DEFAULT, default)  # no spec: nothing is near
    other = table.lookup("triton_matmul", "M=16,N=14336,K=4096", "NVIDIA A100-SXM4-80GB sm_80")
    assert (other.tier, other.config) == (tunefleet.DEFAULT, default)
    with pytest.raises(tunefleet.NotFoundError):
        table.lookup("softmax", "M=16,N=14336,K=4096")


def test_the_file_answers_as_the_table_it_was_written_from():
    """The shared case: the C++ writer's output, read here, gives each row's
    config back."""
    triton = tunefleet.BestTable.load(TRITON_FILE)
    table = tunefleet.BestTable.load(TABLE_FILE)
    with open(TABLE_FILE, encoding="utf-8") as f:
        rows = [row for row in json.load(f)["configs"] if row["device_model"] == H100]
    assert len(rows) == len(triton)
    for row in rows:
        want = table.lookup("triton_matmul", row["shape"], H100, TOOLKIT)
        got = triton.lookup("triton_matmul", row["shape"], H100, TOOLKIT)
        assert (got.tier, got.config, got.median_seconds) == \
            (want.tier, want.config, want.median_seconds), row["shape"]


def test_the_decorator_is_served_from_the_file_offline(monkeypatch):
    monkeypatch.setenv("TUNEFLEET_OFFLINE", "1")  # the file answers before the fleet is asked
    jit = FakeJITFunction()
    kernel = tunefleet.autotune(kernel="triton_matmul", key=["M", "N", "K"], device=H100,
                                table=TRITON_FILE)(jit)
    kernel[(1,)]("a", "b", "c", 64, 14336, 1024)
    assert jit.launches[-1] == {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8,
                                "num_warps": 8, "num_stages": 4}
    assert (kernel.last_choice.source, kernel.last_choice.tier) == ("table", tunefleet.EXACT)
    assert kernel.last_choice.median_seconds == 1.87e-05
    kernel[(1,)]("a", "b", "c", 8, 14336, 1024)
    assert kernel.last_choice.tier == tunefleet.DEFAULT
    assert jit.launches[-1]["BLOCK_M"] == 128


def test_the_decorator_picks_the_listed_triton_config(monkeypatch):
    monkeypatch.setenv("TUNEFLEET_BEST_TABLE", TRITON_FILE)
    configs = [Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8}, 4, 4),
               Config({"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 128, "GROUP_M": 1}, 4, 4)]

    def launcher(a, b, c, M, N, K, **config):
        return config
    kernel = tunefleet.autotune(kernel="triton_matmul", configs=configs, key=["M", "N", "K"],
                                device=H100)(launcher)
    assert kernel("a", "b", "c", 1, 14336, 4096) == {
        "BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 128, "GROUP_M": 1, "num_warps": 4,
        "num_stages": 4}
    assert kernel.last_choice.config is configs[1]
    assert kernel.last_choice.source == "table"


def _triton_document(**changes):
    with open(TRITON_FILE, encoding="utf-8") as f:
        document = json.load(f)
    document.update(changes)
    return json.dumps(document)


@pytest.mark.parametrize("changes", [
    {"version": 2},
    {"version": "1"},
    {"key": "M,N,K"},
    {"cache": {"1,2": {"kwargs": {}}}},
    {"cache": {"1,2,x": {"kwargs": {}}}},
    {"cache": {"1,2,3": {"num_warps": 4}}},
    {"cache": {"1,2,3": {"kwargs": {"BLOCK_M": 1.5}}}},
    {"cache": {"1,2,3": {"kwargs": {}, "median_seconds": "fast"}}},
])
def test_what_is_not_a_triton_file_is_an_invalid_argument(changes):
    with pytest.raises(tunefleet.InvalidArgumentError):
        tunefleet.BestTable.parse(_triton_document(**changes))
