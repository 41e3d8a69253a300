"""helmsim.kstatus behaviour beyond the upstream tables: bad shapes, the clock, readers, wait."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helmsim.kstatus import ObjectId, Result, Status, Variant, compute, read
from helmsim.kstatus.readers import READERS
from helmsim.kstatus.wait import decide

T0 = datetime(2024, 5, 1, 10, 0, 0, tzinfo=UTC)


def job(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "migrate", "namespace": "shop", "generation": 1},
        "spec": {"backoffLimit": 2},
        "status": status,
    }


FAILED_JOB = job(
    startTime="2024-05-01T10:00:00Z",
    failed=3,
    conditions=[{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}],
)
RUNNING_JOB_WITH_FAILURES = job(startTime="2024-05-01T10:00:00Z", active=1, failed=2)


def unschedulable_pod(created: datetime) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "creationTimestamp": created.strftime("%Y-%m-%dT%H:%M:%SZ")},
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        },
    }


# --- the seed incidents ------------------------------------------------------------------------


@pytest.mark.parametrize("reader", ["core", "flux-wait", "flux-wait-jobs"])
def test_job_with_failed_condition_is_failed_whatever_disable_wait_for_jobs(reader: str) -> None:
    res = read(FAILED_JOB, reader=reader)
    assert res.status is Status.FAILED
    assert res.message == "Job Failed. failed: 3/1"


def test_failed_counter_without_condition_is_not_failed() -> None:
    # core (disableWaitForJobs) says Current once started; Flux's Job reader waits for Complete
    assert read(RUNNING_JOB_WITH_FAILURES, reader="flux-wait").status is Status.CURRENT
    res = read(RUNNING_JOB_WITH_FAILURES, reader="flux-wait-jobs")
    assert (res.status, res.message) == (
        Status.IN_PROGRESS,
        "Job in progress. success:0, active: 1, failed: 2",
    )


def test_pending_pvc_is_in_progress_forever() -> None:
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "d"},
           "status": {"phase": "Pending"}}
    res = compute(pvc)
    assert (res.status, res.message) == (Status.IN_PROGRESS, "PVC is not Bound. phase: Pending")


# --- Go field semantics and bad shapes ----------------------------------------------------------


def test_float_replicas_reads_as_default_like_go_get_int_field() -> None:
    dep = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"replicas": 3.0},
        "status": {"replicas": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1,
                   "conditions": [{"type": "Available", "status": "True"}]},
    }
    # spec.replicas 3.0 is not an int: default 1, so the Deployment is available
    assert compute(dep).message == "Deployment is available. Replicas: 1"


def test_bool_is_not_an_int() -> None:
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
           "spec": {"replicas": True}, "status": {"replicas": 0}}
    assert compute(sts).message == "Replicas: 0/1"


def test_float_generation_is_an_error_reported_as_unknown() -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "generation": 1.5}}
    res = compute(obj)
    assert res.status is Status.UNKNOWN
    assert res.error == (
        "looking up metadata.generation from resource: .metadata.generation accessor error: "
        "1.5 is of the type float64, expected int64"
    )


@pytest.mark.parametrize("reader", READERS)
def test_unknown_pod_phase_is_unknown_with_the_error(reader: str) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "status": {"phase": "Lost"}}
    res = read(pod, reader=reader)
    if reader == "hook":  # HC's hook Pod reader treats every other phase as in progress
        assert res.status is Status.IN_PROGRESS
    else:
        assert (res.status, res.error) == (Status.UNKNOWN, "unknown phase Lost")


@pytest.mark.parametrize(
    "obj", [{"metadata": {"name": "x"}}, {"kind": 3}, ["not", "a", "map"], None]
)
def test_object_without_kind_is_unknown(obj: Any) -> None:
    for reader in READERS:
        assert read(obj, reader=reader).status is Status.UNKNOWN
    assert compute(obj).status is Status.UNKNOWN


@pytest.mark.parametrize(
    ("conditions", "error"),
    [
        ("invalid", "cannot restore slice from string"),
        ({"type": "Ready"}, "cannot restore slice from map"),
        (["x"], "cannot restore struct from: string"),
        ([{"type": "Ready", "status": True}], "unrecognized type: string"),
        ([{"type": 7, "status": "True"}], "cannot convert int64 to string"),
    ],
)
def test_malformed_conditions_are_unknown(conditions: Any, error: str) -> None:
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
           "status": {"conditions": conditions}}
    assert compute(obj) == Result(Status.UNKNOWN, error, (), error)


def test_unknown_reader_name_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown reader"):
        read({"kind": "Pod"}, reader="nope")


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False)
    | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
KINDS = st.sampled_from([
    ("v1", "Pod"), ("v1", "Service"), ("v1", "PersistentVolumeClaim"), ("apps/v1", "Deployment"),
    ("apps/v1", "StatefulSet"), ("apps/v1", "ReplicaSet"), ("apps/v1", "DaemonSet"),
    ("batch/v1", "Job"), ("policy/v1", "PodDisruptionBudget"), ("example.com/v1", "Widget"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
])


@settings(max_examples=300, deadline=None)
@given(KINDS, JSONISH, JSONISH, JSONISH)
def test_no_object_shape_raises(kind: tuple[str, str], meta: Any, spec: Any, status: Any) -> None:
    obj = {"apiVersion": kind[0], "kind": kind[1], "metadata": meta, "spec": spec, "status": status}
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "status": status}]
    for reader in READERS:
        assert isinstance(read(obj, reader=reader, now=T0, pods=pods), Result)
    assert isinstance(compute(obj, now=T0), Result)


# --- generic rules -----------------------------------------------------------------------------


def test_deletion_timestamp_is_terminating_before_anything_else() -> None:
    obj = dict(FAILED_JOB, metadata={"name": "j", "deletionTimestamp": "2024-05-01T10:00:00Z"})
    assert compute(obj) == Result(Status.TERMINATING, "Resource scheduled for deletion")


def test_stalled_and_reconciling_conditions_decide_in_list_order() -> None:
    hr = {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "hr", "generation": 2},
        "status": {
            "observedGeneration": 2,
            "conditions": [
                {"type": "Stalled", "status": "True", "reason": "RetriesExceeded",
                 "message": "Failed to upgrade after 1 attempt(s)"},
                {"type": "Reconciling", "status": "True", "reason": "Progressing"},
            ],
        },
    }
    res = compute(hr)
    assert (res.status, res.message) == (Status.FAILED, "Failed to upgrade after 1 attempt(s)")
    assert res.conditions[0].reason == "RetriesExceeded"


# --- the clock -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("age", "status"),
    [(timedelta(seconds=0), Status.IN_PROGRESS), (timedelta(seconds=14), Status.IN_PROGRESS),
     (timedelta(seconds=15), Status.FAILED), (timedelta(minutes=5), Status.FAILED)],
)
def test_unschedulable_pod_fails_after_the_15s_window(age: timedelta, status: Status) -> None:
    assert compute(unschedulable_pod(T0), now=T0 + age).status is status


def test_no_clock_means_the_window_has_passed_and_naive_clock_is_utc() -> None:
    assert compute(unschedulable_pod(T0)).status is Status.FAILED
    naive = (T0 + timedelta(seconds=5)).replace(tzinfo=None)
    assert compute(unschedulable_pod(T0), now=naive).status is Status.IN_PROGRESS


def test_variant_upstream_has_the_job_suspended_branch() -> None:
    suspended = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                 "spec": {"suspend": True},
                 "status": {"conditions": [{"type": "Suspended", "status": "True"}]}}
    assert compute(suspended, variant=Variant.UPSTREAM).message == "Job is suspended"
    assert compute(suspended).message == "Job not started"


# --- readers -------------------------------------------------------------------------------------


def sts(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "shop"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "db"}}, **spec},
        "status": {"replicas": 1, "readyReplicas": 0},
    }


def pod(labels: dict[str, str], namespace: str = "shop", **status: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "db-0", "namespace": namespace, "labels": labels},
            "status": status}


CRASHING = {"phase": "Running", "containerStatuses": [
    {"name": "db", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}


def test_pod_controller_reader_fails_on_a_crashlooping_selected_pod() -> None:
    res = read(sts(), reader="flux-wait", pods=[pod({"app": "db"}, **CRASHING)])
    assert (res.status, res.message) == (Status.FAILED, "1 pods have failed")
    # the core reader and the hook reader never look at pods
    pods = [pod({"app": "db"}, **CRASHING)]
    assert read(sts(), reader="core", pods=pods).status is Status.IN_PROGRESS
    assert read(sts(), reader="hook", pods=pods).status is Status.CURRENT


@pytest.mark.parametrize(
    "candidate",
    [pod({"app": "other"}, **CRASHING), pod({"app": "db"}, namespace="elsewhere", **CRASHING)],
)
def test_pod_controller_reader_ignores_unselected_pods(candidate: dict[str, Any]) -> None:
    assert read(sts(), reader="flux-wait", pods=[candidate]).status is Status.IN_PROGRESS


def test_unschedulable_pod_is_a_transient_failure_in_the_fork() -> None:
    p = unschedulable_pod(T0)
    p["metadata"].update(namespace="shop", labels={"app": "db"})
    res = read(sts(), reader="flux-wait", now=T0 + timedelta(minutes=1), pods=[p])
    assert (res.status, res.message) == (Status.IN_PROGRESS, "Ready: 0/1")


def test_match_expressions_select_pods() -> None:
    owner = sts(selector={"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]})
    pods = [pod({"app": "db"}, **CRASHING)]
    assert read(owner, reader="flux-wait", pods=pods).status is Status.FAILED


@pytest.mark.parametrize(
    ("selector", "error"),
    [(None, "no selector found"),
     ({"matchExpressions": [{"key": "a", "operator": "Near"}]},
      '"Near" is not a valid label selector operator')],
)
def test_pod_controller_without_a_usable_selector_is_unknown(selector: Any, error: str) -> None:
    owner = sts()
    if selector is None:
        del owner["spec"]["selector"]
    else:
        owner["spec"]["selector"] = selector
    assert read(owner, reader="flux-wait").error == error
    assert read(owner, reader="core").status is Status.IN_PROGRESS


def test_deployment_reader_ignores_pods() -> None:
    dep = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "db", "namespace": "shop"},
           "spec": {"selector": {"matchLabels": {"app": "db"}}}, "status": {}}
    res = read(dep, reader="flux-wait", pods=[pod({"app": "db"}, **CRASHING)])
    assert (res.status, res.message) == (Status.IN_PROGRESS, "Replicas: 0/1")


def test_hook_reader_waits_only_for_jobs_and_pods() -> None:
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "status": {}}
    assert read(dep, reader="hook") == Result(Status.CURRENT, "Resource is current")
    assert read(job(), reader="hook").message == "Job not started. active: 0/1"
    assert read(FAILED_JOB, reader="hook").status is Status.FAILED


# --- wait -----------------------------------------------------------------------------------------

JOB_ID = ObjectId("Job", "shop", "migrate", "batch")
PVC_ID = ObjectId("PersistentVolumeClaim", "shop", "data")
NS_ID = ObjectId("Namespace", "", "shop")


def test_failed_hook_job_stops_at_once_without_fail_fast() -> None:
    entries = [(JOB_ID, read(FAILED_JOB, reader="hook"))]
    d = decide(entries, fail_fast=False, deadline_exceeded=False)  # WatchUntilReady: no fail-fast
    assert d.stop
    assert d.error == "failed early due to stalled resources: [Job/shop/migrate status: 'Failed']"


def test_never_seen_entries_are_unknown_at_the_deadline() -> None:
    entries = [(PVC_ID, None), (NS_ID, Result(Status.CURRENT, ""))]
    assert not decide(entries, fail_fast=True, deadline_exceeded=False).stop
    d = decide(entries, fail_fast=True, deadline_exceeded=True)
    assert d.error == "timeout waiting for: [PersistentVolumeClaim/shop/data status: 'Unknown']"


def test_no_event_at_all_cannot_determine_status() -> None:
    d = decide([(PVC_ID, None), (JOB_ID, None)], jobs_with_ttl=[JOB_ID], fail_fast=True,
               deadline_exceeded=True, observed=False)
    assert d.error == (
        "timeout waiting for: [can't determine status for PersistentVolumeClaim/shop/data]"
    )


def test_errors_keep_the_input_order_and_cluster_scoped_ids() -> None:
    entries = [(NS_ID, Result(Status.TERMINATING, "")), (PVC_ID, Result(Status.IN_PROGRESS, ""))]
    d = decide(entries, fail_fast=True, deadline_exceeded=True)
    assert d.error == (
        "timeout waiting for: [Namespace/shop status: 'Terminating', "
        "PersistentVolumeClaim/shop/data status: 'InProgress']"
    )


def test_empty_set_and_all_current_stop_without_error() -> None:
    assert decide([], fail_fast=True, deadline_exceeded=False).error is None
    d = decide([(PVC_ID, Result(Status.CURRENT, ""))], fail_fast=True, deadline_exceeded=False)
    assert (d.stop, d.error) == (True, None)


def test_object_id_of_an_object() -> None:
    assert ObjectId.of(FAILED_JOB) == JOB_ID
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}
    assert str(ObjectId.of(ns)) == "Namespace/x"
