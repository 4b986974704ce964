#!/usr/bin/env python3
"""What @tunefleet.autotune costs per call, for a plain Python callable.

    taskset -c 1 env PYTHONPATH=build/python /usr/bin/python3 bench/python_lookup_bench.py

The decorated function reads its configs from an in-memory best-config
table (no server, so the figure is the decorator's own): the first call of a
key looks the key up, logs and caches the choice; every later call finds it
in the per-process cache. Prints the first call's time, then ns per call of
the bare callable (given the config by hand) and of the decorated one, with
positional and with keyword key arguments, and the overhead: decorated minus
bare. Each warm figure is the median of `--repeats` runs of `--calls` calls.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import time

import tunefleet

SHAPE = {"M": 1024, "N": 1024, "K": 1024}
CONFIG = {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "UNROLL": 4, "LOOP_ORDER": 0}


def table() -> tunefleet.BestTable:
    config_text = tunefleet.shapes.format(CONFIG)
    return tunefleet.BestTable.parse(json.dumps({
        "format": "tunefleet.best_configs", "version": 1,
        "kernels": [{"name": "matmul", "spec": {"kernel": {
            "name": "matmul", "default_config": config_text}}}],
        "configs": [{"kernel": "matmul", "shape": "M=1024,N=1024,K=1024",
                     "device_model": "bench-device", "toolkit": "gcc", "config": config_text,
                     "median_seconds": 1e-3, "tuning_key": "bench-key"}]}))


def launcher(a, b, M, N, K, *, BLOCK_M, BLOCK_N, BLOCK_K, UNROLL, LOOP_ORDER):
    return None


def per_call_ns(call, calls: int, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        for _ in range(calls):
            call()
        samples.append((time.perf_counter_ns() - start) / calls)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    logging.getLogger("tunefleet").setLevel(logging.WARNING)

    fn = tunefleet.autotune(kernel="matmul", key=["M", "N", "K"], device="bench-device",
                            table=table())(launcher)
    start = time.perf_counter_ns()
    fn(None, None, 1024, 1024, 1024)
    first_us = (time.perf_counter_ns() - start) / 1e3
    assert fn.last_choice.tier == tunefleet.EXACT and fn.last_choice.kwargs == CONFIG

    bare = per_call_ns(lambda: launcher(None, None, 1024, 1024, 1024, **CONFIG),
                       args.calls, args.repeats)
    positional = per_call_ns(lambda: fn(None, None, 1024, 1024, 1024), args.calls, args.repeats)
    bare_kw = per_call_ns(lambda: launcher(None, None, M=1024, N=1024, K=1024, **CONFIG),
                          args.calls, args.repeats)
    keywords = per_call_ns(lambda: fn(None, None, M=1024, N=1024, K=1024),
                           args.calls, args.repeats)

    print(f"first call of a key (table lookup, log, cache): {first_us:.1f} us")
    print(f"{'warm call':<28}{'bare ns':>10}{'decorated ns':>14}{'overhead ns':>13}")
    for name, plain, decorated in (("key args positional", bare, positional),
                                   ("key args by keyword", bare_kw, keywords)):
        print(f"{name:<28}{plain:>10.0f}{decorated:>14.0f}{decorated - plain:>13.0f}")


if __name__ == "__main__":
    main()
