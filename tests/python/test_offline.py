"""What works without a fleet: BestTable's tiers and errors (and the shared
nearest-shape fallback cases of tests/data/nearest_fallback.json), the spec
expressions it evaluates, the package without grpcio, the reading of a
spec's name and default config without protobuf, and the decorator's
Triton calling convention."""

from __future__ import annotations

import json
import math
import os
import pathlib
import re
import subprocess
import sys

import pytest

import tunefleet
import tunefleet.kernel_dir
from tunefleet import spec_expr


def _kernel(params, constraints=("BM <= M && BN <= N",)):
    """A kernels[] entry of gemm with `params` (name -> listed values)."""
    spec = {"name": "gemm", "default_config": "BM=32,BN=32",
            "problem": [{"name": "M"}, {"name": "N"}],
            "params": [{"name": name, "values": [str(v) for v in values]}
                       for name, values in params.items()],
            "constraints": [{"expr": expr} for expr in constraints]}
    return {"name": "gemm", "default_config": "BM=32,BN=32", "problem": ["M", "N"],
            "params": list(params), "spec": {"kernel": spec}}


KERNEL = _kernel({"BM": [16, 32, 64, 128], "BN": [16, 32, 64, 128]})


def row(shape, config, key, device="gpu-a", toolkit="cuda-13.0", seconds=1e-4):
    return {"kernel": "gemm", "shape": shape, "device_model": device, "toolkit": toolkit,
            "config": config, "median_seconds": seconds, "tuning_key": key, "job_id": "j1"}


def table(*rows, kernel=KERNEL, **header):
    document = {"format": "tunefleet.best_configs", "version": 1, "kernels": [kernel],
                "configs": list(rows)}
    document.update(header)
    return tunefleet.BestTable.parse(json.dumps(document))


def test_table_tiers():
    t = table(row("M=64,N=64", "BM=16,BN=16", "k1"), row("M=1024,N=1024", "BM=128,BN=64", "k2"))
    assert len(t) == 2
    exact = t.lookup("gemm", {"N": 64, "M": 64})
    assert (exact.tier, exact.config, exact.tuning_key) == (tunefleet.EXACT, {"BM": 16, "BN": 16}, "k1")
    near = t.lookup("gemm", "M=512,N=2048")
    assert (near.tier, near.tuned_shape, near.median_seconds) == (tunefleet.NEAREST, "M=1024,N=1024", 1e-4)
    assert t.lookup("gemm", "M=64,N=64", "gpu-b").tier == tunefleet.DEFAULT
    assert t.lookup("gemm", "M=64,N=64", toolkit="cuda-12").config_text == "BM=32,BN=32"
    assert t.lookup("gemm", "M=64").tier == tunefleet.DEFAULT  # other dims are never near


def test_a_rows_evidence_says_how_sure_it_is():
    evidence = {"tie_set": [{"config_text": "BM=16,BN=16", "median_seconds": 1e-4},
                            {"config_text": "BM=32,BN=16", "median_seconds": 1.004e-4,
                             "gap": 0.004}],
                "configs_in_round": 5, "rounds": 4, "rounds_cv": 0.003, "measurements": 3,
                "devices": 2, "calibration_seconds": 5e-4}
    sure = dict(row("M=64,N=64", "BM=32,BN=16", "k1"), evidence=evidence)
    best = table(sure).lookup("gemm", "M=64,N=64")
    assert [m.config_text for m in best.tie_set] == ["BM=16,BN=16", "BM=32,BN=16"]
    assert best.tie_set[0].gap == 0 and best.tie_set[1].gap == 0.004
    assert (best.configs_in_round, best.rounds, best.rounds_cv) == (5, 4, 0.003)
    assert (best.measurements, best.devices) == (3, 2)
    assert best.calibration_seconds == 5e-4
    plain = table(row("M=64,N=64", "BM=32,BN=16", "k1")).lookup("gemm", "M=64,N=64")
    assert plain.tie_set == () and plain.measurements == 0
    with pytest.raises(tunefleet.InvalidArgumentError):
        table(dict(sure, evidence={"tie_set": 3}))


def test_table_ties_go_to_the_smallest_key():
    t = table(row("M=128,N=128", "BM=64,BN=64", "kb"), row("M=32,N=32", "BM=16,BN=16", "ka"))
    assert t.lookup("gemm", "M=64,N=64").tuning_key == "ka"


