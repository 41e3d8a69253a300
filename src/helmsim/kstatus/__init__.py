"""kstatus in Python: cli-utils ``status.Compute``, Flux's status readers and the ssa wait decision.

``compute`` follows the fluxcd/cli-utils fork (v1.2.1) that helm-controller links by default;
``read`` picks a reader by name (``core``, ``flux-wait``, ``flux-wait-jobs``, ``hook``);
``helmsim.kstatus.wait`` models fluxcd/pkg ssa WaitForSetWithContext's stop/error decision.
"""

from helmsim.kstatus.core import SCHEDULE_WINDOW, Variant, compute
from helmsim.kstatus.readers import (
    READERS,
    aggregate,
    compute_job_status,
    flux_job_status,
    hook_pod_status,
    pod_controller_result,
    read,
)
from helmsim.kstatus.types import Condition, ObjectId, Result, Status

__all__ = [
    "READERS",
    "SCHEDULE_WINDOW",
    "Condition",
    "ObjectId",
    "Result",
    "Status",
    "Variant",
    "aggregate",
    "compute",
    "compute_job_status",
    "flux_job_status",
    "hook_pod_status",
    "pod_controller_result",
    "read",
]
