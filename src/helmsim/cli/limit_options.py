"""The options every command shares: the budgets of :mod:`helmsim.limits` and ``--debug``.

:func:`with_common_options` adds them to a command's signature (in a "Limits" help panel), so
each command module declares only its own options.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer

from helmsim import limits

_PREFIX = "_limit_"
_DEBUG = "_common_debug"


def _parameters() -> list[inspect.Parameter]:
    params = []
    for f in limits.FIELDS:
        default = limits.show(f.name, getattr(limits.Limits(), f.name))
        option = typer.Option(
            f.metadata["flag"],
            help=f"{f.metadata['help']} Default {default}; 0: no limit "
            f"(env {limits.env_var(f)}).",
            metavar={"bytes": "SIZE", "seconds": "DURATION"}.get(f.metadata["unit"], "N"),
            rich_help_panel="Limits",
            show_default=False,
        )
        params.append(
            inspect.Parameter(
                _PREFIX + f.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=None,
                annotation=Annotated[str | None, option],
            )
        )
    debug = typer.Option(
        "--debug",
        help="Show what Helm's engine logs (its warnings and INFO lines) on stderr.",
        rich_help_panel="Limits",
    )
    params.append(
        inspect.Parameter(
            _DEBUG, inspect.Parameter.KEYWORD_ONLY, default=False, annotation=Annotated[bool, debug]
        )
    )
    return params


def with_common_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with the limit flags and ``--debug`` added; they are applied while it runs."""
    signature = inspect.signature(fn, eval_str=True)
    own = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        given = {k: kwargs.pop(k) for k in list(kwargs) if k.startswith(_PREFIX)}
        debug = bool(kwargs.pop(_DEBUG, False))
        with applied(given, debug=debug):
            return fn(*args, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=[*own, *_parameters()])  # type: ignore[attr-defined]
    return wrapper


@contextmanager
def applied(given: dict[str, str | None], *, debug: bool = False) -> Iterator[limits.Limits]:
    """The limits from the environment with the flags that were given on top, in effect."""
    from helmsim import engine_worker

    base = limits.from_env()
    changes = {}
    for f in limits.FIELDS:
        text = given.get(_PREFIX + f.name)
        if text is not None:
            changes[f.name] = limits.parse_value(f, text)
    with limits.use(limits.Limits(**{**base.__dict__, **changes})) as active, engine_worker.debug(debug):
        yield active
