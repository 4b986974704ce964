"""Client.submit_sweep against a real coordinator and CPU worker on loopback:
one submission over several shapes, one job and one best per shape."""

from __future__ import annotations

import pytest

import fleet as fleet_mod
import tunefleet

SHAPES = ["M=64,N=128,K=128", "M=128,N=128,K=128", {"M": 256, "N": 128, "K": 128}]


def test_a_sweep_tunes_every_shape_with_its_own_best(client):
    sweep = client.submit_sweep(fleet_mod.MATMUL_DIR, SHAPES, config_set="quick")
    assert sweep.id
    assert [j.shape for j in sweep.jobs] == [
        "M=64,N=128,K=128", "M=128,N=128,K=128", "M=256,N=128,K=128"]
    assert all(j.sweep_id == sweep.id for j in sweep.jobs)
    finals = [client.wait(j.id) for j in sweep.jobs]
    assert [j.state for j in finals] == ["SUCCEEDED"] * 3
    for job in finals:
        best = client.best("matmul", job.shape)
        assert best.tier == tunefleet.EXACT and best.job_id == job.id
    listed = client.jobs(sweep_id=sweep.id)
    assert sorted(j.id for j in listed.jobs) == sorted(j.id for j in sweep.jobs)


def test_a_sweep_with_a_bad_or_repeated_shape_makes_no_job(client):
    before = client.jobs().jobs
    with pytest.raises(tunefleet.InvalidArgumentError):
        client.submit_sweep(fleet_mod.MATMUL_DIR, ["M=64,N=128,K=128", "M=64,N=128"])
    with pytest.raises(tunefleet.InvalidArgumentError) as e:
        client.submit_sweep(fleet_mod.MATMUL_DIR, ["M=64,N=128,K=128", "M=64,N=128,K=128"])
    assert "twice" in e.value.message
    assert [j.id for j in client.jobs().jobs] == [j.id for j in before]
