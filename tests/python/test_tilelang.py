"""The TileLang path of the Python backend, wired with a stand-in `tilelang`
module (TileLang itself is not installed where these tests run): a build
function may return what `tilelang.compile` returns (only a callable), the
compile step runs it like a Triton one (a TileLang error is the config's
COMPILE_ERROR, with TileLang's words in the log), and the probe puts
TileLang's version in the worker's toolkit, so in the tuning key."""

import os
import subprocess
import sys
import textwrap

from google.protobuf import text_format

from tunefleet.backend import compile as compile_step
from tunefleet.v1 import bench_child_pb2

STAND_IN = '''
"""A stand-in for TileLang: compile() returns a callable kernel, or raises
as TileLang does when lowering fails."""
__version__ = "0.1.99"
COMPILED = []


class JITKernel:
    def __init__(self, func, target):
        self.func, self.target = func, target

    def __call__(self, *tensors):
        return self.func(*tensors)


def compile(func, out_idx=None, target="auto"):
    if getattr(func, "block", 0) > 128:
        raise RuntimeError("TileLang: shared memory of %d-wide blocks exceeds the limit"
                           % func.block)
    COMPILED.append((func.block, target))
    return JITKernel(func, target)
'''

KERNEL = '''
import tilelang


def program(block):
    def func(x, y):
        pass
    func.block = block
    return func


def build(config, shape):
    return tilelang.compile(program(config["BLOCK"]), target="cuda")


def reference(x, y):
    pass
'''

SPEC = '''
    name: "tl_scale" backend: BACKEND_PYTHON sources: "tl_scale.py" entry: "build"
    problem { name: "n" }
    params { name: "BLOCK" values: [128, 256] }
    args { name: "x" tensor { dtype: DTYPE_F32 shape: ["n"] role: ROLE_IN } }
    args { name: "y" tensor { dtype: DTYPE_F32 shape: ["n"] role: ROLE_OUT } }
    reference { entry: "reference" }
    default_config: "BLOCK=128"
'''


def install_stand_in(root):
    """`tilelang` importable from `root`, with the metadata pip would write."""
    package = root / "tilelang"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(STAND_IN)
    info = root / "tilelang-0.1.99.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tilelang\nVersion: 0.1.99\n")
    return root


def compile_request(tmp_path, block):
    source = tmp_path / "kernel"
    source.mkdir(exist_ok=True)
    (source / "tl_scale.py").write_text(KERNEL)
    request = bench_child_pb2.PythonCompileRequest()
    text_format.Parse(textwrap.dedent(SPEC), request.kernel)
    request.shape.dims.add(name="n", value=1000)
    request.config.values.add(name="BLOCK", value=block)
    request.source_dir = str(source)
    request.output = str(tmp_path / ("artifact-%d.zip" % block))
    return request


def test_a_build_function_that_returns_a_tilelang_kernel_compiles(tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(install_stand_in(tmp_path / "site")))
    monkeypatch.delitem(sys.modules, "tilelang", raising=False)
    assert compile_step.compile_one(compile_request(tmp_path, 128)) == 0
    import tilelang
    assert tilelang.COMPILED == [(128, "cuda")]
    assert os.path.exists(tmp_path / "artifact-128.zip")

    # TileLang refusing a config is that config's compile error.
    assert compile_step.compile_one(compile_request(tmp_path, 256)) == 1
    assert "exceeds the limit" in capsys.readouterr().out


def test_the_probe_names_tilelang_in_the_toolkit(tmp_path):
    site = install_stand_in(tmp_path / "site")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ["PYTHONPATH"]]))
    out = subprocess.run([sys.executable, "-m", "tunefleet.backend.probe"], env=env,
                         capture_output=True, text=True, timeout=120).stdout
    toolkit = [line for line in out.splitlines() if line.startswith("toolkit\t")]
    assert len(toolkit) == 1 and toolkit[0].endswith(" tilelang 0.1.99"), out
    # Without it, nothing is said of it: TileLang is optional.
    out = subprocess.run([sys.executable, "-m", "tunefleet.backend.probe"],
                         capture_output=True, text=True, timeout=120).stdout
    assert "tilelang" not in out
