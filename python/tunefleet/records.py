"""What the API returns: plain, immutable records (no protobuf types).

They mirror the C++ client's structs (client/include/tunefleet/client.h).
States and statuses are their names, as the coordinator spells them:
"QUEUED", "SUCCEEDED", "OK", "COMPILE_ERROR", ...
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Tuple

#: Job states after which a job never changes again.
FINAL_STATES = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})

#: The tiers of a best-config answer, best first.
EXACT = "exact"      # tuned for this very kernel, shape, device model, toolkit
NEAREST = "nearest"  # tuned for another shape of the same kernel and device, valid at this one
DEFAULT = "default"  # nothing tuned fits: the spec's (or the caller's) default


@dataclass(frozen=True)
class TrialSummary:
    """One measured config among a job's fastest."""
    config: str  # short form, "BLOCK_M=64,BLOCK_N=128"
    median_seconds: float
    status: str
    device_model: str


@dataclass(frozen=True)
class JobTarget:
    """A job's progress on one (device model, toolkit)."""
    device_model: str
    toolkit: str
    tuning_key: str
    cached: bool             # answered from the store; nothing measured
    trials_total: int
    trials_done: int
    best_config: str         # "" until a trial succeeded
    best_seconds: float      # 0 until a trial succeeded
    default_seconds: float   # the default config's median; 0 if unknown
    # What the finished job did to the served best of its key: "first",
    # "replaced" (faster, or beat it side by side), "confirmed" (re-measured
    # the served config and found it tied: kept, with this job's time),
    # "regressed" (not faster: the best served before is kept) or "forced"
    # (replace_best); "" while it runs and when cached.
    retune: str = ""
    served_job_id: str = ""      # the best served after the job finished
    served_seconds: float = 0.0
    previous_job_id: str = ""    # the best it was compared with
    previous_seconds: float = 0.0
    replace_reason: str = ""     # "forced": the reason given
    # Why the target's search stopped: "space_exhausted", "trial_budget",
    # "time_budget", "plateau", "cancelled", "failed", "cached",
    # "no_workers"; "" while it searches.
    stop_reason: str = ""


@dataclass(frozen=True)
class Job:
    id: str
    kernel: str
    shape: str               # "M=1024,N=1024,K=1024"
    state: str               # "QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"
    reason: str              # why it waits or failed
    strategy: str
    trials_total: int
    trials_done: int
    outcomes: Dict[str, int]  # trial status name -> count
    targets: Tuple[JobTarget, ...]
    top_trials: Tuple[TrialSummary, ...]  # fastest first, at most five per target
    created_unix_ms: int
    updated_unix_ms: int
    owner: str               # the principal that submitted it
    sweep_id: str = ""       # the sweep it belongs to; "" when submitted alone
    # Why the search ended, as JobTarget.stop_reason ("" while it runs).
    stop_reason: str = ""
    # The stop rules as submitted (per target; 0: none): the strategy's
    # budget of trials, time_budget_seconds and plateau_batches.
    trials_budget: int = 0
    time_budget_seconds: int = 0
    plateau_batches: int = 0
    started_unix_ms: int = 0  # when it first ran (the time budget counts from it); 0: not yet

    @property
    def final(self) -> bool:
        """True once the job will not change again."""
        return self.state in FINAL_STATES


@dataclass(frozen=True)
class Sweep:
    """One submission over many shapes (Client.submit_sweep): its id and one
    job per shape, in the order the shapes were given."""
    id: str
    jobs: List[Job]


@dataclass(frozen=True)
class JobPage:
    jobs: List[Job]
    next_page_token: str  # "" on the last page


@dataclass(frozen=True)
class Trial:
    """One stored trial of a job: a config as measured, or why it failed."""
    config: str
    status: str
    error: str
    median_seconds: float
    p20_seconds: float
    p80_seconds: float
    samples: int
    compile_seconds: float
    tuning_key: str
    device_model: str
    worker_id: str
    device_id: str
    principal: str
    clock_mhz: float
    round: str
    excluded: bool
    finished_unix_ms: int
    # Sampling stopped early (clearly slower than the best); a finalist's
    # rounds and the CV of their medians; samples taken again at a low SM
    # clock and low-clock samples kept (docs/measurement.md).
    cut_early: bool = False
    rounds: int = 0
    rounds_cv: float = 0.0
    retaken_samples: int = 0
    low_clock_samples: int = 0
    # The device's calibration at this measurement (docs/measurement.md);
    # configs compare by median_seconds / calibration_seconds (0: none).
    calibration_seconds: float = 0.0


@dataclass(frozen=True)
class TrialPage:
    trials: List[Trial]
    next_page_token: str  # "" on the last page


@dataclass(frozen=True)
class TieMember:
    """A config tied with the fastest of the round that decided a best."""
    config_text: str
    median_seconds: float  # in that round
    gap: float             # slower than the round's fastest, a fraction


@dataclass(frozen=True)
class BestConfig:
    """The config an application should use for a kernel and shape.

    `tier` says how it was found: EXACT, NEAREST or DEFAULT. `config` is
    param name -> value, in spec order; `config_text` the short form.
    """
    tier: str
    config: Dict[str, int]
    config_text: str
    median_seconds: float = 0.0  # 0 for DEFAULT
    tuning_key: str = ""
    job_id: str = ""
    tuned_shape: str = ""        # the shape it was tuned for
    device_model: str = ""
    toolkit: str = ""
    # How sure it is (docs/measurement.md, "Tie sets"); empty and 0 for
    # DEFAULT and for rows stored before evidence was kept. `tie_set`: the
    # deciding round's fastest and every config tied with it, fastest first;
    # `config_text` is one of them.
    tie_set: Tuple[TieMember, ...] = ()
    configs_in_round: int = 0    # configs the deciding round measured
    rounds: int = 0              # finalist rounds behind median_seconds (0: one run)
    rounds_cv: float = 0.0       # CV of those rounds' medians
    measurements: int = 0        # of config_text for this key, every job and round
    devices: int = 0             # distinct devices that took them
    # The device's calibration when median_seconds was measured; the rules
    # compared median_seconds / calibration_seconds (0: uncalibrated).
    calibration_seconds: float = 0.0


@dataclass(frozen=True)
class DeviceInfo:
    id: str
    model: str
    backend: str  # "CPU" or "CUDA"


@dataclass(frozen=True)
class WorkerInfo:
    id: str
    host: str
    toolkit: str
    devices: Tuple[DeviceInfo, ...]
    last_seen_unix_ms: int
    active_leases: int
    alive: bool
    principal: str = field(default="")
