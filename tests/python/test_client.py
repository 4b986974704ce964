"""tunefleet.Client against a real coordinator and CPU worker on loopback."""

from __future__ import annotations

import json
import os
import tempfile

import pytest

import fleet as fleet_mod
import tunefleet
from conftest import TUNED_SHAPE


def test_submit_and_watch_to_completion(client):
    job = client.submit(fleet_mod.MATMUL_DIR, "M=128,N=256,K=256", config_set="quick",
                        force_retune=True)
    assert job.kernel == "matmul"
    assert job.shape == "M=128,N=256,K=256"
    states = [j.state for j in client.watch(job.id)]
    assert states[-1] == "SUCCEEDED"
    assert all(s in ("QUEUED", "RUNNING") for s in states[:-1])
    final = client.job(job.id)
    assert final.final and final.trials_done == final.trials_total
    assert final.targets[0].best_config
    assert final.top_trials and final.top_trials[0].status == "OK"


def test_a_tuned_key_is_answered_from_the_store(client, tuned_job):
    again = client.submit(fleet_mod.MATMUL_DIR, TUNED_SHAPE, config_set="quick")
    assert again.targets and all(t.cached for t in again.targets)


def test_a_replacing_retune_is_served_and_says_why(client):
    shape = "M=64,N=256,K=128"  # tuned by no other test
    first = client.wait(client.submit(fleet_mod.MATMUL_DIR, shape, config_set="quick").id)
    assert first.targets[0].retune == "first"
    again = client.submit(fleet_mod.MATMUL_DIR, shape, config_set="quick",
                          replace_best=True, replace_reason="new toolkit")
    assert not again.targets[0].cached  # replace_best implies force_retune
    target = client.wait(again.id).targets[0]
    assert target.retune == "forced"
    assert target.replace_reason == "new toolkit"
    assert target.previous_job_id == first.id
    assert target.served_job_id == again.id
    assert client.best("matmul", shape, device_model=target.device_model).job_id == again.id


# tunectl submit's flags: the Client.submit option that stands for each (the
# JobSpec field both set, of the same name), and a value to send.
TUNECTL_SUBMIT_FLAGS = {
    "strategy": ("--strategy", "random"),
    "budget": ("--budget", 2),
    "time_budget_seconds": ("--time-budget", 600),
    "plateau_batches": ("--plateau", 3),
    "config_set": ("--config-set", "quick"),
    "seed": ("--seed", 7),
    "force_retune": ("--force", True),
    "replace_best": ("--replace", True),
    "replace_reason": ("--replace-reason", "python options"),
}
# What a job echoes of its options (the names of both Job and tunectl -o json).
ECHOED = ("kernel", "shape", "state", "strategy", "trials_budget", "time_budget_seconds",
          "plateau_batches", "sweep_id")


def tunectl_argv(options):
    argv = []
    for name, value in options.items():
        flag, _ = TUNECTL_SUBMIT_FLAGS[name]
        argv += [flag] if value is True else [flag, str(value)]
    return argv


def test_submit_sets_the_job_spec_fields_tunectl_submit_sets(fleet, device_model):
    options = {name: value for name, (_, value) in TUNECTL_SUBMIT_FLAGS.items()}
    with tunefleet.Client(fleet.address, insecure=True, deadline=30) as c:
        sent = []
        real_submit = c._stub.SubmitJob
        c._stub.SubmitJob = lambda request, **kw: sent.append(request) or real_submit(request, **kw)
        updates = []
        final = c.submit(fleet_mod.MATMUL_DIR, "M=64,N=128,K=64", device_model=device_model,
                         wait=True, on_update=updates.append, **options)
    (request,) = sent
    for name, value in dict(options, device_model=device_model).items():
        assert getattr(request.spec, name) == value, name
    assert [(d.name, d.value) for d in request.spec.shape.dims] == \
        [("M", 64), ("N", 128), ("K", 64)]
    # wait=True followed the job to its end, as --wait does.
    assert final.state == "SUCCEEDED" and updates[-1] == final and final.final
    # A config set is tuned whole, whatever the strategy; the stop rules stay.
    assert (final.strategy, final.time_budget_seconds, final.plateau_batches) == \
        ("config_set:quick", 600, 3)
    assert final.targets[0].device_model == device_model
    assert final.targets[0].retune in ("first", "forced")
    assert final.stop_reason == "space_exhausted"


