"""Upstream kstatus test tables, ported as data, run against helmsim.kstatus.

Each data file under data/kstatus/ names its source (repo, path, commit) in its ``source`` key:
* status_compute.yaml   kubernetes-sigs/cli-utils pkg/kstatus/status/status_compute_test.go
* core_suspended_job.yaml kubernetes-sigs/cli-utils pkg/kstatus/status/core_test.go (both variants)
* flux_job_reader.yaml  fluxcd/pkg runtime/statusreaders/job_test.go
* pod_controller.yaml   fluxcd/cli-utils pkg/kstatus/polling/statusreaders/pod_controller_test.go
* hook_pod_reader.yaml  helm/helm internal/statusreaders/pod_status_reader_test.go (HC's copy)
* aggregator.yaml       fluxcd/cli-utils pkg/kstatus/polling/aggregator/aggregator_test.go
* ssa_wait.yaml         fluxcd/pkg ssa/manager_wait_test.go (single-status cases)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from helmsim import yamlio
from helmsim.kstatus import (
    ObjectId,
    Result,
    Status,
    Variant,
    aggregate,
    compute,
    compute_job_status,
    pod_controller_result,
    read,
)
from helmsim.kstatus.core import parse_rfc3339
from helmsim.kstatus.wait import decide

DATA = Path(__file__).parent / "data" / "kstatus"
FILES = sorted(DATA.glob("*.yaml"))


def _load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _cases() -> list[Any]:
    out = []
    for path in FILES:
        doc = _load(path)
        for case in doc["cases"]:
            out.append(pytest.param(case, id=f"{path.stem}:{case['name']}"))
    return out


def _object(value: Any) -> Any:
    return yamlio.load_one(value, "case") if isinstance(value, str) else value


def _result(spec: dict[str, Any] | None) -> Result | None:
    if spec is None:
        return None
    err = spec.get("error")
    return Result(Status(spec["status"]), spec.get("message", err or ""), (), err)


def _oid(spec: dict[str, str]) -> ObjectId:
    return ObjectId(spec["kind"], spec.get("namespace", ""), spec["name"], spec.get("group", ""))


def _run(case: dict[str, Any]) -> Any:
    op = case["op"]
    now = parse_rfc3339(case["now"]) if "now" in case else None
    if op == "compute":
        variant = Variant(case.get("variant", "fluxcd"))
        return compute(_object(case["object"]), now=now, variant=variant)
    if op == "read":
        return read(_object(case["object"]), reader=case["reader"], now=now)
    if op == "compute_job_status":
        return compute_job_status(_object(case["object"]))
    if op == "pod_controller":
        pods = [(Status(p["status"]), p["pod"]) for p in case["pods"]]
        return pod_controller_result(_result(case["owner"]), pods)  # type: ignore[arg-type]
    if op == "aggregate":
        return aggregate(Status(s) for s in case["statuses"])
    if op == "wait":
        entries = []
        for e in case["entries"]:
            if "object" in e:
                res = read(e["object"], reader=case["reader"])
            else:
                res = _result(e["result"])
            entries.append((_oid(e["id"]), res))
        return decide(
            entries,
            jobs_with_ttl=[_oid(i) for i in case.get("jobs_with_ttl", [])],
            fail_fast=case["fail_fast"],
            deadline_exceeded=case["deadline_exceeded"],
        )
    raise AssertionError(f"unknown op {op}")


def test_every_data_file_names_its_source() -> None:
    assert FILES, "no conformance data found"
    for path in FILES:
        src = _load(path)["source"]
        assert src["repo"] and src["path"] and len(src["commit"]) == 40, path.name


@pytest.mark.parametrize("case", _cases())
def test_upstream_case(case: dict[str, Any]) -> None:
    got = _run(case)
    exp = case["expect"]
    if case["op"] == "aggregate":
        assert got is Status(exp["status"])
        return
    if case["op"] == "wait":
        assert (got.stop, got.error) == (exp["stop"], exp["error"])
        return
    assert got.status is Status(exp["status"]), got
    if "message" in exp:
        assert got.message == exp["message"]
    if "error" in exp:
        assert got.error == exp["error"]
    for want in exp.get("conditions", []):
        matching = [c for c in got.conditions if c.type == want["type"]]
        assert matching, f"condition {want['type']} missing in {got.conditions}"
        for c in matching:
            assert (c.status, c.reason) == (want["status"], want["reason"])
    for absent in exp.get("absent_conditions", []):
        assert all(c.type != absent for c in got.conditions), got.conditions
    if "condition_count" in exp:
        assert len(got.conditions) == exp["condition_count"]
