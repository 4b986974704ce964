"""@tunefleet.autotune(kernel=DIR) when the fleet cannot be asked: with
TUNEFLEET_OFFLINE=1, with a fleet that is down (a loopback port nobody
listens on), and where grpcio or protobuf is not installed (a subprocess
whose imports of them fail), it serves the kernel directory's default
config with one warning line saying so and why, and raises nothing."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest

import fleet as fleet_mod
import tunefleet

SPEC_DEFAULT = {"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 64, "UNROLL": 1, "LOOP_ORDER": 0}
SPEC_DEFAULT_TEXT = "BLOCK_M=32,BLOCK_N=64,BLOCK_K=64,UNROLL=1,LOOP_ORDER=0"
MY_DEFAULT = {"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 32, "UNROLL": 1, "LOOP_ORDER": 0}


def launcher(a, M, N, K, **config):
    """Stands for a kernel launcher: returns the config it was called with."""
    return config


def decorate(**options):
    return tunefleet.autotune(kernel=fleet_mod.MATMUL_DIR, key=["M", "N", "K"],
                              **options)(launcher)


def warnings(caplog):
    return [r for r in caplog.records if r.name == "tunefleet" and r.levelno >= logging.WARNING]


def test_offline_serves_the_specs_default_with_one_warning(monkeypatch, caplog):
    monkeypatch.setenv("TUNEFLEET_OFFLINE", "1")
    caplog.set_level(logging.INFO, logger="tunefleet")
    fn = decorate()  # no device=: offline needs none (nor torch)
    assert fn(None, 256, 256, 256) == SPEC_DEFAULT
    choice = fn.last_choice
    assert (choice.tier, choice.source, choice.default_from) == \
        (tunefleet.DEFAULT, "offline", "spec")
    assert fn(None, 256, 256, 256) == SPEC_DEFAULT  # cached: nothing more logged
    (warning,) = warnings(caplog)
    assert warning.getMessage() == (
        "matmul M=256,N=256,K=256 on any device: serving the spec's default config "
        f"{SPEC_DEFAULT_TEXT} because TUNEFLEET_OFFLINE is set")


def test_the_specs_default_yields_to_default_and_to_configs_that_exclude_it(monkeypatch):
    monkeypatch.setenv("TUNEFLEET_OFFLINE", "1")
    fn = decorate(default=MY_DEFAULT)
    assert fn(None, 256, 256, 256) == MY_DEFAULT
    assert fn.last_choice.default_from == "argument"
    fn = decorate(configs=[MY_DEFAULT, SPEC_DEFAULT])  # allowed: preferred to the first
    assert fn(None, 256, 256, 256) == SPEC_DEFAULT
    assert fn.last_choice.config is fn._configs[1]
    fn = decorate(configs=[MY_DEFAULT])  # not allowed: the first allowed config
    assert fn(None, 256, 256, 256) == MY_DEFAULT
    assert fn.last_choice.default_from == "configs"


def test_a_kernel_name_without_its_directory_still_needs_a_default(monkeypatch):
    monkeypatch.setenv("TUNEFLEET_OFFLINE", "1")
    fn = tunefleet.autotune(kernel="matmul", key=["M", "N", "K"])(launcher)
    with pytest.raises(tunefleet.FailedPreconditionError) as e:
        fn(None, 256, 256, 256)
    assert "give default= or configs=" in e.value.message
    fn = tunefleet.autotune(kernel="matmul", kernel_dir=fleet_mod.MATMUL_DIR,
                            key=["M", "N", "K"])(launcher)
    assert fn(None, 256, 256, 256) == SPEC_DEFAULT


def test_a_fleet_that_is_down_serves_the_specs_default(monkeypatch, caplog):
    monkeypatch.delenv("TUNEFLEET_OFFLINE", raising=False)
    monkeypatch.delenv("TUNEFLEET_BEST_TABLE", raising=False)
    monkeypatch.setenv("TUNEFLEET_INSECURE", "1")
    caplog.set_level(logging.INFO, logger="tunefleet")
    server = f"127.0.0.1:{fleet_mod.closed_port()}"
    fn = decorate(device="any", server=server)
    assert fn(None, 256, 256, 256) == SPEC_DEFAULT
    choice = fn.last_choice
    assert (choice.tier, choice.source, choice.default_from) == \
        (tunefleet.DEFAULT, "unreachable", "spec")
    assert "UNAVAILABLE" in choice.reason and server in choice.reason
    (warning,) = warnings(caplog)
    text = warning.getMessage()
    assert text.startswith("matmul M=256,N=256,K=256 on any: serving the spec's default config "
                           f"{SPEC_DEFAULT_TEXT} because the fleet cannot be asked: UNAVAILABLE: ")
    # The failure is remembered: another key is served at once, with its own warning.
    assert fn(None, 512, 256, 256) == SPEC_DEFAULT
    assert fn.last_choice.source == "unreachable"
    assert len(warnings(caplog)) == 2


def test_without_torch_or_device_a_fleet_lookup_serves_the_default(monkeypatch):
    monkeypatch.delenv("TUNEFLEET_OFFLINE", raising=False)
    monkeypatch.delenv("TUNEFLEET_BEST_TABLE", raising=False)
    monkeypatch.setenv("TUNEFLEET_INSECURE", "1")
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch fails
    fn = decorate(server=f"127.0.0.1:{fleet_mod.closed_port()}")
    assert fn(None, 256, 256, 256) == SPEC_DEFAULT
    assert fn.last_choice.source == "unreachable"
    assert "needs device=" in fn.last_choice.reason


# Run in a fresh interpreter: imports of the blocked modules fail as they do
# where the package is not installed.
MISSING_MODULES_SCRIPT = """
import importlib.abc, json, logging, os, sys