def test_submit_and_tunectl_submit_make_the_same_job(fleet, client):
    # A CUDA kernel on a CPU-only fleet: both jobs wait in the queue.
    softmax = os.path.join(fleet_mod.SOURCE_DIR, "kernels", "cuda", "softmax")
    options = {"strategy": "random", "budget": 5, "time_budget_seconds": 100,
               "plateau_batches": 2, "seed": 3, "force_retune": True}
    theirs = json.loads(fleet_mod.tunectl(fleet, "-o", "json", "submit", softmax,
                                          "--shape", "ROWS=64,COLS=32", *tunectl_argv(options)))
    ours = client.submit(softmax, {"ROWS": 64, "COLS": 32}, **options)
    try:
        assert {k: getattr(ours, k) for k in ECHOED} == {k: theirs[k] for k in ECHOED}
        assert ours.state == "QUEUED" and ours.trials_budget == 5
    finally:
        for job_id in (ours.id, theirs["id"]):
            client.cancel(job_id)


def test_submit_options_are_checked(client):
    # As tunectl's --replace-reason needs --replace:
    with pytest.raises(tunefleet.InvalidArgumentError) as e:
        client.submit(fleet_mod.MATMUL_DIR, TUNED_SHAPE, replace_reason="why")
    assert "replace_best" in e.value.message
    with pytest.raises(tunefleet.InvalidArgumentError):
        client.submit(fleet_mod.MATMUL_DIR)  # no shape
    for options, field in [({"strategy": "annealing"}, "strategy"), ({"budget": -1}, "budget"),
                           ({"time_budget_seconds": -1}, "time_budget_seconds"),
                           ({"plateau_batches": -1}, "plateau_batches")]:
        with pytest.raises(tunefleet.InvalidArgumentError) as e:  # the server's check
            client.submit(fleet_mod.MATMUL_DIR, TUNED_SHAPE, **options)
        assert field in e.value.message


def test_best_exact_answers_the_tuned_shape(client, tuned_job, device_model):
    best = client.best("matmul", TUNED_SHAPE, device_model=device_model)
    target = tuned_job.targets[0]
    assert best.tier == tunefleet.EXACT
    assert best.config_text == target.best_config
    assert best.config == tunefleet.shapes.parse(target.best_config)
    assert best.median_seconds > 0
    assert best.tuning_key == target.tuning_key
    assert best.job_id == tuned_job.id
    # How sure: the round that decided it, and the measurements behind it.
    assert best.config_text in [m.config_text for m in best.tie_set]
    assert best.tie_set[0].gap == 0
    assert best.configs_in_round >= len(best.tie_set)
    assert best.measurements >= 1 and best.devices >= 1


def test_best_nearest_answers_another_shape(client, tuned_job, device_model):
    best = client.best("matmul", "M=512,N=256,K=256", device_model=device_model)
    assert best.tier == tunefleet.NEAREST
    assert best.tuned_shape == "M=256,N=256,K=256"
    assert best.config_text == tuned_job.targets[0].best_config


def test_best_default_for_an_untuned_toolkit(client, tuned_job, device_model):
    best = client.best("matmul", TUNED_SHAPE, device_model=device_model,
                       toolkit="no such toolkit")
    assert best.tier == tunefleet.DEFAULT
    assert best.config_text == "BLOCK_M=32,BLOCK_N=64,BLOCK_K=64,UNROLL=1,LOOP_ORDER=0"
    assert best.config["BLOCK_M"] == 32


