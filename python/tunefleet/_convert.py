"""tunefleet.v1 messages <-> the records of records.py. Nothing else converts."""

from __future__ import annotations

from typing import Any, Dict, Mapping

from . import records
from ._stubs import kernel_spec_pb2, tuning_pb2, types_pb2

_JOB_STATE_PREFIX = "JOB_STATE_"
_TRIAL_STATUS_PREFIX = "TRIAL_STATUS_"
_TIERS = {1: records.EXACT, 2: records.NEAREST, 3: records.DEFAULT}


def _enum_name(enum_type, value: int, prefix: str) -> str:
    try:
        name = enum_type.Name(value)
    except ValueError:
        return str(value)
    return name[len(prefix):] if name.startswith(prefix) else name


def job_state_name(value: int) -> str:
    return _enum_name(tuning_pb2().JobState, value, _JOB_STATE_PREFIX)


def job_state_value(name: str) -> int:
    """"queued" or "QUEUED" -> JOB_STATE_QUEUED; "" -> unspecified."""
    if not name:
        return 0
    return _enum_value(tuning_pb2().JobState, name, _JOB_STATE_PREFIX, "job state")


def trial_status_name(value: int) -> str:
    return _enum_name(types_pb2().TrialStatus, value, _TRIAL_STATUS_PREFIX)


def trial_status_value(name: str) -> int:
    """"ok" or "OK" -> TRIAL_STATUS_OK; "" -> unspecified (every status)."""
    if not name:
        return 0
    return _enum_value(types_pb2().TrialStatus, name, _TRIAL_STATUS_PREFIX, "trial status")


def _enum_value(enum_type, name: str, prefix: str, what: str) -> int:
    from .errors import InvalidArgumentError
    full = prefix + name.upper()
    try:
        return enum_type.Value(full)
    except ValueError:
        known = ", ".join(n[len(prefix):].lower() for n in enum_type.keys()
                          if not n.endswith("UNSPECIFIED"))
        raise InvalidArgumentError(f'unknown {what} "{name}" (one of {known})') from None


def names_text(items) -> str:
    """A repeated DimValue / ParamValue field in the short form."""
    return ",".join(f"{item.name}={item.value}" for item in items)


def names_dict(items) -> Dict[str, int]:
    return {item.name: item.value for item in items}


def shape_message(dims: Mapping[str, int]):
    shape = types_pb2().Shape()
    for name, value in dims.items():
        dim = shape.dims.add()
        dim.name = name
        dim.value = value
    return shape


def job(message) -> records.Job:
    return records.Job(
        id=message.id,
        kernel=message.kernel_name,
        shape=names_text(message.shape.dims),
        state=job_state_name(message.state),
        reason=message.reason,
        strategy=message.strategy,
        trials_total=message.trials_total,
        trials_done=message.trials_done,
        outcomes={trial_status_name(c.status): c.count for c in message.outcomes},
        targets=tuple(_target(t) for t in message.targets),
        top_trials=tuple(
            records.TrialSummary(config=t.config_text, median_seconds=t.median_seconds,
                                 status=trial_status_name(t.status),
                                 device_model=t.device_model)
            for t in message.top_trials),
        created_unix_ms=message.created_unix_ms,
        updated_unix_ms=message.updated_unix_ms,
        owner=message.owner,
        sweep_id=message.sweep_id,
        stop_reason=_stop_reason_name(message.stop_reason),
        trials_budget=message.trials_budget,
        time_budget_seconds=message.time_budget_seconds,
        plateau_batches=message.plateau_batches,
        started_unix_ms=message.started_unix_ms,
    )


def _target(message) -> records.JobTarget:
    return records.JobTarget(
        device_model=message.device_model,
        toolkit=message.toolkit,
        tuning_key=message.tuning_key,
        cached=message.cached,
        trials_total=message.trials_total,
        trials_done=message.trials_done,
        best_config=message.best.config_text,
        best_seconds=message.best.median_seconds,
        default_seconds=message.default_seconds,
        retune=_retune_name(message.retune.outcome),
        served_job_id=message.retune.served_job_id,
        served_seconds=message.retune.served_seconds,
        previous_job_id=message.retune.previous_job_id,
        previous_seconds=message.retune.previous_seconds,
        replace_reason=message.retune.replace_reason,
        stop_reason=_stop_reason_name(message.stop_reason),
    )


def _retune_name(outcome: int) -> str:
    """"regressed" for RETUNE_OUTCOME_REGRESSED; "" for UNSPECIFIED."""
    if outcome == 0:
        return ""
    return _enum_name(tuning_pb2().RetuneOutcome, outcome, "RETUNE_OUTCOME_").lower()


