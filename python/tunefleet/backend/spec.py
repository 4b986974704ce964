"""What the Python backend reads from a KernelSpec: the config and shape as
dicts, the tensor arguments' shapes (spec expressions over dims, params and
derived values), and the kernel's Python modules."""

import hashlib
import importlib.util
import math
import os
import re
import sys
import zipfile

from tunefleet.v1 import kernel_spec_pb2

ROLE_IN = kernel_spec_pb2.ROLE_IN
ROLE_OUT = kernel_spec_pb2.ROLE_OUT
ROLE_INOUT = kernel_spec_pb2.ROLE_INOUT

# DType enum value -> torch dtype attribute name.
TORCH_DTYPES = {
    kernel_spec_pb2.DTYPE_F16: "float16",
    kernel_spec_pb2.DTYPE_BF16: "bfloat16",
    kernel_spec_pb2.DTYPE_F32: "float32",
    kernel_spec_pb2.DTYPE_F64: "float64",
    kernel_spec_pb2.DTYPE_I32: "int32",
    kernel_spec_pb2.DTYPE_I64: "int64",
}

_FUNCTIONS = {
    "cdiv": lambda a, b: -(-a // b),
    "min": min,
    "max": max,
    "floor": math.floor,
    "ceil": math.ceil,
    "log2": math.log2,
    "sqrt": math.sqrt,
    "abs": abs,
}


def config_dict(config):
    return {value.name: int(value.value) for value in config.values}


def shape_dict(shape):
    return {dim.name: int(dim.value) for dim in shape.dims}


def _python_expr(expr):
    """The spec's expression syntax (muparser: &&, ||, !, ?:) as Python."""
    text = expr.replace("&&", " and ").replace("||", " or ")
    text = re.sub(r"!(?!=)", " not ", text)
    # a ? b : c  ->  (b if a else c), innermost first, no nesting in practice.
    match = re.match(r"^(.*?)\?(.*):(.*)$", text)
    if match:
        return "((%s) if (%s) else (%s))" % (
            _python_expr(match.group(2)), match.group(1), _python_expr(match.group(3)))
    return text


def evaluate(expr, names):
    value = eval(_python_expr(expr), {"__builtins__": {}}, dict(_FUNCTIONS, **names))
    return int(value) if float(value).is_integer() else value


def names_of(spec, config, shape, limits=None):
    """Dims, params, device limits and derived values, by name."""
    names = {}
    for limit in limits or []:
        names[limit.name] = limit.value
    names.update(shape_dict(shape))
    names.update(config_dict(config))
    for derived in spec.derived:
        try:
            names[derived.name] = evaluate(derived.expr, names)
        except Exception:  # a derived value only the constraints use
            pass
    return names


def tensor_args(spec, names):
    """[(name, TensorArg, [dims...])] in call order."""
    out = []
    for arg in spec.args:
        if arg.WhichOneof("kind") != "tensor":
            continue
        dims = [int(evaluate(expr, names)) for expr in arg.tensor.shape]
        out.append((arg.name, arg.tensor, dims))
    return out


def load_sources(directory, files, entry, tag):
    """Imports the first of `files` (paths relative to `directory`) as a fresh
    module named after `tag` and returns its attribute `entry`. The directory
    is put first on sys.path so that the kernel's files import each other."""
    if directory not in sys.path:
        sys.path.insert(0, directory)
    path = os.path.join(directory, files[0])
    name = "tunefleet_kernel_%s_%s" % (tag, re.sub(r"\W", "_", files[0][:-3]))
    module = sys.modules.get(name)
    if module is None:
        module_spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        try:
            module_spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    function = getattr(module, entry, None)
    if function is None or not callable(function):
        raise AttributeError("%s defines no function %s" % (files[0], entry))
    return function


def kernel_files(spec, reference):
    if reference and spec.reference.sources:
        return list(spec.reference.sources)
    return list(spec.sources)


def unpack_artifact(artifact, root):
    """Extracts an artifact (a zip of the kernel's sources) once under
    `root`, in a directory named by its content (each file's name and
    CRC-32): every config of a kernel packs the same sources, so they share
    one directory, and load_sources one module whose Triton functions keep
    their in-memory caches from config to config. Returns the directory."""
    with zipfile.ZipFile(artifact) as archive:
        listing = "\n".join("%s %08x" % (info.filename, info.CRC)
                             for info in sorted(archive.infolist(), key=lambda i: i.filename))
        directory = os.path.join(root, hashlib.sha256(listing.encode()).hexdigest()[:32])
        if not os.path.isdir(directory):
            temp = directory + ".tmp%d" % os.getpid()
            archive.extractall(temp)
            try:
                os.rename(temp, directory)
            except OSError:
                pass
    return directory