def test_unknown_names_are_not_found_listing_the_known_ones(client, tuned_job, device_model):
    known_model = f'known device models: "{device_model}"'
    calls = [
        (lambda: client.best("matmull", TUNED_SHAPE), 'known kernels: "matmul"'),
        (lambda: client.best("matmul", TUNED_SHAPE, device_model="no such device"),
         known_model),
        (lambda: client.export("matmull"), 'known kernels: "matmul"'),
        (lambda: client.export("matmul", device_model="no such device"), known_model),
        (lambda: client.jobs(kernel="matmull"), 'known kernels: "matmul"'),
        (lambda: client.jobs(kernel="matmul", device_model="no such device"), known_model),
        (lambda: client.submit(fleet_mod.MATMUL_DIR, TUNED_SHAPE, config_set="quick",
                               device_model="no such device"), known_model),
    ]
    for call, listed in calls:
        with pytest.raises(tunefleet.NotFoundError) as e:
            call()
        assert e.value.code == tunefleet.StatusCode.NOT_FOUND
        assert listed in e.value.message
    page = client.jobs(kernel="matmul", device_model=device_model)
    assert tuned_job.id in [job.id for job in page.jobs]


def test_a_shape_with_a_wrong_dim_lists_the_kernels_dims(client, tuned_job):
    with pytest.raises(tunefleet.InvalidArgumentError) as e:
        client.best("matmul", {"M": 256, "N": 256})
    assert "(its dims: M, N, K)" in e.value.message
    with pytest.raises(tunefleet.InvalidArgumentError) as e:
        client.submit(fleet_mod.MATMUL_DIR, {"M": 256, "N": 256})
    assert "(dims: M, N, K)" in e.value.message


def test_jobs_filters_and_pages(client, tuned_job):
    page = client.jobs(kernel="matmul", state="succeeded")
    assert tuned_job.id in [j.id for j in page.jobs]
    assert all(j.state == "SUCCEEDED" and j.kernel == "matmul" for j in page.jobs)
    with pytest.raises(tunefleet.NotFoundError):  # never submitted here
        client.jobs(kernel="no-such-kernel")
    first = client.jobs(limit=1)
    assert len(first.jobs) == 1 and first.next_page_token
    second = client.jobs(limit=1, page_token=first.next_page_token)
    assert second.jobs[0].id != first.jobs[0].id
    with pytest.raises(tunefleet.InvalidArgumentError):
        client.jobs(state="sleeping")


def test_trials_lists_every_stored_trial(client, tuned_job):
    trials = client.all_trials(tuned_job.id)
    assert len(trials) >= tuned_job.trials_total
    assert {t.status for t in trials} == {"OK"}
    assert all(t.median_seconds > 0 and t.worker_id for t in trials)
    page = client.trials(tuned_job.id, status="ok", page_size=1)
    assert len(page.trials) == 1 and page.next_page_token
    assert client.trials(tuned_job.id, status="crashed").trials == []


def test_workers_lists_the_cpu_worker(client, tuned_job):
    workers = client.workers()
    assert any(w.alive and w.devices and w.devices[0].backend == "CPU" for w in workers)
    assert client.server_version()


def test_unknown_job_is_not_found(client):
    with pytest.raises(tunefleet.NotFoundError) as e:
        client.job("j-no-such-job")
    assert e.value.code == tunefleet.StatusCode.NOT_FOUND
    with pytest.raises(tunefleet.NotFoundError):
        client.trials("j-no-such-job")
    with pytest.raises(tunefleet.NotFoundError):
        list(client.watch("j-no-such-job"))


def test_unknown_kernel_is_not_found(client):
    with pytest.raises(tunefleet.NotFoundError) as e:
        client.best("no_such_kernel", "M=1")
    assert "no_such_kernel" in e.value.message


def test_bad_shapes_are_invalid_arguments(client):
    for shape in ("M=256,N=256", "M=256,N=256,K=0", "M=256,N=256,K=256,Q=1", "M=x"):
        with pytest.raises(tunefleet.InvalidArgumentError) as e:
            client.submit(fleet_mod.MATMUL_DIR, shape)
        assert e.value.code == tunefleet.StatusCode.INVALID_ARGUMENT
    # The coordinator's own check, for a shape that reaches it.
    with pytest.raises(tunefleet.InvalidArgumentError):
        client.best("matmul", {"M": -4, "N": 256, "K": 256})


