"""The Python twin of the measurement protocol's stop rules
(python/tunefleet/backend/measure.py) against the cases that
worker/measurement.cc answers too (tests/worker/measurement_cases.json)."""

import json
import os

import pytest

from tunefleet.backend import measure
from tunefleet.v1 import bench_child_pb2

CASES = os.path.join(os.environ.get("TUNEFLEET_SOURCE_DIR",
                                    os.path.join(os.path.dirname(__file__), "..", "..")),
                     "tests", "worker", "measurement_cases.json")


def cases(rule):
    with open(CASES) as f:
        found = json.load(f)[rule]
    assert found, rule
    return [pytest.param(case, id=case["name"]) for case in found]


def options(fields):
    return measure.with_defaults(bench_child_pb2.MeasureOptions(**fields))


@pytest.mark.parametrize("case", cases("median_precise"))
def test_median_precise(case):
    assert measure.median_precise(options(case["options"]), case["sorted"]) == case["expected"]


@pytest.mark.parametrize("case", cases("want_more_samples"))
def test_want_more_samples(case):
    assert measure.want_more_samples(options(case["options"]), case["sorted"],
                                     case["elapsed"]) == case["expected"]


@pytest.mark.parametrize("case", cases("warmup_seconds"))
def test_warmup_seconds(case):
    idle = float(case["idle"])  # "inf" for a device that never measured
    assert measure.warmup_seconds(options(case["options"]), idle,
                                  case["call"]) == pytest.approx(case["expected"])


@pytest.mark.parametrize("case", cases("cut_early"))
def test_cut_early(case):
    assert measure.cut_early(options(case["options"]), case["best"],
                             case["sorted"]) == case["expected"]


@pytest.mark.parametrize("case", cases("clock_calibration"))
def test_clock_calibration(case):
    assert measure.clock_calibration(case["median"], case["seconds"],
                                     case["mhz"]) == pytest.approx(case["expected"])