def _stop_reason_name(reason: int) -> str:
    """"time_budget" for STOP_REASON_TIME_BUDGET; "" for UNSPECIFIED."""
    if reason == 0:
        return ""
    return _enum_name(tuning_pb2().StopReason, reason, "STOP_REASON_").lower()


def trial(message) -> records.Trial:
    return records.Trial(
        config=message.config_text,
        status=trial_status_name(message.status),
        error=message.error,
        median_seconds=message.median_seconds,
        p20_seconds=message.p20_seconds,
        p80_seconds=message.p80_seconds,
        samples=message.samples,
        compile_seconds=message.compile_seconds,
        tuning_key=message.tuning_key,
        device_model=message.device_model,
        worker_id=message.worker_id,
        device_id=message.device_id,
        principal=message.principal,
        clock_mhz=message.clock_mhz,
        round=message.round,
        excluded=message.excluded,
        finished_unix_ms=message.finished_unix_ms,
        cut_early=message.cut_early,
        rounds=message.rounds,
        rounds_cv=message.rounds_cv,
        retaken_samples=message.retaken_samples,
        low_clock_samples=message.low_clock_samples,
        calibration_seconds=message.calibration_seconds,
    )


def best(message) -> records.BestConfig:
    return records.BestConfig(
        tier=_TIERS.get(message.source, records.DEFAULT),
        config=names_dict(message.config.values),
        config_text=message.config_text,
        median_seconds=message.median_seconds,
        tuning_key=message.tuning_key,
        job_id=message.job_id,
        tuned_shape=names_text(message.tuned_shape.dims),
        device_model=message.device_model,
        toolkit=message.toolkit,
        **evidence(message.evidence),
    )


def evidence(message) -> dict:
    """BestConfig's evidence fields from a BestEvidence message."""
    return dict(
        tie_set=tuple(records.TieMember(config_text=m.config_text,
                                        median_seconds=m.median_seconds, gap=m.gap)
                      for m in message.tie_set),
        configs_in_round=message.configs_in_round,
        rounds=message.rounds,
        rounds_cv=message.rounds_cv,
        measurements=message.measurements,
        devices=message.devices,
        calibration_seconds=message.calibration_seconds,
    )


def worker(message) -> records.WorkerInfo:
    backend = kernel_spec_pb2().Backend
    devices = tuple(
        records.DeviceInfo(id=d.id, model=d.model,
                           backend=_enum_name(backend, d.backend, "BACKEND_"))
        for d in message.devices)
    return records.WorkerInfo(
        id=message.worker_id,
        host=message.host,
        toolkit=message.toolkit,
        devices=devices,
        last_seen_unix_ms=message.last_seen_unix_ms,
        active_leases=message.active_leases,
        alive=message.alive,
        principal=message.principal,
    )


def best_table_document(response) -> Dict[str, Any]:
    """An ExportBestResponse as the JSON document of docs/best-table-format.md,
    member for member what the C++ client writes (client/best_table_json.cc)."""
    return {
        "format": "tunefleet.best_configs",
        "version": 1,
        "exported_unix_ms": response.exported_unix_ms,
        "exported_by": f"tunefleet-coordinator {response.coordinator_version}",
        "kernels": [_exported_kernel(k) for k in response.kernels],
        "configs": [_exported_row(r) for r in response.rows],
    }


def _exported_kernel(kernel) -> Dict[str, Any]:
    from google.protobuf import json_format
    spec = kernel.spec.kernel
    return {
        "name": spec.name,
        "default_config": spec.default_config,
        "problem": [dim.name for dim in spec.problem],
        "params": [param.name for param in spec.params],
        "spec": json_format.MessageToDict(kernel.spec, preserving_proto_field_name=True),
    }


def _exported_row(row) -> Dict[str, Any]:
    from google.protobuf import json_format
    from . import shapes

    document = {
        "kernel": row.kernel_name,
        "shape": row.shape,
        "dims": shapes.parse_or_empty(row.shape),
        "device_model": row.device_model,
        "toolkit": row.toolkit,
        "config": row.config_text,
        "values": shapes.parse_or_empty(row.config_text),
        "median_seconds": row.median_seconds,
        "tuning_key": row.tuning_key,
        "job_id": row.job_id,
        "updated_unix_ms": row.updated_unix_ms,
        "imported": row.imported,
        "origin": row.origin,
    }
    if row.HasField("evidence"):
        document["evidence"] = json_format.MessageToDict(row.evidence,
                                                         preserving_proto_field_name=True)
    return document
