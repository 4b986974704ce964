"""Fixtures of the Python tests: one real fleet (a coordinator and a CPU
worker on loopback, plaintext) for the whole session, and a job that tuned
kernels/cpu/matmul at M=N=K=256 on it."""

from __future__ import annotations

import os
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import fleet as fleet_mod  # noqa: E402
import tunefleet  # noqa: E402

TUNED_SHAPE = {"M": 256, "N": 256, "K": 256}


@pytest.fixture(scope="session")
def fleet():
    with tempfile.TemporaryDirectory(prefix="tunefleet-pytest-") as data_dir:
        f = fleet_mod.Fleet(data_dir)
        f.start_coordinator()
        f.start_worker()
        yield f
        f.stop()


@pytest.fixture(scope="session")
def client(fleet):
    with tunefleet.Client(fleet.address, insecure=True, deadline=30) as c:
        yield c


@pytest.fixture(scope="session")
def tuned_job(client):
    """The matmul job at 256^3 (the "quick" config set), watched to its end."""
    job = client.submit(fleet_mod.MATMUL_DIR, TUNED_SHAPE, config_set="quick")
    final = client.wait(job.id)
    assert final.state == "SUCCEEDED", final
    return final


@pytest.fixture(scope="session")
def device_model(client, tuned_job):
    """The CPU worker's device model, as the fleet names it."""
    return tuned_job.targets[0].device_model
