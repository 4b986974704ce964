"""Client.submit_sweep against a real coordinator and CPU worker on loopback:
one submission over several shapes, one job and one best per shape; and
Client.submit given several shapes or a shapes file, as tunectl submit is
given --shape twice or --shapes-file."""

from __future__ import annotations

import json
import os

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


def test_submit_with_a_list_of_shapes_is_a_sweep_and_waits_for_every_job(client):
    shapes = ["M=32,N=64,K=64", {"M": 32, "N": 128, "K": 64}]
    updates = []
    sweep = client.submit(fleet_mod.MATMUL_DIR, shapes, strategy="random", budget=2, seed=5,
                          plateau_batches=4, wait=True, on_update=updates.append)
    assert isinstance(sweep, tunefleet.Sweep)
    assert [j.shape for j in sweep.jobs] == ["M=32,N=64,K=64", "M=32,N=128,K=64"]
    assert all(j.state == "SUCCEEDED" and j.sweep_id == sweep.id for j in sweep.jobs)
    assert all((j.strategy, j.trials_budget, j.plateau_batches) == ("random", 2, 4)
               for j in sweep.jobs)
    assert {u.id for u in updates if u.final} == {j.id for j in sweep.jobs}
    assert client.wait(sweep) == sweep  # final already: the same states


def test_a_shapes_file_is_read_as_tunectl_reads_it(fleet, client, tmp_path):
    # A CUDA kernel on a CPU-only fleet: the jobs wait in the queue.
    softmax = os.path.join(fleet_mod.SOURCE_DIR, "kernels", "cuda", "softmax")
    path = tmp_path / "shapes"
    path.write_text("# a sweep\nROWS=32,COLS=64   # first\n\n  ROWS=64,COLS=32\n")
    theirs = json.loads(fleet_mod.tunectl(fleet, "-o", "json", "submit", softmax,
                                          "--shapes-file", str(path), "--budget", "3",
                                          "--strategy", "random"))
    ours = client.submit(softmax, shapes_file=str(path), budget=3, strategy="random")
    also = client.submit(softmax, "ROWS=16,COLS=16", shapes_file=str(path))  # --shape first
    try:
        assert [j.shape for j in ours.jobs] == [j["shape"] for j in theirs["jobs"]] == \
            ["ROWS=32,COLS=64", "ROWS=64,COLS=32"]
        assert [(j.strategy, j.trials_budget) for j in ours.jobs] == \
            [(j["strategy"], j["trials_budget"]) for j in theirs["jobs"]] == [("random", 3)] * 2
        assert [j.shape for j in also.jobs] == [
            "ROWS=16,COLS=16", "ROWS=32,COLS=64", "ROWS=64,COLS=32"]
    finally:
        for job_id in [j.id for j in ours.jobs + also.jobs] + [j["id"] for j in theirs["jobs"]]:
            client.cancel(job_id)
    with pytest.raises(tunefleet.NotFoundError):
        client.submit(softmax, shapes_file=str(tmp_path / "missing"))
    (tmp_path / "empty").write_text("# nothing\n\n")
    with pytest.raises(tunefleet.InvalidArgumentError):
        client.submit_sweep(softmax, shapes_file=str(tmp_path / "empty"))


def test_a_range_in_one_shape_is_a_sweep_as_tunectl_makes_it(fleet, client):
    # A CUDA kernel on a CPU-only fleet: the jobs wait in the queue.
    softmax = os.path.join(fleet_mod.SOURCE_DIR, "kernels", "cuda", "softmax")
    text = "ROWS=32,64,...,128,COLS=512,1024"
    theirs = json.loads(fleet_mod.tunectl(fleet, "-o", "json", "submit", softmax, "--shape",
                                          text, "--budget", "3", "--strategy", "random"))
    ours = client.submit(softmax, text, budget=3, strategy="random")
    try:
        assert isinstance(ours, tunefleet.Sweep)
        assert [j.shape for j in ours.jobs] == [j["shape"] for j in theirs["jobs"]] == [
            "ROWS=32,COLS=512", "ROWS=32,COLS=1024", "ROWS=64,COLS=512", "ROWS=64,COLS=1024",
            "ROWS=96,COLS=512", "ROWS=96,COLS=1024", "ROWS=128,COLS=512", "ROWS=128,COLS=1024"]
    finally:
        for job_id in [j.id for j in ours.jobs] + [j["id"] for j in theirs["jobs"]]:
            client.cancel(job_id)
