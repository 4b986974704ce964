"""A function of two kernels tuned in context (@tunefleet.contextual_autotune
and the coordinate strategy), against the real fleet of conftest.py:
tests/python/pair_cpu is a CPU function of two stages whose costs depend on
both stages' configs. The fleet's answer is the best pair the coordinate
rule can reach, and calling the decorated function launches each kernel
with its part of it."""

from __future__ import annotations

import contextvars
import itertools
import json
import logging
import os
import threading

import pytest

import fleet as fleet_mod
import tunefleet
from tunefleet import contextual
from tunefleet.autotune import describe

PAIR_DIR = os.path.join(fleet_mod.SOURCE_DIR, "tests", "python", "pair_cpu")
# A pass over 128 KiB takes microseconds: the passes, not the call, make
# the time.
SHAPE = {"n": 32768}
VALUES = range(1, 7)


def passes(qk: int, pv: int) -> int:
    """The function's cost in passes over its data (pair_cpu/kernel.textproto)."""
    return 4 << min(8, 2 * (qk - pv - 1) ** 2 + (pv - 3) ** 2)


def coordinate_rule(start):
    """The coordinate rule on the known costs, as the coordinator runs it
    (server/coordinate_strategy.h): the incumbent and every pair measured."""
    incumbent, measured, settled, group = start, {start}, 0, -1
    while settled < 2:
        group = (group + 1) % 2
        for value in VALUES:
            pair = (value, incumbent[1]) if group == 0 else (incumbent[0], value)
            measured.add(pair)
        best = min(measured, key=lambda p: passes(*p))
        settled = 1 if best != incumbent else settled + 1
        incumbent = best
    return incumbent, measured


@pytest.fixture(scope="module")
def pair_job(client):
    job = client.submit(PAIR_DIR, SHAPE, strategy="coordinate")
    final = client.wait(job.id)
    assert final.state == "SUCCEEDED", final
    return final


def test_the_rule_stops_short_of_the_optimum_here():
    # What the fleet test below relies on: the rule's answer is not the
    # space's best, so a joint search would answer differently.
    reached, measured = coordinate_rule((1, 1))
    assert reached == (3, 2) and len(measured) == 20
    assert min(itertools.product(VALUES, VALUES), key=lambda p: passes(*p)) == (4, 3)


def test_the_fleet_tunes_the_pair_kernel_after_kernel_to_the_rules_answer(client, pair_job):
    reached, measured = coordinate_rule((1, 1))
    target = pair_job.targets[0]
    assert tunefleet.shapes.parse(target.best_config) == \
        {"qk__BLOCK": reached[0], "pv__BLOCK": reached[1]}
    assert pair_job.strategy == "coordinate"
    assert pair_job.stop_reason == "plateau"  # converged: no kernel alone does better
    configs = [tunefleet.shapes.parse(t.config) for t in client.all_trials(pair_job.id)]
    tried = {(c["qk__BLOCK"], c["pv__BLOCK"]) for c in configs}
    assert tried == measured


def test_calling_the_function_launches_each_kernel_with_its_part(client, pair_job):
    launched = []

    @tunefleet.autotune(kernel="qk", key=["n"], device="", client=client)
    def qk(x, n, *, BLOCK):
        launched.append(("qk", n, BLOCK))

    @tunefleet.autotune(kernel="pv", key=["n"], device="", client=client)
    def pv(x, n, *, BLOCK):
        launched.append(("pv", n, BLOCK))

    @tunefleet.contextual_autotune(kernel=PAIR_DIR, key=["n"], device="", client=client)
    def pair(x, y, n):
        qk(x, n)
        pv(x, n)
        return "done"

    assert pair(None, None, 32768) == "done"
    best = tunefleet.shapes.parse(pair_job.targets[0].best_config)
    assert launched == [("qk", 32768, best["qk__BLOCK"]), ("pv", 32768, best["pv__BLOCK"])]
    assert pair.last_choice.tier == tunefleet.EXACT and pair.last_choice.source == "fleet"
    # Each kernel's part, with the function's provenance, is its own choice
    # for its own key now: a call outside the function asks nothing.
    for kernel, name in ((qk, "qk__BLOCK"), (pv, "pv__BLOCK")):
        choice = kernel.cache[(32768,)]
        assert choice.source == "context" and choice.kwargs == {"BLOCK": best[name]}
        assert choice.answer.job_id == pair_job.id
        assert pair_job.id in describe(choice)
    launched.clear()
    qk(None, 32768)
    assert launched == [("qk", 32768, best["qk__BLOCK"])]


