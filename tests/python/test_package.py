"""The assembled package (build/python, stubs included), and python/ of a
source checkout (its setup.py generating the stubs from proto/), install
with pip: into a fresh virtual environment (`python3 -m venv --system-site-packages`,
so that Debian's grpcio and protobuf serve as the dependencies), offline
(`pip install --no-build-isolation --no-deps --no-index`), and imports from
there, the generated stubs with it. Skipped where the venv module (Debian:
python3-venv) or pip (python3-pip) is missing."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest

import tunefleet

# The tree the tests import tunefleet from: build/python.
PACKAGE_TREE = os.path.dirname(os.path.dirname(os.path.abspath(tunefleet.__file__)))

# Run by the venv's interpreter, away from the build tree: what it imports
# and what pip recorded.
CHECK_SCRIPT = """
import importlib.metadata, json, os, sys
import tunefleet, tunefleet.backend
from tunefleet.v1 import kernel_spec_pb2, tuning_service_pb2, tuning_service_pb2_grpc
spec = tuning_service_pb2.JobSpec(strategy="random", kernel=kernel_spec_pb2.KernelSpec(name="k"))
assert tuning_service_pb2.JobSpec.FromString(spec.SerializeToString()) == spec
client = tunefleet.Client("127.0.0.1:1", insecure=True)  # makes the gRPC stub; sends nothing
client.close()
root = os.path.dirname(tunefleet.__file__)
files = sorted(os.path.relpath(os.path.join(d, f), root) for d, _, names in os.walk(root)
               for f in names if f.endswith(".py"))
print(json.dumps({"file": tunefleet.__file__, "prefix": sys.prefix, "files": files,
                  "version": tunefleet.__version__,
                  "dist_version": importlib.metadata.version("tunefleet"),
                  "requires": importlib.metadata.requires("tunefleet")}))
"""


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _skip_without_venv_and_pip():
    # Debian ships ensurepip in python3-venv, and pip (with the setuptools
    # and wheel a build needs) in python3-pip.
    if not (_importable("venv") and _importable("ensurepip")):
        pytest.skip("cannot make a venv: the venv module or ensurepip is missing "
                    "(Debian: apt-get install python3-venv)")
    if not _importable("pip"):
        pytest.skip("cannot make a venv: pip is missing (Debian: apt-get install python3-pip)")


def _python_files(tree: str):
    package = os.path.join(tree, "tunefleet")
    return sorted(os.path.relpath(os.path.join(d, f), package)
                  for d, _, names in os.walk(package) for f in names if f.endswith(".py"))


def _pip_install_and_check(tmp_path, tree) -> dict:
    """Installs `tree` with pip, offline, into a fresh venv under tmp_path;
    what CHECK_SCRIPT found there, after checking it was the venv's."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True, env=env, timeout=240)
    python = str(venv / "bin" / "python")
    install = subprocess.run(
        [python, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
         str(tree)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=240)
    assert install.returncode == 0, install.stdout.decode()
    done = subprocess.run([python, "-c", CHECK_SCRIPT], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, env=env, cwd=str(tmp_path), timeout=60)
    assert done.returncode == 0, done.stdout.decode()
    found = json.loads(done.stdout.decode().splitlines()[-1])
    assert found["file"].startswith(str(venv)), found["file"]  # not the build tree
    return found


def test_the_assembled_package_installs_with_pip_and_imports_from_the_venv(tmp_path):
    _skip_without_venv_and_pip()
    assert os.path.isfile(os.path.join(PACKAGE_TREE, "pyproject.toml")), PACKAGE_TREE
    # pip builds inside the tree it is given (build/, *.egg-info): a copy
    # leaves build/python as the build made it.
    tree = tmp_path / "python"
    shutil.copytree(PACKAGE_TREE, tree, ignore=shutil.ignore_patterns(
        "__pycache__", "CMakeFiles", "build", "*.egg-info"))
    found = _pip_install_and_check(tmp_path, tree)
    assert found["version"] == found["dist_version"] == tunefleet.__version__
    # Every source and every stub of the assembled tree, and nothing else.
    assert found["files"] == _python_files(PACKAGE_TREE)
    assert {"v1/tuning_service_pb2.py", "v1/tuning_service_pb2_grpc.py",
            "backend/bench_child.py"} <= set(found["files"])
    requires = found["requires"]
    assert any(r.startswith("grpcio") for r in requires), requires
    assert any(r.startswith("protobuf") for r in requires), requires
    assert any(r.startswith("torch") and "extra == 'torch'" in r for r in requires), requires
    assert any(r.startswith("triton") and "extra == 'triton'" in r for r in requires), requires


def test_the_source_tree_installs_with_pip_generating_its_stubs(tmp_path):
    """`pip install python/` from a checkout: the stubs come from proto/
    through protoc, and the installed files are the assembled tree's."""
    _skip_without_venv_and_pip()
    source = os.environ.get("TUNEFLEET_SOURCE_DIR")
    if not source:
        pytest.skip("TUNEFLEET_SOURCE_DIR is not set (ctest sets it)")
    if shutil.which("protoc") is None or shutil.which("grpc_python_plugin") is None:
        pytest.skip("protoc or grpc_python_plugin is missing "
                    "(Debian: protobuf-compiler protobuf-compiler-grpc)")
    for part in ("python", "proto"):  # a checkout's python/ beside its proto/
        shutil.copytree(os.path.join(source, part), tmp_path / part, ignore=shutil.ignore_patterns(
            "__pycache__", "build", "*.egg-info"))
    found = _pip_install_and_check(tmp_path, tmp_path / "python")
    assert found["version"] == tunefleet.__version__
    assert found["files"] == _python_files(PACKAGE_TREE)
