"""Prints what the worker daemon needs to know about this interpreter, one
record per line, tab-separated:
  toolkit  python 3.12.3 triton 3.4.0 torch 2.8.0 [tilelang 0.1.6]
  path     <a directory the interpreter reads: prefix, stdlib, site-packages>
  device   <GPU UUID>  <model>  <driver>  name=value,...
Devices are listed only with `devices` on the command line (it initializes
CUDA); without torch or a GPU none is listed and `note` says why."""

import os
import platform
import sys
import sysconfig


def _version(module_name):
    try:
        module = __import__(module_name)
        return getattr(module, "__version__", "unknown").split("+")[0]
    except Exception:
        return None


# Kernel languages a build function may use besides Triton: part of the
# toolkit (so of the tuning key) where installed, never required.
OPTIONAL = ("tilelang",)


def _installed_version(distribution):
    """The version of an installed distribution, read from its metadata
    without importing it (TileLang's import loads TVM); None if absent."""
    try:
        from importlib import metadata
        return metadata.version(distribution).split("+")[0]
    except Exception:
        return None


def _paths():
    seen = []
    candidates = [sys.prefix, sys.base_prefix, sys.exec_prefix,
                  os.path.dirname(os.path.realpath(sys.executable))]
    for key in ("stdlib", "platstdlib", "purelib", "platlib", "include"):
        try:
            candidates.append(sysconfig.get_paths()[key])
        except KeyError:
            pass
    # sys.path[0] of `python -m` is the working directory: not the
    # interpreter's.
    cwd = os.getcwd()
    candidates.extend(p for p in sys.path if p and os.path.isabs(p) and p != cwd)
    for path in candidates:
        real = os.path.realpath(path)
        for p in (path, real):
            if os.path.exists(p) and p not in seen:
                seen.append(p)
    return seen


def _devices():
    import torch
    if not torch.cuda.is_available():
        print("note\tno CUDA device visible to torch")
        return
    driver = ""
    try:
        import subprocess
        driver = "nvidia " + subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30).stdout.split()[0]
    except Exception:
        pass
    for index in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(index)
        uuid = str(getattr(props, "uuid", index))
        if not uuid.startswith("GPU-"):
            uuid = "GPU-" + uuid
        limits = {
            "max_threads_per_block": 1024,
            "max_smem_per_block": 49152,
            "max_smem_per_block_optin": getattr(props, "shared_memory_per_block_optin", 49152),
            "smem_per_sm": getattr(props, "shared_memory_per_multiprocessor", 0),
            "regs_per_block": getattr(props, "regs_per_multiprocessor", 65536),
            "regs_per_sm": getattr(props, "regs_per_multiprocessor", 65536),
            "max_threads_per_sm": getattr(props, "max_threads_per_multi_processor", 2048),
            "sm_count": props.multi_processor_count,
            "l2_bytes": getattr(props, "L2_cache_size", 0),
            "warp_size": getattr(props, "warp_size", 32),
            "cc_major": props.major,
            "cc_minor": props.minor,
            "global_mem_bytes": props.total_memory,
        }
        model = "%s sm_%d%d" % (props.name, props.major, props.minor)
        print("device\t%s\t%s\t%s\t%s" % (uuid, model, driver, ",".join(
            "%s=%d" % (k, int(v)) for k, v in limits.items())))


def main():
    parts = ["python " + platform.python_version()]
    missing = []
    for name in ("triton", "torch"):
        version = _version(name)
        if version is None:
            missing.append(name)
        else:
            parts.append("%s %s" % (name, version))
    for name in OPTIONAL:
        version = _installed_version(name)
        if version is not None:
            parts.append("%s %s" % (name, version))
    print("toolkit\t" + " ".join(parts))
    if missing:
        print("note\tnot importable: " + ", ".join(missing))
    for path in _paths():
        print("path\t" + path)
    if "devices" in sys.argv[1:] and not missing:
        try:
            _devices()
        except Exception as error:  # no driver, no GPU
            print("note\t%s" % str(error).replace("\n", " "))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