def test_table_serves_no_nearest_config_the_spec_forbids_at_the_asked_shape():
    t = table(row("M=256,N=256", "BM=128,BN=128", "k1"), row("M=1024,N=1024", "BM=32,BN=32", "k2"))
    near = t.lookup("gemm", "M=64,N=64")
    assert (near.tier, near.tuning_key) == (tunefleet.NEAREST, "k2")
    assert near.config == {"BM": 32, "BN": 32}
    assert t.lookup("gemm", "M=16,N=16").tier == tunefleet.DEFAULT  # none fits
    assert t.lookup("gemm", "M=256,N=256").tuning_key == "k1"  # exact


def test_table_without_the_kernels_spec_serves_exact_rows_only():
    t = table(row("M=64,N=64", "BM=16,BN=16", "k1"), kernel={"name": "other", "spec": {}})
    assert t.lookup("gemm", "M=64,N=64").tier == tunefleet.EXACT
    with pytest.raises(tunefleet.NotFoundError):
        t.lookup("gemm", "M=128,N=128")


def test_table_whose_spec_does_not_compile_falls_back_to_the_default():
    broken = _kernel({"BM": [16, 32], "BN": [16, 32]}, constraints=("BM <= M && X",))
    t = table(row("M=64,N=64", "BM=16,BN=16", "k1"), kernel=broken)
    assert t.lookup("gemm", "M=64,N=64").tier == tunefleet.EXACT
    assert t.lookup("gemm", "M=128,N=128").tier == tunefleet.DEFAULT


def _source_dir():
    return os.environ.get("TUNEFLEET_SOURCE_DIR") or \
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


with open(os.path.join(_source_dir(), "tests", "data", "nearest_fallback.json")) as _f:
    SHARED = json.load(_f)
_TIERS = {"EXACT": tunefleet.EXACT, "NEAREST": tunefleet.NEAREST, "DEFAULT": tunefleet.DEFAULT}


def _shared_spec(name):
    """The case kernel's KernelSpec in protobuf's JSON mapping, as a table carries it."""
    entry = SHARED["kernels"][name]
    if "spec" in entry:
        return entry["spec"]
    from google.protobuf import json_format
    bundle = tunefleet.kernel_dir.load(os.path.join(_source_dir(), entry["dir"]))
    return json_format.MessageToDict(bundle.spec, preserving_proto_field_name=True)


@pytest.mark.parametrize("case", SHARED["cases"], ids=lambda case: case["name"])
def test_shared_nearest_fallback_case(case):
    name = case["kernel"]
    rows = [{"kernel": name, "shape": r["shape"], "device_model": r["device_model"],
             "toolkit": r["toolkit"], "config": r["config"], "median_seconds": 1e-3,
             "tuning_key": r["id"], "job_id": "j-" + r["id"]} for r in case["rows"]]
    t = table(*rows, kernel={"name": name, "spec": {"kernel": _shared_spec(name)}})
    query, want = case["query"], case["want"]
    got = t.lookup(name, query["shape"], query["device_model"], query["toolkit"])
    assert got.tier == _TIERS[want["tier"]], got
    if "config" in want:
        assert (got.config, got.tuning_key) == (tunefleet.shapes.parse(want["config"]), "")
        return
    served = want.get("row") or min(want["smallest_key_of"])  # here the ids are the keys
    row = next(r for r in case["rows"] if r["id"] == served)
    assert (got.tuning_key, got.config_text) == (served, row["config"])
    assert got.tuned_shape == row["shape"]


@pytest.mark.parametrize("case", SHARED["expressions"], ids=lambda case: case["expr"])
def test_spec_expressions_evaluate_as_muparser_does(case):
    names = {name: float(value) for name, value in case["names"].items()}
    got = spec_expr.compile_expr(case["expr"], names).evaluate(names)
    want = float(case["value"])
    assert got == want or (math.isnan(got) and math.isnan(want)) or math.isclose(got, want)


@pytest.mark.parametrize("text", ["__import__('os')", "M.real", "[M]", "lambda: 1", "M = 1", "!M",
                                  "M & 1", "open(M)", "M ? 1", "min()", ""])
def test_spec_expressions_are_parsed_not_evaluated_as_python(text):
    with pytest.raises(tunefleet.InvalidArgumentError):
        spec_expr.compile_expr(text, {"M"})