def test_a_kernel_inside_the_function_asks_no_source(client, pair_job):
    asked = []

    class Refusing:
        """Stands for a fleet that is down, and counts who asked it."""

        def best(self, *args, **kwargs):
            asked.append(args)
            raise tunefleet.UnavailableError("down")

    launched = []

    @tunefleet.autotune(kernel="qk", key=["n"], device="", client=Refusing(),
                        configs=[{"BLOCK": b} for b in VALUES])
    def qk(n, *, BLOCK):
        launched.append(BLOCK)

    @tunefleet.contextual_autotune(kernel=PAIR_DIR, key=["n"], device="", client=client)
    def pair(n):
        qk(n)

    pair(32768)
    pair(32768, autotune_verbose=True)
    assert asked == [] and len(launched) == 2 and len(set(launched)) == 1
    # Outside the function it is an ordinary autotuned kernel again, and
    # the function's part is its cached choice for that key.
    qk(32768)
    assert asked == []
    qk(65536)
    assert len(asked) == 1 and qk.last_choice.tier == tunefleet.DEFAULT


def test_the_function_s_own_params_are_its_keyword_arguments_and_build_pins_a_config():
    launched = []

    @tunefleet.autotune(kernel="first", key=["n"], device="", table=tunefleet.BestTable({}, {}))
    def first(n, *, BLOCK, num_warps):
        launched.append(("first", BLOCK, num_warps))

    @tunefleet.autotune(kernel="second", key=["n"], device="", table=tunefleet.BestTable({}, {}))
    def second(n, *, BLOCK):
        launched.append(("second", BLOCK))

    @tunefleet.contextual_autotune(kernel="both", key=["n"], device="",
                                   table=tunefleet.BestTable({}, {}))
    def both(x, n, *, SPLIT):
        first(n)
        second(n)
        launched.append(("both", x, n, SPLIT))

    run = both.build({"first__BLOCK": 64, "first__num_warps": 4, "second__BLOCK": 32,
                      "SPLIT": 2}, {"n": 1000})
    run("x")
    assert launched == [("first", 64, 4), ("second", 32), ("both", "x", 1000, 2)]
    # A trial's config is not a kernel's answer: the kernels keep no choice.
    assert first.cache == {} and second.cache == {}
    assert contextual.split_config({"a__B": 1, "a__C": 2, "b__B": 3, "D": 4, "__E": 5}) == \
        ({"a": {"B": 1, "C": 2}, "b": {"B": 3}}, {"D": 4, "__E": 5})


def test_contextual_functions_nest_and_restore_the_outer_pins():
    launched = []
    table = tunefleet.BestTable({}, {})

    @tunefleet.autotune(kernel="k", key=["n"], device="", table=table, default={"BLOCK": 1})
    def k(n, *, BLOCK):
        launched.append(BLOCK)

    @tunefleet.contextual_autotune(kernel="inner", key=["n"], device="", table=table)
    def inner(n):
        k(n)

    @tunefleet.contextual_autotune(kernel="outer", key=["n"], device="", table=table)
    def outer(n):
        k(n)
        inner.build({"k__BLOCK": 9}, {"n": n})()
        k(n)

    outer.build({"k__BLOCK": 5}, {"n": 7})()
    assert launched == [5, 9, 5]
    k(7)
    assert launched[-1] == 1  # outside: the default tier (the table has nothing)


def test_bad_uses_are_refused():
    with pytest.raises(tunefleet.InvalidArgumentError):
        tunefleet.contextual_autotune(kernel="f")(lambda n: n)  # no key
    with pytest.raises(tunefleet.InvalidArgumentError):
        both = tunefleet.contextual_autotune(kernel="f", key=["n"])(lambda n: n)
        both.build({}, {"m": 1})
    f = tunefleet.contextual_autotune(kernel="f", key=["n"])(lambda n: n)
    with pytest.raises(TypeError):
        f[(1,)]
    assert contextual.STRATEGY == "coordinate"
    assert f._submit_options == {"strategy": "coordinate"}