BLOCKED = sys.argv[1].split(",")

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in BLOCKED):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
        return None

sys.meta_path.insert(0, Blocker())
logging.basicConfig(stream=sys.stdout, format="LOG %(levelname)s %(message)s")

import tunefleet

def launcher(a, M, N, K, **config):
    return config

fn = tunefleet.autotune(kernel=sys.argv[2], key=["M", "N", "K"], device="any",
                        server=sys.argv[3] or None, **json.loads(sys.argv[4]))(launcher)
config = fn(None, 256, 256, 256)
loaded = sorted(m for m in sys.modules if any(m == b or m.startswith(b + ".") for b in BLOCKED))
print("CHOICE " + json.dumps({"config": config, "source": fn.last_choice.source,
                              "default_from": fn.last_choice.default_from,
                              "reason": fn.last_choice.reason, "loaded": loaded}))
"""


def run_without(blocked, *, offline, default=None):
    """Runs the decorator with `blocked` modules missing; (choice, log lines)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TUNEFLEET_")}
    env.update(PYTHONPATH=os.environ.get("PYTHONPATH", ""), TUNEFLEET_INSECURE="1")
    if offline:
        env["TUNEFLEET_OFFLINE"] = "1"
    server = "" if offline else f"127.0.0.1:{fleet_mod.closed_port()}"
    options = {} if default is None else {"default": default}
    done = subprocess.run(
        [sys.executable, "-c", MISSING_MODULES_SCRIPT, ",".join(blocked), fleet_mod.MATMUL_DIR,
         server, json.dumps(options)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=60)
    output = done.stdout.decode()
    assert done.returncode == 0, output
    assert "ModuleNotFoundError" not in output and "Traceback" not in output, output
    lines = output.splitlines()
    (choice,) = [json.loads(line[len("CHOICE "):]) for line in lines if line.startswith("CHOICE ")]
    assert choice["loaded"] == [], choice  # none of them was imported
    return choice, [line for line in lines if line.startswith("LOG ")]


@pytest.mark.parametrize("blocked", [["grpc", "google.protobuf"], ["google.protobuf"], ["grpc"]],
                         ids=["no-grpcio-no-protobuf", "no-protobuf", "no-grpcio"])
@pytest.mark.parametrize("offline", [True, False], ids=["offline", "fleet-down"])
def test_missing_optional_modules_still_serve_the_specs_default(blocked, offline):
    choice, log = run_without(blocked, offline=offline)
    assert choice["config"] == SPEC_DEFAULT
    assert (choice["source"], choice["default_from"]) == ("offline" if offline else "unreachable",
                                                          "spec")
    if not offline:  # the fleet cannot be asked from here: the module is named
        name = "grpc" if "grpc" in blocked else "google.protobuf"
        assert "FAILED_PRECONDITION" in choice["reason"] and name in choice["reason"], choice
    (line,) = log
    assert line.startswith("LOG WARNING matmul M=256,N=256,K=256 on any: serving the spec's "
                           f"default config {SPEC_DEFAULT_TEXT} because "), line


def test_missing_optional_modules_still_serve_the_given_default():
    choice, log = run_without(["grpc", "google.protobuf"], offline=False, default=MY_DEFAULT)
    assert (choice["config"], choice["default_from"]) == (MY_DEFAULT, "argument")
    (line,) = log
    assert "serving the default= config BLOCK_M=16," in line
