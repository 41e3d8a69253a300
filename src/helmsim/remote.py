"""Remote charts: ``oci://`` references and chart repositories, pulled with Helm's own client.

``helmsim render oci://registry.example.com/charts/app --version 1.2.0`` and ``helmsim render
app --repo https://charts.example.com --version 1.2.0`` download the chart archive the way
``helm pull`` does (helm-python-sdk's ``helm_pull``, in the engine worker: bounded and quiet),
with Helm's registry configuration (logins of ``helm registry login``) and TLS settings, into a
private temporary directory removed when the command ends. What cannot be pulled is one line.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

from helmsim import engine_worker
from helmsim.errors import InputError


def is_remote(target: str, repo: str | None) -> bool:
    """True when ``target`` names a chart to pull: an ``oci://`` reference, or any name with
    ``--repo`` (helm/helm pkg/action/pull.go: registry.IsOCI, else a repository chart)."""
    return target.startswith("oci://") or repo is not None


def pull_chart(
    ref: str,
    *,
    version: str | None = None,
    repo: str | None = None,
    plain_http: bool = False,
    insecure: bool = False,
) -> str:
    """The local ``.tgz`` of the chart ``ref`` (``oci://…``, or a chart name in ``repo``) at
    ``version`` (default the newest), in a temporary directory removed at exit."""
    if repo is not None and ref.startswith("oci://"):
        raise InputError(f"{ref}: an oci:// reference takes no --repo")
    dest = Path(tempfile.mkdtemp(prefix="helmsim-pull-"))
    atexit.register(shutil.rmtree, dest, True)
    where = f"{ref} from {repo}" if repo else ref
    try:
        engine_worker.call(
            "pull", subject=ref, ref=ref, dest=str(dest), version=version, repo=repo,
            plain_http=plain_http, insecure=insecure,
        )
    except engine_worker.EngineError as err:
        text = str(err).strip().splitlines()
        raise InputError(f"cannot pull chart {where}: {text[0] if text else type(err).__name__}") from None
    archives = sorted(dest.glob("*.tgz"))
    if len(archives) != 1:
        raise InputError(f"cannot pull chart {where}: Helm wrote no chart archive")
    return str(archives[0])
