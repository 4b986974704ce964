"""@tunefleet.autotune with a plain fake kernel callable, against the real
fleet of conftest.py (lookups, cache, fallbacks, submit on miss, tables)."""

from __future__ import annotations

import importlib
import json
import logging
import threading
import time
import types

import pytest

import fleet as fleet_mod
import tunefleet
import tunefleet.client
from conftest import TUNED_SHAPE

SPEC_DEFAULT = {"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 64, "UNROLL": 1, "LOOP_ORDER": 0}
MY_DEFAULT = {"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 32, "UNROLL": 1, "LOOP_ORDER": 0}


class CountingClient(tunefleet.Client):
    """A real client that counts the lookups it sends."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.lookups = 0

    def best(self, *args, **kwargs):
        self.lookups += 1
        return super().best(*args, **kwargs)


@pytest.fixture
def counting(fleet):
    with CountingClient(fleet.address, insecure=True) as c:
        yield c


def fake_matmul(a, b, M, N, K, *, BLOCK_M, BLOCK_N, BLOCK_K, UNROLL, LOOP_ORDER):
    """Stands for a kernel launcher: returns what it was called with."""
    return dict(M=M, N=N, K=K, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                UNROLL=UNROLL, LOOP_ORDER=LOOP_ORDER)


def decorate(device, **options):
    return tunefleet.autotune(kernel="matmul", key=["M", "N", "K"], device=device,
                              **options)(fake_matmul)


def config_of(call):
    return {k: v for k, v in call.items() if k not in ("M", "N", "K")}


def test_first_call_asks_the_fleet_then_the_cache_answers(
        counting, tuned_job, device_model, caplog):
    caplog.set_level(logging.INFO, logger="tunefleet")
    fn = decorate(device_model, client=counting)
    best = tunefleet.shapes.parse(tuned_job.targets[0].best_config)
    assert config_of(fn(None, None, 256, 256, 256)) == best
    assert fn.last_choice.tier == tunefleet.EXACT
    assert fn.last_choice.source == "fleet"
    assert fn.last_choice.tuning_key == tuned_job.targets[0].tuning_key
    for _ in range(3):
        assert config_of(fn(None, None, M=256, N=256, K=256)) == best
    assert counting.lookups == 1  # the server is not asked again for a key
    lines = [r.getMessage() for r in caplog.records if r.name == "tunefleet"]
    assert len(lines) == 1 and "exact" in lines[0] and "M=256,N=256,K=256" in lines[0]

    assert config_of(fn(None, None, 512, 256, 256)) == best
    assert fn.last_choice.tier == tunefleet.NEAREST
    assert counting.lookups == 2
    assert set(fn.cache) == {(256, 256, 256), (512, 256, 256)}


def test_the_fleets_default_when_nothing_is_tuned(counting, tuned_job, device_model):
    fn = decorate(device_model, client=counting, toolkit="no such toolkit")
    assert config_of(fn(None, None, 256, 256, 256)) == SPEC_DEFAULT
    assert fn.last_choice.tier == tunefleet.DEFAULT
    fn = decorate(device_model, client=counting, toolkit="no such toolkit",
                  default=MY_DEFAULT)
    assert config_of(fn(None, None, 256, 256, 256)) == MY_DEFAULT


def test_a_device_the_fleet_does_not_know_takes_the_given_default(counting, tuned_job):
    fn = decorate("no such device", client=counting, default=MY_DEFAULT)
    assert config_of(fn(None, None, 256, 256, 256)) == MY_DEFAULT
    assert fn.last_choice.tier == tunefleet.DEFAULT
    assert 'device_model "no such device" names no device model' in fn.last_choice.reason
    with pytest.raises(tunefleet.FailedPreconditionError) as e:
        decorate("no such device", client=counting)(None, None, 256, 256, 256)
    assert "give default= or configs=" in e.value.message


def test_key_arguments_map_to_the_specs_dims(counting, tuned_job, device_model):
    def launcher(x, rows, cols, depth, **config):
        return config
    fn = tunefleet.autotune(kernel="matmul", key={"rows": "M", "cols": "N", "depth": "K"},
                            device=device_model, client=counting)(launcher)
    fn(None, 256, 256, 256)
    assert fn.last_choice.tier == tunefleet.EXACT
    assert fn.last_choice.shape == TUNED_SHAPE


def test_configs_and_prune_limit_what_the_fleet_may_pick(counting, tuned_job, device_model):
    best = tunefleet.shapes.parse(tuned_job.targets[0].best_config)
    other = dict(MY_DEFAULT)
    fn = decorate(device_model, client=counting, configs=[other, best])
    assert config_of(fn(None, None, 256, 256, 256)) == best
    assert fn.last_choice.config is fn._configs[1]  # the listed object itself

    def drop_the_best(configs, named):
        assert named["N"] == 256  # the call's arguments, by name
        return [c for c in configs if c != best]
    pruned = decorate(device_model, client=counting, configs=[other, best],
                      prune=drop_the_best)
    assert config_of(pruned(None, None, 256, 256, 256)) == other
    assert pruned.last_choice.tier == tunefleet.DEFAULT
    assert "not among the allowed configs" in pruned.last_choice.reason


def test_offline_uses_the_default_without_asking(counting, monkeypatch):
    monkeypatch.setenv("TUNEFLEET_OFFLINE", "1")
    fn = decorate("any", client=counting, default=MY_DEFAULT)
    assert config_of(fn(None, None, 256, 256, 256)) == MY_DEFAULT
    assert fn.last_choice.tier == tunefleet.DEFAULT
    assert fn.last_choice.source == "offline"
    assert counting.lookups == 0
    configs = [SPEC_DEFAULT, MY_DEFAULT]
    fn = decorate("any", client=counting, configs=configs)  # the first listed
    assert config_of(fn(None, None, 256, 256, 256)) == SPEC_DEFAULT


def test_offline_needs_no_device_model(monkeypatch):
    monkeypatch.setenv("TUNEFLEET_OFFLINE", "1")
    fn = tunefleet.autotune(kernel="matmul", key=["M", "N", "K"], default=MY_DEFAULT)(fake_matmul)
    assert config_of(fn(None, None, 256, 256, 256)) == MY_DEFAULT


def test_without_a_default_offline_is_an_error(monkeypatch):
    monkeypatch.setenv("TUNEFLEET_OFFLINE", "1")
    fn = decorate("any")
    with pytest.raises(tunefleet.FailedPreconditionError):
        fn(None, None, 256, 256, 256)


def test_an_unreachable_fleet_is_asked_once(monkeypatch):
    lookups = []
    real_best = tunefleet.client.Client.best

    def counted(self, *args, **kwargs):
        lookups.append(args)
        return real_best(self, *args, **kwargs)
    monkeypatch.setattr(tunefleet.client.Client, "best", counted)
    monkeypatch.setenv("TUNEFLEET_INSECURE", "1")
    fn = decorate("any", server=f"127.0.0.1:{fleet_mod.closed_port()}", default=MY_DEFAULT)
    assert config_of(fn(None, None, 256, 256, 256)) == MY_DEFAULT
    assert fn.last_choice.source == "unreachable"
    assert "UNAVAILABLE" in fn.last_choice.reason
    assert config_of(fn(None, None, 512, 512, 512)) == MY_DEFAULT  # a new key
    assert fn.last_choice.source == "unreachable"
    assert len(lookups) == 1  # the failure was remembered


def test_submit_on_miss_tunes_the_key_for_the_next_process(fleet, client, tuned_job,
                                                           device_model, monkeypatch):
    monkeypatch.setenv("TUNEFLEET_INSECURE", "1")
    shape = {"M": 256, "N": 512, "K": 256}
    fn = tunefleet.autotune(kernel=fleet_mod.MATMUL_DIR, key=["M", "N", "K"],
                            device=device_model, server=fleet.address, submit_on_miss=True,
                            submit_options={"config_set": "quick"})(fake_matmul)
    fn(None, None, **shape)
    assert fn.last_choice.tier == tunefleet.NEAREST
    # Once per key per process: another decorator missing the same key while
    # the job runs does not submit it again (the job takes seconds to tune).
    again = tunefleet.autotune(kernel=fleet_mod.MATMUL_DIR, key=["M", "N", "K"],
                               device=device_model, server=fleet.address,
                               submit_on_miss=True)(fake_matmul)
    again(None, None, **shape)
    assert again.last_choice.tier == tunefleet.NEAREST
    assert again.submissions == {}
    fn(None, None, **shape)
    (submission,) = fn.wait_for_submissions(timeout=60)
    assert submission.error is None and submission.job is not None
    assert client.wait(submission.job.id).state == "SUCCEEDED"

    again.cache_clear()
    again(None, None, **shape)
    assert again.last_choice.tier == tunefleet.EXACT  # the fleet's answer now
    assert again.submissions == {}
    fn.cache_clear()
    fn(None, None, **shape)
    assert fn.last_choice.tier == tunefleet.EXACT


def test_misses_in_one_window_are_submitted_as_one_sweep(fleet, client, tuned_job,
                                                         device_model, monkeypatch):
    """A warm-up that calls shape after shape: the misses of one decorator
    within SWEEP_WINDOW_SECONDS go as one sweep, each key its own job; a
    miss after the window is a sweep (or a job) of its own."""
    monkeypatch.setenv("TUNEFLEET_INSECURE", "1")
    # The window closes when the test says: a loaded machine's lookups may
    # take longer than SWEEP_WINDOW_SECONDS between two misses.
    autotune_module = importlib.import_module("tunefleet.autotune")
    window = threading.Event()
    monkeypatch.setattr(autotune_module, "time", types.SimpleNamespace(
        sleep=lambda _seconds: window.wait(60), monotonic=time.monotonic))
    fn = tunefleet.autotune(kernel=fleet_mod.MATMUL_DIR, key=["M", "N", "K"],
                            device=device_model, server=fleet.address, submit_on_miss=True,
                            submit_options={"config_set": "quick"})(fake_matmul)
    warm_up = [{"M": 64, "N": 512, "K": 256}, {"M": 128, "N": 512, "K": 256},
               {"M": 192, "N": 512, "K": 256}]
    for shape in warm_up:
        fn(None, None, **shape)
    window.set()
    submissions = fn.wait_for_submissions(timeout=60)
    assert len(submissions) == 3
    assert all(s.error is None and s.job is not None for s in submissions)
    assert len({s.job.sweep_id for s in submissions}) == 1 and submissions[0].job.sweep_id
    assert [s.job.shape for s in submissions] == [
        "M=64,N=512,K=256", "M=128,N=512,K=256", "M=192,N=512,K=256"]
    fn(None, None, M=320, N=512, K=256)  # a window of its own
    later = fn.wait_for_submissions(timeout=60)[-1]
    assert later.error is None and later.job.sweep_id == ""  # alone: a job
    for s in submissions + [later]:
        assert client.wait(s.job.id).state == "SUCCEEDED"


def test_an_exported_table_answers_without_a_server(fleet, tuned_job, device_model,
                                                    tmp_path, monkeypatch):
    path = tmp_path / "best.json"
    path.write_text(fleet_mod.tunectl(fleet, "export", "matmul"))
    # The Python client writes the same document as tunectl.
    with tunefleet.Client(fleet.address, insecure=True) as c:
        ours = json.loads(c.export("matmul"))
    theirs = json.loads(path.read_text())
    for document in (ours, theirs):
        del document["exported_unix_ms"]
    assert ours == theirs
    table = tunefleet.BestTable.load(str(path))
    assert len(table) >= 1
    best = tuned_job.targets[0].best_config
    exact = table.lookup("matmul", TUNED_SHAPE, device_model)
    assert (exact.tier, exact.config_text) == (tunefleet.EXACT, best)
    assert exact.tuning_key == tuned_job.targets[0].tuning_key
    nearest = table.lookup("matmul", "M=1024,N=256,K=256", device_model)
    assert nearest.tier == tunefleet.NEAREST
    default = table.lookup("matmul", TUNED_SHAPE, "no such device")
    assert (default.tier, default.config) == (tunefleet.DEFAULT, SPEC_DEFAULT)
    with pytest.raises(tunefleet.NotFoundError):
        table.lookup("softmax", TUNED_SHAPE)

    # The decorator reads it instead of a server (none is reachable here).
    monkeypatch.setenv("TUNEFLEET_SERVER", f"127.0.0.1:{fleet_mod.closed_port()}")
    fn = decorate(device_model, table=str(path))
    assert config_of(fn(None, None, 256, 256, 256)) == tunefleet.shapes.parse(best)
    assert (fn.last_choice.tier, fn.last_choice.source) == (tunefleet.EXACT, "table")
    monkeypatch.setenv("TUNEFLEET_BEST_TABLE", str(path))
    fn = decorate(device_model)
    fn(None, None, 1024, 256, 256)
    assert (fn.last_choice.tier, fn.last_choice.source) == (tunefleet.NEAREST, "table")


# Triton-distributed's and TileLang's dialects (docs/python.md, "Moving over
# from another autotuner").

def matmul_shape(a, b, M, N, K):
    """A key_fn: the call's shape from its arguments."""
    return {"M": M, "N": N, "K": K}


def test_key_fn_gives_the_shape_and_prune_fn_keeps_configs(counting, tuned_job, device_model):
    best = tunefleet.shapes.parse(tuned_job.targets[0].best_config)
    fn = tunefleet.autotune(kernel="matmul", key_fn=matmul_shape, device=device_model,
                            client=counting, configs=[MY_DEFAULT, best])(fake_matmul)
    assert config_of(fn(None, None, 256, 256, 256)) == best
    assert fn.last_choice.tier == tunefleet.EXACT
    assert fn.last_choice.shape == TUNED_SHAPE
    assert config_of(fn(None, None, M=256, N=256, K=256)) == best
    assert counting.lookups == 1  # one key, however the call names it

    calls = []

    def not_the_best(config, a, b, M, N, K):
        calls.append(M)
        return config != best
    pruned = tunefleet.autotune(kernel="matmul", key_fn=matmul_shape, device=device_model,
                                client=counting, configs=[MY_DEFAULT, best],
                                prune_fn=not_the_best)(fake_matmul)
    assert config_of(pruned(None, None, 256, 256, 256)) == MY_DEFAULT
    assert pruned.last_choice.tier == tunefleet.DEFAULT
    assert calls == [256, 256]  # once per listed config, with the call's arguments

    with pytest.raises(tunefleet.InvalidArgumentError, match="key= or key_fn="):
        tunefleet.autotune(kernel="matmul", key=["M"], key_fn=matmul_shape)(fake_matmul)
    with pytest.raises(tunefleet.InvalidArgumentError, match="prune= or prune_fn="):
        tunefleet.autotune(kernel="matmul", key=["M"], prune=lambda c, n: c,
                           prune_fn=not_the_best)(fake_matmul)
    bad = tunefleet.autotune(kernel="matmul", key_fn=lambda *a, **k: (256, 256, 256),
                             device=device_model, client=counting)(fake_matmul)
    with pytest.raises(tunefleet.InvalidArgumentError, match=r"\{dim: integer\}"):
        bad(None, None, 256, 256, 256)


def test_a_call_may_turn_tuning_off_or_ask_where_its_config_came_from(
        counting, tuned_job, device_model, capsys):
    best = tunefleet.shapes.parse(tuned_job.targets[0].best_config)
    fn = decorate(device_model, client=counting, configs=[MY_DEFAULT, best])
    assert config_of(fn(None, None, 256, 256, 256, autotune=False)) == MY_DEFAULT
    assert fn.last_choice.source == "caller" and fn.last_choice.tier == tunefleet.DEFAULT
    assert counting.lookups == 0 and fn.cache == {}  # nothing asked, nothing kept

    assert config_of(fn(None, None, 256, 256, 256, autotune_verbose=True)) == best
    line = capsys.readouterr().err
    assert "fake_matmul: exact" in line
    assert f"job {tuned_job.id}" in line and f"key {tuned_job.targets[0].tuning_key}" in line
    assert "tuned at M=256,N=256,K=256" in line
    from tunefleet.autotune import describe
    assert describe(fn.last_choice) in line


def test_always_tune_submits_a_forced_retune_of_a_tuned_key(fleet, client, tuned_job,
                                                             device_model, monkeypatch):
    monkeypatch.setenv("TUNEFLEET_INSECURE", "1")
    monkeypatch.setenv("TRITON_DIST_AUTOTUNE_ALWAYS_TUNE", "1")
    fn = tunefleet.autotune(kernel=fleet_mod.MATMUL_DIR, key=["M", "N", "K"],
                            device=device_model, server=fleet.address,
                            submit_options={"config_set": "quick"})(fake_matmul)
    fn(None, None, **TUNED_SHAPE)
    assert fn.last_choice.tier == tunefleet.EXACT  # the current answer meanwhile
    (submission,) = fn.wait_for_submissions(timeout=60)
    assert submission.error is None and submission.job is not None
    job = client.wait(submission.job.id)
    assert job.state == "SUCCEEDED"
    assert job.targets[0].stop_reason != "cached"  # measured again, not answered
    assert job.targets[0].retune in ("confirmed", "replaced", "regressed")


def test_input_and_check_options_go_into_the_submitted_spec(fleet, device_model, monkeypatch):
    """TileLang's supply_prog, manual_check_prog, skip_check and tolerances
    as decorator options: they set the spec fields of what submit_on_miss
    submits; the coordinator validates them as any spec's (the CPU matmul
    kernel is not a Python kernel, so it refuses them, saying why)."""
    monkeypatch.setenv("TUNEFLEET_INSECURE", "1")

    def make_inputs(shape, seed):  # stands for a function of the reference source
        return []

    fn = tunefleet.autotune(kernel=fleet_mod.MATMUL_DIR, key=["M", "N", "K"],
                            device=device_model, server=fleet.address, submit_on_miss=True,
                            supply=make_inputs, check="same_bits", rtol=0.5, atol=0.25,
                            max_mismatch_ratio=0.01)(fake_matmul)
    spec = fn._bundle().spec
    assert (spec.reference.supply, spec.reference.check) == ("make_inputs", "same_bits")
    assert (spec.tolerance.rtol, spec.tolerance.atol) == (0.5, 0.25)
    assert spec.tolerance.max_mismatch_ratio == pytest.approx(0.01)
    fn(None, None, M=96, N=160, K=224)
    (submission,) = fn.wait_for_submissions(timeout=60)
    assert submission.job is None
    assert "BACKEND_PYTHON" in str(submission.error), submission.error

    skipping = tunefleet.autotune(kernel=fleet_mod.MATMUL_DIR, key=["M", "N", "K"],
                                  device=device_model, skip_check=True)(fake_matmul)
    assert skipping._bundle().spec.tolerance.skip_check
    assert not skipping._bundle().spec.reference.supply  # the spec's own where not given
    with pytest.raises(tunefleet.InvalidArgumentError, match="supply= names a function"):
        tunefleet.autotune(kernel="matmul", key=["M"], supply=lambda shape, seed: [])(fake_matmul)
