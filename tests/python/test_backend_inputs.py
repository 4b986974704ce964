"""The spec's own inputs and checker (reference.supply, reference.check,
tolerance.skip_check) in the Python benchmark child
(python/tunefleet/backend/bench_child.py), above its torch seam: the child's
Runner takes the torch module it uses, and here gets a stand-in whose
tensors are lists. What the functions are called with, what is refused, and
how a checker's verdict becomes a trial's outcome; the GPU tier
(tests/gpu/python_backend_test.py, tests/gpu/user_inputs) runs the same on
a device through the fleet."""

import os
import sys
import textwrap
import types
import zipfile

import pytest

from tunefleet.backend import bench_child
from tunefleet.backend import framing
from tunefleet.v1 import bench_child_pb2
from tunefleet.v1 import kernel_spec_pb2
from tunefleet.v1 import types_pb2
from google.protobuf import text_format


class FakeTensor:
    is_cuda = True

    def __init__(self, values):
        self.values = list(values)

    def clone(self):
        return FakeTensor(self.values)


class FakeTorch:
    Tensor = FakeTensor
    int8 = "int8"

    class cuda:  # noqa: N801 (the module's attribute name)
        @staticmethod
        def synchronize():
            pass

    @staticmethod
    def empty(*args, **kwargs):
        return FakeTensor([])


SOURCE = """
    from tests_support_calls import CALLS

    def build(config, shape):
        return None

    def supply(shape, seed):
        import bench_child_test_torch as torch
        CALLS.append(("supply", dict(shape), seed))
        n = shape["n"]
        return [torch.FakeTensor(range(7, 7 + n)), torch.FakeTensor([0] * n)]

    def reference(x, y):
        CALLS.append(("reference", list(x.values)))
        y.values = [2 * v for v in x.values]

    def same(outputs, expected):
        (y,), (want,) = outputs, expected
        if y.values == want.values:
            return None
        if y.values == []:
            return False
        if y.values == [-1]:
            raise AssertionError("tensors differ (an assert_close)")
        return "y is %r, not %r" % (y.values, want.values)
"""

SPEC = """
    name: "doubled" backend: BACKEND_PYTHON sources: "doubled.py" entry: "build"
    problem { name: "n" }
    params { name: "B" values: [1] }
    args { name: "x" tensor { dtype: DTYPE_F32 shape: ["n"] role: ROLE_IN } }
    args { name: "y" tensor { dtype: DTYPE_F32 shape: ["n"] role: ROLE_OUT } }
    reference { entry: "reference" supply: "supply" check: "same" }
    default_config: "B=1"
"""


def _prepare_request(tmp_path, monkeypatch, source=SOURCE):
    """A PrepareRequest for n=3 with `source`'s supply and check, and the list
    of the calls its functions will see (the child keeps the module of an
    artifact it loaded: a test that counts calls anew sends other source)."""
    calls = []
    support = types.ModuleType("tests_support_calls")
    support.CALLS = calls
    fake = types.ModuleType("bench_child_test_torch")
    fake.FakeTensor = FakeTensor
    monkeypatch.setitem(sys.modules, "tests_support_calls", support)
    monkeypatch.setitem(sys.modules, "bench_child_test_torch", fake)
    artifact = tmp_path / "reference.zip"
    with zipfile.ZipFile(artifact, "w") as archive:
        archive.writestr("doubled.py", textwrap.dedent(source))
    request = bench_child_pb2.PrepareRequest()
    text_format.Parse(textwrap.dedent(SPEC), request.kernel)
    request.shape.dims.add(name="n", value=3)
    request.seed = 42
    request.reference_artifact = str(artifact)
    request.limits.add(name="l2_bytes", value=1024)
    return request, calls


@pytest.fixture
def prepared(tmp_path, monkeypatch):
    """A Runner prepared for n=3 with SOURCE's supply and check, and the
    calls its functions saw."""
    request, calls = _prepare_request(tmp_path, monkeypatch)
    runner = bench_child.Runner(FakeTorch)
    runner.prepare(request)
    return runner, calls


def test_supply_makes_the_inputs_and_the_reference_runs_on_them(prepared):
    runner, calls = prepared
    assert calls == [("supply", {"n": 3}, 42), ("reference", [7, 8, 9])]
    assert runner.prepared["expected"][1].values == [14, 16, 18]


