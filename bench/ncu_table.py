"""Reads Nsight Compute's `--csv --page details` output into launches and
prints them side by side as a markdown table, for bench/gemm-ncu-gpu.sh and
bench/flash-ncu-gpu.sh, which choose the columns."""

import csv

METRICS = ["Duration", "Compute (SM) Throughput", "Memory Throughput", "DRAM Throughput",
           "Grid Size", "Block Size", "Registers Per Thread", "Dynamic Shared Memory Per Block",
           "Executed Ipc Active", "Issue Slots Busy", "Achieved Occupancy"]


def read_launches(path):
    """The launches of one ncu CSV in order: {"name", "values": {metric: (value, unit)}}."""
    launches = {}
    for row in csv.DictReader(line for line in open(path) if line.startswith('"')):
        launch = launches.setdefault(row["ID"], {"name": row["Kernel Name"], "values": {}})
        if row["Metric Name"] in METRICS and row["Metric Name"] not in launch["values"]:
            launch["values"][row["Metric Name"]] = (row["Metric Value"], row.get("Metric Unit", ""))
    return list(launches.values())


def duration_us(launch):
    value, unit = launch["values"].get("Duration", ("0", "ns"))
    scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3,
             "msecond": 1e3}.get(unit, 1.0)
    return float(value.replace(",", "")) * scale


def cell(launch, metric):
    if launch is None or metric not in launch["values"]:
        return "-"
    value, unit = launch["values"][metric]
    return f"{value} {unit}".strip()


def print_table(columns):
    """columns: [(heading, launch or None)], one markdown column each."""
    print("| | " + " | ".join(f"`{heading}`" for heading, _ in columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for metric in METRICS:
        print(f"| {metric} | " + " | ".join(cell(launch, metric) for _, launch in columns) + " |")
