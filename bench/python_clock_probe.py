#!/usr/bin/env python3
"""The Python benchmark child's clock probe, with and without its lead
(docs/benchmarks.md, "Calibration"): for each kernel, --samples launches
timed as the child times them (an L2 flush, a device-side lead, CUDA events
around the call), each followed by the probe: a fixed-cycle
torch.cuda._sleep timed between two events, once queued straight behind the
sample and once behind a lead sleep of the same length. Prints the clocks
each way read (min, median, max, MHz). A probe queued after the stream went
idle times the host's gap in queueing it as well, and reads low.

  bench/python_clock_probe.py [--samples 600]
torch on a CUDA device; not part of the build.
"""

import argparse
import statistics

import torch


def sleep_rate():
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(100000)
    start.record()
    torch.cuda._sleep(2000000)
    end.record()
    end.synchronize()
    return 2000000 / (start.elapsed_time(end) / 1e3)


def probe(cycles, lead):
    """As the child's Runner._probe_clock (lead=True) and as it was before."""
    before = torch.cuda.Event(enable_timing=True)
    after = torch.cuda.Event(enable_timing=True)
    if lead:
        torch.cuda._sleep(cycles)
    before.record()
    torch.cuda._sleep(cycles)
    after.record()

    def mhz():
        after.synchronize()
        return cycles / (before.elapsed_time(after) / 1e3) / 1e6
    return mhz


def clocks(fn, samples, flush, rate, lead):
    cycles = max(1000, int(20e-6 * rate))
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    for _ in range(20):
        fn()
    read = []
    for _ in range(samples):
        flush.zero_()
        torch.cuda._sleep(int(100e-6 * rate))
        start.record()
        fn()
        end.record()
        mhz = probe(cycles, lead)
        end.synchronize()
        read.append(mhz())
    return read


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=600)
    args = parser.parse_args()
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 64 << 20)
    flush = torch.empty(2 * l2, dtype=torch.int8, device="cuda")
    rate = sleep_rate()
    a4 = torch.randn(4096, 4096, dtype=torch.float16, device="cuda")
    a1 = torch.randn(1024, 1024, dtype=torch.float16, device="cuda")
    x = torch.randn(1 << 16, device="cuda")
    kernels = [("fp16 matmul 4096^3", lambda: a4 @ a4),
               ("fp16 matmul 1024^3", lambda: a1 @ a1),
               ("add of 64 Ki floats", lambda: x.add_(1.0))]
    print(torch.cuda.get_device_name(), "torch", torch.__version__,
          "sleep rate %.0f MHz" % (rate / 1e6))
    print("| kernel | probe | clock read, MHz: min / median / max |")
    print("|---|---|---|")
    for name, fn in kernels:
        for lead in (False, True):
            read = clocks(fn, args.samples, flush, rate, lead)
            print("| %s | %s | %.0f / %.0f / %.0f |" % (
                name, "behind a lead" if lead else "straight behind the sample", min(read),
                statistics.median(read), max(read)))


if __name__ == "__main__":
    main()