@pytest.mark.parametrize("document", [
    "[]", "not json", '{"format": "other", "version": 1}',
    '{"format": "tunefleet.best_configs"}',
    '{"format": "tunefleet.best_configs", "version": 1, "kernels": [{"name": "x"}]}',
    '{"format": "tunefleet.best_configs", "version": 1, "configs": [{"kernel": "x"}]}',
])
def test_what_is_not_a_table_is_an_invalid_argument(document):
    with pytest.raises(tunefleet.InvalidArgumentError):
        tunefleet.BestTable.parse(document)


def test_newer_tables_are_refused_and_missing_ones_not_found(tmp_path):
    with pytest.raises(tunefleet.InvalidArgumentError) as e:
        table(version=2)
    assert "version 2" in e.value.message
    with pytest.raises(tunefleet.NotFoundError):
        tunefleet.BestTable.load(str(tmp_path / "missing.json"))
    with pytest.raises(tunefleet.InvalidArgumentError):
        table().lookup("gemm", "M=")


def test_the_package_imports_without_grpcio():
    code = ("import sys; sys.modules['grpc'] = None\n"
            "import tunefleet, tunefleet.v1.bench_child_pb2, tunefleet.v1.tuning_service_pb2\n"
            "try:\n"
            "    tunefleet.Client('localhost:1', insecure=True)\n"
            "except tunefleet.FailedPreconditionError as e:\n"
            "    print('no grpcio:', e)\n")
    done = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, env=dict(os.environ), timeout=60)
    assert done.returncode == 0, done.stdout.decode()
    assert b"no grpcio: FAILED_PRECONDITION" in done.stdout


def _kernel_dirs():
    root = os.path.join(_source_dir(), "kernels")
    return sorted(os.path.join(root, backend, name) for backend in os.listdir(root)
                  for name in os.listdir(os.path.join(root, backend))
                  if tunefleet.kernel_dir.is_kernel_dir(os.path.join(root, backend, name)))


@pytest.mark.parametrize("directory", _kernel_dirs(), ids=os.path.basename)
def test_without_protobuf_a_specs_name_and_default_read_as_protobuf_reads_them(directory):
    spec = tunefleet.kernel_dir.load(directory).spec
    with open(os.path.join(directory, "kernel.textproto")) as f:
        scanned = tunefleet.kernel_dir._scan_top_level_strings("kernel.textproto", f.read())
    assert (scanned["name"], scanned.get("default_config", "")) == (spec.name, spec.default_config)


@pytest.mark.parametrize("text", [
    'name: "a" # name: "b"\ndefault_config: "X=1," \'Y=2\'',
    'problem { name: "M" }\nparams < name: "X" values: [1, 2] >\nname: "a"',
    'description: "say \\"name: b\\" {"\nname:"a";default_config:"X=1,Y=2"',
    'sources: ["k.cc", "r.cc"] name: \'a\' reference { sources: "r.cc" entry: "f" }',
])
def test_the_top_level_scan_agrees_with_protobuf_on_tricky_text(text):
    from google.protobuf import text_format
    spec = tunefleet._stubs.kernel_spec_pb2().KernelSpec()
    text_format.Parse(text, spec)
    scanned = tunefleet.kernel_dir._scan_top_level_strings("t", text)
    assert (scanned["name"], scanned.get("default_config", "")) == (spec.name, spec.default_config)


@pytest.mark.parametrize("text", ['name: "a', 'name: "a\nb"', 'problem { name: "M" ',
                                  'name: "a" }'])
def test_text_the_scan_cannot_read_is_an_invalid_argument(text):
    with pytest.raises(tunefleet.InvalidArgumentError):
        tunefleet.kernel_dir._scan_top_level_strings("t", text)


class Config:
    """Shaped like triton.Config."""

    def __init__(self, kwargs, num_warps=4, num_stages=3):
        self.kwargs, self.num_warps, self.num_stages = kwargs, num_warps, num_stages

    def all_kwargs(self):
        return {**self.kwargs, "num_warps": self.num_warps, "num_stages": self.num_stages,
                "num_ctas": 1}


class FakeJITFunction:
    """Shaped like a Triton JITFunction: arg_names, fn[grid](...) and run()."""
    arg_names = ["x", "M", "N", "BM", "BN"]

    def __init__(self):
        self.launches = []

    def run(self, *args, grid, warmup, **kwargs):
        self.launches.append((args, grid, warmup, kwargs))

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)