def test_the_pinned_choice_is_logged_with_the_function_s_provenance(client, pair_job, caplog):
    caplog.set_level(logging.INFO, logger="tunefleet")

    @tunefleet.autotune(kernel="qk", key=["n"], device="", client=client)
    def qk(n, *, BLOCK):
        return BLOCK

    @tunefleet.contextual_autotune(kernel=PAIR_DIR, key=["n"], device="", client=client)
    def pair(n):
        return qk(n)

    assert pair(32768) == tunefleet.shapes.parse(pair_job.targets[0].best_config)["qk__BLOCK"]
    assert any(r.getMessage().startswith("pair_cpu n=32768 on any device: exact")
               for r in caplog.records)
    assert "pinned by pair_cpu at n=32768" in qk.last_choice.reason


def test_the_shared_grouping_cases_split_as_the_coordinator_groups():
    with open(os.path.join(fleet_mod.SOURCE_DIR, "tests", "data", "param_groups.json")) as f:
        cases = json.load(f)["cases"]
    kernels, own = contextual.split_config({c["name"]: i for i, c in enumerate(cases)})
    for i, case in enumerate(cases):
        if case["kernel"]:
            assert kernels[case["kernel"]][case["param"]] == i, case
        else:
            assert own[case["param"]] == i, case


def test_a_part_the_kernel_does_not_allow_is_not_launched():
    launched = []
    table = tunefleet.BestTable({}, {})

    @tunefleet.autotune(kernel="k", key=["n"], device="", table=table,
                        configs=[{"BLOCK": 1}, {"BLOCK": 2}],
                        prune=lambda configs, named: [c for c in configs
                                                      if c["BLOCK"] <= named["n"]])
    def k(n, *, BLOCK):
        launched.append(BLOCK)

    @tunefleet.contextual_autotune(kernel="f", key=["n"], device="", table=table,
                                   default={"k__BLOCK": 2})
    def f(n):
        k(n)

    f(1)  # pruned for n=1: the kernel chooses alone (its first allowed config)
    assert launched == [1] and k.last_choice.source == "table"
    f(2)
    assert launched == [1, 2] and k.last_choice.source == "context"
    with pytest.raises(tunefleet.InvalidArgumentError):
        f.build({"k__BLOCK": 2}, {"n": 1})()  # a trial of it fails


def test_pinned_choices_of_different_functions_do_not_mix():
    table = tunefleet.BestTable({}, {})

    @tunefleet.autotune(kernel="k", key=["n"], device="", table=table)
    def k(n, *, BLOCK):
        return BLOCK

    @tunefleet.contextual_autotune(kernel="f", key=["n"], device="", table=table,
                                   default={"k__BLOCK": 4})
    def f(n):
        return k(n)

    @tunefleet.contextual_autotune(kernel="g", key=["n"], device="", table=table,
                                   default={"k__BLOCK": 4})
    def g(n):
        return k(n)

    assert f(8) == 4 and "pinned by f" in k.last_choice.reason
    assert g(8) == 4 and "pinned by g" in k.last_choice.reason


def test_pins_reach_threads_started_in_the_function_s_context_only():
    launched = []
    table = tunefleet.BestTable({}, {})

    @tunefleet.autotune(kernel="k", key=["n"], device="", table=table, default={"BLOCK": 1})
    def k(n, *, BLOCK):
        launched.append(BLOCK)

    @tunefleet.contextual_autotune(kernel="f", key=["n"], device="", table=table)
    def f(n):
        context = contextvars.copy_context()
        inherited = threading.Thread(target=context.run, args=(k, n))
        plain = threading.Thread(target=k, args=(n,))
        inherited.start()
        inherited.join()
        plain.start()
        plain.join()

    f.build({"k__BLOCK": 7}, {"n": 3})()
    assert launched == [7, 1]