def test_bad_kernel_directories_fail_before_sending(client):
    with pytest.raises(tunefleet.NotFoundError):
        client.submit("/nonexistent/kernel", TUNED_SHAPE)
    with tempfile.TemporaryDirectory() as bad:
        with open(os.path.join(bad, "kernel.textproto"), "w") as f:
            f.write('name: "broken"\nno_such_field: 1\n')
        with pytest.raises(tunefleet.InvalidArgumentError) as e:
            client.submit(bad, TUNED_SHAPE)
        assert "kernel.textproto:2" in e.value.message
    with pytest.raises(tunefleet.InvalidArgumentError):
        client.submit(fleet_mod.MATMUL_DIR, TUNED_SHAPE, config_set="no-such-set")


def test_an_unreachable_server_is_unavailable():
    with tunefleet.Client("127.0.0.1:1", insecure=True, deadline=5) as c:
        with pytest.raises(tunefleet.UnavailableError) as e:
            c.jobs()
    assert "127.0.0.1:1" in e.value.message


def test_cancel_stops_a_queued_job(client, tuned_job):
    # A CUDA kernel, and the fleet's only worker has a CPU: the job waits in
    # the queue until cancelled.
    job = client.submit(os.path.join(fleet_mod.SOURCE_DIR, "kernels", "cuda", "softmax"),
                        {"ROWS": 64, "COLS": 64})
    assert job.state == "QUEUED"
    cancelled = client.cancel(job.id)
    assert cancelled.state == "CANCELLED"
    assert client.wait(job.id).state == "CANCELLED"


def test_settings_come_from_the_environment(fleet, monkeypatch, tmp_path):
    monkeypatch.setenv("TUNEFLEET_SERVER", fleet.address)
    monkeypatch.setenv("TUNEFLEET_INSECURE", "1")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    with tunefleet.Client() as c:
        assert c.server == fleet.address
        c.workers()
    monkeypatch.delenv("TUNEFLEET_SERVER")
    monkeypatch.delenv("TUNEFLEET_INSECURE")
    config = tmp_path / ".config" / "tunefleet"
    config.mkdir(parents=True)
    (config / "tunectl.conf").write_text(f"# a comment\nserver = {fleet.address}\ninsecure = true\n")
    with tunefleet.Client() as c:
        assert c.server == fleet.address
        c.workers()


def test_a_token_never_goes_over_plaintext(fleet):
    with pytest.raises(tunefleet.InvalidArgumentError):
        tunefleet.Client(fleet.address, insecure=True, token="secret")


@pytest.fixture(scope="module")
def secure_fleet():
    with tempfile.TemporaryDirectory(prefix="tunefleet-pytest-tls-") as data_dir:
        f = fleet_mod.Fleet(data_dir, secure=True)
        f.start_coordinator()
        yield f
        f.stop()


def test_tokens_are_checked_over_tls(secure_fleet, monkeypatch, tmp_path):
    monkeypatch.delenv("TUNEFLEET_TOKEN", raising=False)
    monkeypatch.delenv("TUNEFLEET_TOKEN_FILE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no default token file
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    address, ca = secure_fleet.address, secure_fleet.ca_file
    with tunefleet.Client(address, ca_file=ca) as anonymous:
        with pytest.raises(tunefleet.UnauthenticatedError) as e:
            anonymous.jobs()
        assert e.value.code == tunefleet.StatusCode.UNAUTHENTICATED
    with tunefleet.Client(address, ca_file=ca, token="not-a-token") as wrong:
        with pytest.raises(tunefleet.UnauthenticatedError):
            wrong.workers()
    monkeypatch.setenv("TUNEFLEET_TOKEN_FILE", secure_fleet.admin_token_file)
    monkeypatch.setenv("TUNEFLEET_CA_FILE", ca)
    with tunefleet.Client(address) as admin:
        assert admin.jobs().jobs == []


def test_a_missing_ca_file_is_not_found():
    with pytest.raises(tunefleet.NotFoundError):
        tunefleet.Client("localhost:7070", ca_file="/nonexistent/ca.crt", token="t")