def test_the_checker_judges_the_outputs(prepared):
    runner, _ = prepared
    tolerance = kernel_spec_pb2.Tolerance()
    y = runner.prepared["tensors"][1]
    y.values = [14, 16, 18]
    assert runner._check(tolerance) is None
    y.values = [14, 16, 19]
    assert runner._check(tolerance) == "same: y is [14, 16, 19], not [14, 16, 18]"
    y.values = []
    assert runner._check(tolerance) == "same(outputs, expected) returned False"
    y.values = [-1]
    assert runner._check(tolerance) == (
        "same(outputs, expected) raised AssertionError: tensors differ (an assert_close)")
    tolerance.skip_check = True
    assert runner._check(tolerance) is None  # nothing is compared


def test_a_supply_that_returns_the_wrong_arguments_fails_the_prepare(prepared):
    runner, _ = prepared
    request = bench_child_pb2.PrepareRequest()
    text_format.Parse(textwrap.dedent(SPEC), request.kernel)
    request.shape.dims.add(name="n", value=3)
    with pytest.raises(ValueError, match="returned 1 values for the 2 tensor arguments"):
        runner._supplied(lambda shape, seed: [FakeTensor([1])], request,
                         [("x", None, [3]), ("y", None, [3])])
    with pytest.raises(ValueError, match="argument y is list, not a CUDA tensor"):
        runner._supplied(lambda shape, seed: [FakeTensor([1]), [0]], request,
                         [("x", None, [3]), ("y", None, [3])])


def test_a_prepare_with_new_measure_options_only_keeps_the_job(tmp_path, monkeypatch):
    """A finalists round's Prepare (the same job, another budget) neither
    supplies the inputs nor runs the reference again; another job does."""
    request, calls = _prepare_request(tmp_path, monkeypatch, SOURCE + "    # served\n")
    runner = bench_child.Runner(FakeTorch)
    requests = []
    for seed, budget in ((42, 0.1), (42, 0.03), (43, 0.03)):
        child_request = bench_child_pb2.ChildRequest()
        child_request.prepare.CopyFrom(request)
        child_request.prepare.seed = seed
        child_request.prepare.measure.budget_seconds = budget
        requests.append(child_request)
    read_in, write_in = os.pipe()
    read_out, write_out = os.pipe()
    for child_request in requests[:2]:
        framing.write_message(write_in, child_request)
    os.close(write_in)
    assert bench_child.serve(runner, read_in, write_out) == bench_child.EXIT_OK
    assert calls == [("supply", {"n": 3}, 42), ("reference", [7, 8, 9])]
    assert runner.prepared["options"].budget_seconds == pytest.approx(0.03)
    os.close(read_in)
    read_in, write_in = os.pipe()
    framing.write_message(write_in, requests[2])
    os.close(write_in)
    # A new serve loop holds no job: it prepares whatever it is sent.
    assert bench_child.serve(runner, read_in, write_out) == bench_child.EXIT_OK
    assert [c[0] for c in calls] == ["supply", "reference", "supply", "reference"]
    os.close(write_out)
    responses = []
    while True:
        response = bench_child_pb2.ChildResponse()
        if not framing.read_message(read_out, response):
            break
        responses.append(response)
    assert [r.error for r in responses] == ["", "", ""]
    os.close(read_in)
    os.close(read_out)


def test_a_failed_run_ends_the_prepared_job():
    """After a run that failed (a config may have written past its outputs)
    the job is prepared again, whatever the next prepare changes."""
    class Stub:
        prepared = None
        poisoned = False

        def __init__(self):
            self.prepares = self.remeasures = 0

        def prepare(self, request):
            self.prepares += 1
            self.prepared = {}

        def remeasure(self, options):
            self.remeasures += 1

        def run(self, request, result, phases):
            result.status = types_pb2.TRIAL_STATUS_WRONG_RESULT

    requests = []
    for kind, budget in (("prepare", 0.1), ("run", 0), ("prepare", 0.03), ("prepare", 0.02)):
        request = bench_child_pb2.ChildRequest()
        if kind == "prepare":
            request.prepare.seed = 1
            request.prepare.measure.budget_seconds = budget
        else:
            request.run.index = 1
        requests.append(request)
    read_in, write_in = os.pipe()
    read_out, write_out = os.pipe()
    for request in requests:
        framing.write_message(write_in, request)
    os.close(write_in)
    stub = Stub()
    assert bench_child.serve(stub, read_in, write_out) == bench_child.EXIT_OK
    assert (stub.prepares, stub.remeasures) == (2, 1)
    for fd in (read_in, read_out, write_out):
        os.close(fd)