def test_triton_configs_launch_with_num_warps_and_num_stages():
    t = table(row("M=64,N=64", "BM=64,BN=32,num_warps=8,num_stages=2", "k1"),
              kernel=_kernel({"BM": [32, 64], "BN": [32], "num_warps": [4, 8],
                              "num_stages": [2, 3]}))
    configs = [Config({"BM": 32, "BN": 32}), Config({"BM": 64, "BN": 32}, 8, 2),
               Config({"BM": 64, "BN": 32}, 4, 3)]
    jit = FakeJITFunction()
    kernel = tunefleet.autotune(kernel="gemm", configs=configs, key=["M", "N"],
                                device="gpu-a", table=t)(jit)
    grid = (1,)
    kernel[grid]("x", 64, 64)
    args, launched_grid, warmup, kwargs = jit.launches[-1]
    assert (args, launched_grid, warmup) == (("x", 64, 64), grid, False)
    assert kwargs == {"BM": 64, "BN": 32, "num_warps": 8, "num_stages": 2, "num_ctas": 1}
    assert kernel.last_choice.config is configs[1]
    assert kernel.last_choice.tier == tunefleet.EXACT

    def launcher(x, M, N, **config):  # a plain callable gets kwargs, warps, stages
        return config
    plain = tunefleet.autotune(kernel="gemm", configs=configs, key=["M", "N"],
                               device="gpu-a", table=t)(launcher)
    assert plain("x", 64, 64) == {"BM": 64, "BN": 32, "num_warps": 8, "num_stages": 2}
    assert plain("x", 4096, 4096) == {"BM": 64, "BN": 32, "num_warps": 8, "num_stages": 2}
    assert plain.last_choice.tier == tunefleet.NEAREST


def test_decorator_arguments_are_checked():
    def launcher(x, M, N, **config):
        return config
    with pytest.raises(tunefleet.InvalidArgumentError):
        tunefleet.autotune(kernel="gemm", key=["Q"], device="d")(launcher)
    with pytest.raises(tunefleet.InvalidArgumentError):
        tunefleet.autotune(kernel="gemm", key=[], device="d")(launcher)
    with pytest.raises(tunefleet.InvalidArgumentError):
        tunefleet.autotune(kernel="no/such/dir", key=["M"], device="d")(launcher)
    fn = tunefleet.autotune(kernel="gemm", key=["M", "N"], device="d", table=table())(launcher)
    with pytest.raises(tunefleet.InvalidArgumentError):
        fn("x", 64.5, 64)
    with pytest.raises(TypeError):
        fn("x", 64)
    assert fn("x", 64, N=64) == {"BM": 32, "BN": 32}
    assert fn.__name__ == "launcher"


def test_settings_precedence(tmp_path):
    from tunefleet import settings
    config = tmp_path / "tunectl.conf"
    token_file = tmp_path / "token"
    token_file.write_text("  from-file \n")
    config.write_text(f"server = conf:1\nca_file = conf.pem\ntoken_file = {token_file}\n")
    s = settings.resolve(config_file=str(config), env={})
    assert (s.server, s.ca_file, s.token, s.insecure) == ("conf:1", "conf.pem", "from-file", False)
    env = {"TUNEFLEET_SERVER": "env:2", "TUNEFLEET_CA_FILE": "env.pem", "TUNEFLEET_TOKEN": "t"}
    s = settings.resolve(config_file=str(config), env=env)
    assert (s.server, s.ca_file, s.token) == ("env:2", "env.pem", "t")
    s = settings.resolve("arg:3", token="a", ca_file="arg.pem", config_file=str(config), env=env)
    assert (s.server, s.ca_file, s.token) == ("arg:3", "arg.pem", "a")
    s = settings.resolve(config_file="", env={"TUNEFLEET_INSECURE": "yes", "TUNEFLEET_TOKEN": "t"})
    assert (s.server, s.insecure, s.token) == ("localhost:7070", True, "")  # never in plaintext
    (tmp_path / "tunefleet").mkdir()
    (tmp_path / "tunefleet" / "token").write_text("default-token\n")
    assert settings.resolve(env={"XDG_CONFIG_HOME": str(tmp_path)}).token == "default-token"
    with pytest.raises(tunefleet.NotFoundError):
        settings.resolve(config_file="", env={"TUNEFLEET_TOKEN_FILE": str(tmp_path / "none")})
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(tunefleet.InvalidArgumentError):
        settings.resolve(config_file="", env={"TUNEFLEET_TOKEN_FILE": str(tmp_path / "empty")})
    with pytest.raises(tunefleet.InvalidArgumentError):
        settings.resolve(deadline=0, config_file="", env={})


