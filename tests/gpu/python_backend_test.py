#!/usr/bin/env python3
"""GPU tier: the python backend end to end, through a real coordinator and
worker (tune_bench's loopback fleet, --backend python):
  - kernels/triton/matmul (its "tutorial" config set) and
    kernels/triton/softmax (exhaustive) tune to a best config;
  - tests/gpu/faulty_triton's "failures" set: a config that does not compile,
    one that reads out of bounds, one that hangs and one that is wrong are
    classified COMPILE_ERROR, CRASHED, TIMEOUT and WRONG_RESULT, and the good
    configs after them still measure OK (the worker keeps serving);
  - tests/gpu/user_inputs: the spec's own input generator (reference.supply)
    and checker (reference.check) reach the benchmark child: every config
    runs on the supplied inputs, and the checker refuses what the tolerance
    would pass;
  - tests/gpu/contextual: a function of two Triton kernels (each a
    @tunefleet.autotune kernel, launched by a @tunefleet.contextual_autotune
    function) tuned in context with the coordinate strategy: every trial
    runs both kernels with their parts of the config, and the search
    converges to a best with every kernel's params.
Skips (exit 77) without a GPU or without torch/triton in the worker's
interpreter ($TUNEFLEET_PYTHON, else python3).

  python_backend_test.py --bin-dir BUILD/bin [--package-dir BUILD/python]
                         [--source-dir REPO] [--sandbox bwrap|none]
"""

import argparse
import os
import re
import subprocess
import sys

SKIP = 77


def interpreter_ready(python):
    probe = ("import torch, triton; import sys; "
             "sys.exit(0 if torch.cuda.is_available() else 1)")
    try:
        return subprocess.run([python, "-c", probe], capture_output=True,
                              timeout=300).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def tune(args, kernel, shape, extra):
    command = [os.path.join(args.bin_dir, "tune_bench"), "--kernel",
               os.path.join(args.source_dir, kernel), "--shape", shape, "--backend", "python",
               "--bin-dir", args.bin_dir, "--measure-budget", "0.05", "--trials",
               "--worker-flag=--sandbox=%s" % args.sandbox] + extra
    print("$ " + " ".join(command), flush=True)
    result = subprocess.run(command, capture_output=True, text=True, timeout=840)
    print(result.stdout)
    print(result.stderr[-4000:], file=sys.stderr)
    if result.returncode != 0:
        raise AssertionError("%s: tune_bench exited %d" % (kernel, result.returncode))
    runs = [line for line in result.stdout.splitlines() if re.match(r"^\| 1 \|", line)]
    assert runs, "no run row"
    cells = [c.strip() for c in runs[0].strip("|").split("|")]
    trials = {}
    for line in result.stdout.splitlines():
        match = re.match(r"^\| (\S+=\S+) \| ([A-Z_]+) \|", line)
        if match:
            trials.setdefault(match.group(1), []).append(match.group(2))
    return {"state": cells[1], "ok_trials": cells[3], "best": cells[10], "trials": trials,
            "log": result.stdout + result.stderr}


def main():
    parser = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--package-dir", default="")
    parser.add_argument("--source-dir", default=os.path.dirname(os.path.dirname(here)))
    parser.add_argument("--sandbox", default=os.environ.get("TUNEFLEET_TEST_SANDBOX", "bwrap"))
    args = parser.parse_args()
    args.bin_dir = os.path.abspath(args.bin_dir)
    python = os.environ.get("TUNEFLEET_PYTHON", "python3")
    if not interpreter_ready(python):
        print("SKIP: %s has no torch/triton or sees no GPU" % python)
        return SKIP
    package = args.package_dir or os.path.join(os.path.dirname(args.bin_dir), "python")
    os.environ["TUNEFLEET_PYTHON_PACKAGE"] = os.path.abspath(package)

    failures = []

    def check(condition, what):
        print(("ok    " if condition else "FAIL  ") + what, flush=True)
        if not condition:
            failures.append(what)

    matmul = tune(args, "kernels/triton/matmul", "M=1024,N=1024,K=1024",
                  ["--config-set", "tutorial"])
    check(matmul["state"] == "SUCCEEDED", "matmul job SUCCEEDED (%s)" % matmul["state"])
    check(matmul["best"] != "-", "matmul has a best config: %s" % matmul["best"])
    check(any("OK" in s for s in matmul["trials"].values()), "matmul configs measured OK")

    softmax = tune(args, "kernels/triton/softmax", "M=4096,N=4096", [])
    check(softmax["state"] == "SUCCEEDED", "softmax job SUCCEEDED (%s)" % softmax["state"])
    check(softmax["best"] != "-", "softmax has a best config: %s" % softmax["best"])

    faulty = tune(args, "tests/gpu/faulty_triton", "n=100000",
                  ["--config-set", "failures", "--worker-flag=--trial-deadline=20"])
    trials = faulty["trials"]
    expected = {"MODE=1,BLOCK=256": "COMPILE_ERROR", "MODE=2,BLOCK=256": "CRASHED",
                "MODE=3,BLOCK=256": "TIMEOUT", "MODE=4,BLOCK=256": "WRONG_RESULT",
                "MODE=0,BLOCK=256": "OK", "MODE=0,BLOCK=1024": "OK"}
    for config, status in expected.items():
        got = trials.get(config, ["missing"])
        check(got[0] == status, "%s is %s (got %s)" % (config, status, got))
    check(faulty["state"] == "SUCCEEDED", "faulty job SUCCEEDED after the failures (%s)" % faulty["state"])

    # The user's own inputs (any n, values only supply makes) and checker.
    supplied = tune(args, "tests/gpu/user_inputs", "n=100003", [])
    expected = {"MODE=0,BLOCK=256": "OK", "MODE=0,BLOCK=1024": "OK",
                "MODE=1,BLOCK=256": "WRONG_RESULT", "MODE=1,BLOCK=1024": "WRONG_RESULT"}
    for config, status in expected.items():
        got = supplied["trials"].get(config, ["missing"])
        check(got[0] == status, "user_inputs %s is %s (got %s)" % (config, status, got))
    check(supplied["state"] == "SUCCEEDED", "user_inputs job SUCCEEDED (%s)" % supplied["state"])
    check("exact: y[" in supplied["log"], "the checker's words are the WRONG_RESULT's error")

    # A function of two Triton kernels, tuned in context.
    context = tune(args, "tests/gpu/contextual", "n=4000037", ["--strategy", "coordinate"])
    check(context["state"] == "SUCCEEDED", "contextual job SUCCEEDED (%s)" % context["state"])
    names = ("scale__BLOCK", "scale__num_warps", "shift__BLOCK", "shift__num_warps")
    check(all(name + "=" in context["best"] for name in names),
          "the contextual best has every kernel's params: %s" % context["best"])
    statuses = [s for runs in context["trials"].values() for s in runs]
    check(statuses and all(s == "OK" for s in statuses),
          "every contextual trial ran both kernels right: %s" % sorted(set(statuses)))
    # The coordinate rule from the default: the default, then one kernel's
    # 8 other configs at a time, so fewer than the space's 81.
    check(9 <= len(context["trials"]) < 81,
          "the coordinate search measured %d of 81 configs" % len(context["trials"]))

    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
