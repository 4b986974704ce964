"""Builds the tunefleet package's gRPC stubs when they are not in the tree.

The package's metadata is pyproject.toml's. The stubs (tunefleet/v1/*_pb2.py,
*_pb2_grpc.py) are generated from ../proto by the protoc and gRPC Python
plugin on PATH (Debian's protobuf-compiler and protobuf-compiler-grpc, the
ones the CMake build uses; a newer protoc's output may need a newer
protobuf runtime), into the build directory: so `pip install python/` from
a source checkout works like `pip install build/python`, whose assembled
tree has them already. An editable install (`pip install -e`) gets no
stubs: use build/python for that. docs/python.md, "Install".
"""

import glob
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_ROOT = os.path.join(HERE, os.pardir, "proto")


class BuildPyWithStubs(build_py):
    """build_py, then protoc's stubs where the tree has none."""

    def run(self):
        super().run()
        if glob.glob(os.path.join(HERE, "tunefleet", "v1", "*_pb2.py")):
            return  # the assembled tree: the stubs were copied with the sources
        protos = sorted(glob.glob(os.path.join(PROTO_ROOT, "tunefleet", "v1", "*.proto")))
        if not protos:
            raise SystemExit(f"tunefleet: no stubs and no .proto files under {PROTO_ROOT}: "
                             "install from a source checkout (python/ beside proto/) or "
                             "from the tree the build assembles (build/python)")
        protoc = shutil.which("protoc")
        plugin = shutil.which("grpc_python_plugin")
        if protoc is None or plugin is None:
            raise SystemExit("tunefleet: generating the gRPC stubs needs protoc and "
                             "grpc_python_plugin (Debian: apt-get install protobuf-compiler "
                             "protobuf-compiler-grpc), or install build/python")
        out = self.build_lib
        os.makedirs(os.path.join(out, "tunefleet", "v1"), exist_ok=True)
        subprocess.run([protoc, "-I", PROTO_ROOT, f"--python_out={out}",
                        f"--grpc_python_out={out}",
                        f"--plugin=protoc-gen-grpc_python={plugin}", *protos], check=True)
        open(os.path.join(out, "tunefleet", "v1", "__init__.py"), "a").close()


setup(cmdclass={"build_py": BuildPyWithStubs})