def _settings_cases():
    source = os.environ.get("TUNEFLEET_SOURCE_DIR", str(pathlib.Path(__file__).parents[2]))
    with open(os.path.join(source, "tests", "data", "client_settings_cases.json")) as f:
        return json.load(f)["cases"]


_ERRORS = {"INVALID_ARGUMENT": tunefleet.InvalidArgumentError,
           "NOT_FOUND": tunefleet.NotFoundError}


@pytest.mark.parametrize("case", _settings_cases(), ids=lambda case: case["name"])
def test_settings_resolve_the_shared_cases_as_the_cpp_library_does(tmp_path, case):
    from tunefleet import settings

    def expand(text):
        return text.replace("$DIR", str(tmp_path))

    for relative, text in case["files"].items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(expand(text))
    env = {"HOME": str(tmp_path / "home")}
    env.update({name: expand(value) for name, value in case["env"].items()})
    if "error" in case:
        with pytest.raises(_ERRORS[case["error"]]):
            settings.resolve(env=env)
        return
    s = settings.resolve(env=env)
    expect = case["expect"]
    assert (s.server, s.insecure, s.ca_file, s.token) == (
        expect["server"], expect["insecure"], expand(expect["ca_file"]), expect["token"])
    assert round(s.deadline * 1000) == expect["deadline_ms"]


@pytest.mark.parametrize("text", ["M", "=1", "M=1,M=2", "M=1.5", "M=x"])
def test_bad_short_forms_are_invalid_arguments(text):
    with pytest.raises(tunefleet.InvalidArgumentError):
        tunefleet.shapes.parse(text)


def test_short_forms_parse_in_order():
    assert list(tunefleet.shapes.parse(" N = 2 , M=1")) == ["N", "M"]
    assert tunefleet.shapes.format({"M": 1, "N": 2}) == "M=1,N=2"
    assert tunefleet.shapes.parse("") == {}


def _coordinator_target_cases():
    source = os.environ.get("TUNEFLEET_SOURCE_DIR", str(pathlib.Path(__file__).parents[2]))
    with open(os.path.join(source, "tests", "data", "coordinator_target_cases.json")) as f:
        return json.load(f)["cases"]


@pytest.mark.parametrize("case", _coordinator_target_cases(),
                         ids=lambda case: case["addresses"] or "empty")
def test_coordinator_lists_parse_as_the_cpp_library_parses_them(case):
    from tunefleet import coordinator_target
    if "error" in case:
        with pytest.raises(tunefleet.InvalidArgumentError, match=re.escape(case["error"])):
            coordinator_target.parse(case["addresses"])
        return
    assert coordinator_target.parse(case["addresses"]) == (case["target"], case["authority"])


def test_the_channel_balances_by_the_tuning_services_health():
    from tunefleet import coordinator_target
    options = dict(coordinator_target.channel_options("10.0.0.1:7070"))
    config = json.loads(options["grpc.service_config"])
    assert config["healthCheckConfig"]["serviceName"] == "tunefleet.v1.TuningService"
    assert config["loadBalancingConfig"] == [{"round_robin": {}}]
    assert options["grpc.default_authority"] == "10.0.0.1:7070"
    assert "grpc.default_authority" not in dict(coordinator_target.channel_options(""))
    # A coordinator that stopped running is dropped once it answers no ping.
    assert options["grpc.keepalive_time_ms"] == 5000
    assert options["grpc.keepalive_permit_without_calls"] == 1


def _shape_range_cases():
    source = os.environ.get("TUNEFLEET_SOURCE_DIR", str(pathlib.Path(__file__).parents[2]))
    with open(os.path.join(source, "tests", "data", "shape_ranges.json")) as f:
        return json.load(f)["cases"]


@pytest.mark.parametrize("case", _shape_range_cases(), ids=lambda case: case["text"])
def test_shape_ranges_expand_as_tunectl_expands_them(case):
    from tunefleet import shapes
    if "error" in case:
        with pytest.raises(tunefleet.InvalidArgumentError, match=re.escape(case["error"])):
            shapes.expand(case["text"])
    else:
        assert shapes.expand(case["text"]) == case["expect"]
