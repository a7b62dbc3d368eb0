"""Loading hooks from configuration: "module:callable" names and `graphmem.hooks` entry points.

A configured object is a hook (a callable taking an actors.hooks.HookEvent). A name that does
not import or does not name a callable stops start-up with a message saying which and why: a
hook meant to veto writes must never be skipped silently.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from importlib.metadata import entry_points

import structlog

from actors.hooks import Hook

__all__ = ["ENTRY_POINT_GROUP", "HookConfigError", "load_hooks"]

log = structlog.get_logger(__name__)

ENTRY_POINT_GROUP = "graphmem.hooks"


class HookConfigError(ValueError):
    """A configured hook cannot be loaded; the message names it and says why."""


def load_hooks(names: Iterable[str], *, use_entry_points: bool = True) -> list[Hook]:
    hooks = [_load(name) for name in names]
    if use_entry_points:
        for point in entry_points(group=ENTRY_POINT_GROUP):
            try:
                hooks.append(_callable(point.load(), f"entry point {point.name} ({point.value})"))
            except HookConfigError:
                raise
            except Exception as error:
                raise HookConfigError(
                    f"the {ENTRY_POINT_GROUP} entry point {point.name} ({point.value}) does "
                    f"not load: {error!r}"
                ) from error
    if hooks:
        log.info("hooks_loaded", count=len(hooks))
    return hooks


def _load(name: str) -> Hook:
    module_name, sep, attribute = name.partition(":")
    if not sep or not module_name or not attribute:
        raise HookConfigError(
            f"GRAPHMEM_HOOKS entry {name!r} is not 'module:callable' (e.g. myhooks:audit)"
        )
    try:
        target: object = importlib.import_module(module_name)
    except Exception as error:
        raise HookConfigError(
            f"hook {name!r}: module {module_name} does not import: {error!r}"
        ) from error
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise HookConfigError(f"hook {name!r}: {module_name} has no {attribute}") from None
    return _callable(target, f"hook {name!r}")


def _callable(target: object, where: str) -> Hook:
    if not callable(target):
        raise HookConfigError(f"{where} is not callable; a hook takes one HookEvent")
    return target
