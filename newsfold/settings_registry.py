"""Every environment variable newsfold reads, in one place, derived from the settings classes.

The core's ``Settings`` (``newsfold.plugin.settings``) and the web's
``WebSettings`` (``newsfold.web.config``) are frozen dataclasses read from the
environment: each field is one variable (their ``ENV_NAMES``), each class groups
its fields by concern (``CONCERNS``) and names those a deployment must set
(``MUST_SET``). The few variables of the tools around them (the local
Elasticsearch node, ``./run``, the test suite) are :data:`TOOLS`. Nothing else
lists a name: :data:`VARIABLES` is the table of docs/configuration.md (a test
checks the page against it), and :func:`warn_unknown_env` warns about a
``NEWSFOLD_*`` variable that none of them reads. The ``newsfold`` command, the
web app and the Celery app call it once at start; a host that embeds the core
may call it too.

The web's settings module imports no Flask, so a worker reads it without
loading the web.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from newsfold.plugin import settings as core
from newsfold.web import config as web

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Variable:
    """One environment variable: its concern, its default as the docs show it, and what reads it."""

    name: str
    concern: str
    default: str | None  # None: unset (the meaning says what stands in)
    read_by: str  # ``Settings.<field>``, ``WebSettings.<field>`` or the file that reads it
    must_set: bool = False

    @property
    def default_cell(self) -> str:
        """The default as the table of docs/configuration.md shows it."""
        return "unset" if self.default is None else f"`{self.default}`"


def shown(value: Any) -> str | None:
    """A default as docs/configuration.md shows it: ``1``/``0`` for a switch, ``30`` for ``30.0``; None unset."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _of(
    cls: type, env_names: Mapping[str, str], concerns: Mapping[str, str], must_set: tuple[str, ...]
) -> Iterator[Variable]:
    """The variables of a settings class, in field order, each under the concern its field falls in."""
    unknown = sorted((set(concerns) | set(must_set)) - set(env_names))
    if unknown:
        raise RuntimeError(f"{cls.__name__}: CONCERNS or MUST_SET name no field: {unknown}")
    concern = None
    for f in dataclasses.fields(cls):
        concern = concerns.get(f.name, concern)
        if concern is None:
            raise RuntimeError(f"{cls.__name__}: the first field must open a concern (CONCERNS)")
        yield Variable(env_names[f.name], concern, shown(f.default), f"{cls.__name__}.{f.name}", f.name in must_set)


#: the variables of the tools around the settings: the local Elasticsearch node, ``./run`` and the test suite
TOOLS = (
    Variable("NEWSFOLD_ES_HOME", "Tools", None, "newsfold/esinstall.py"),
    Variable("NEWSFOLD_M2_REPO", "Tools", "~/.m2/repository", "newsfold/esinstall.py"),
    Variable("NEWSFOLD_VENV", "Tools", ".venv", "run"),
    Variable("NEWSFOLD_BROWSER_DIR", "Tools", "/usr/bin", "run"),
    Variable("NEWSFOLD_TEST_BACKEND", "Tools", None, "tests/backends.py"),
    Variable("NEWSFOLD_SERVER_TESTS_ONLY", "Tools", None, "tests/backends.py"),
    Variable("NEWSFOLD_FUZZ_EXAMPLES", "Tools", "50", "tests/web/api/test_schema_fuzz.py"),
)

#: every variable newsfold reads, the core's first, then the web's, then the tools'
VARIABLES = (
    *_of(core.Settings, core.ENV_NAMES, core.CONCERNS, core.MUST_SET),
    *_of(web.WebSettings, web.ENV_NAMES, web.CONCERNS, web.MUST_SET),
    *TOOLS,
)
#: the concerns, in the order the docs show them
CONCERN_ORDER = tuple(dict.fromkeys(v.concern for v in VARIABLES))
NAMES = frozenset(v.name for v in VARIABLES)
_warned: set[str] = set()


def unknown_env(environ: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """Each ``NEWSFOLD_*`` variable of ``environ`` (``os.environ``) that newsfold does not read -> the nearest
    real name, or None."""
    environ = os.environ if environ is None else environ
    suffixes = sorted(name.removeprefix("NEWSFOLD_") for name in NAMES if name.startswith("NEWSFOLD_"))
    out: dict[str, str | None] = {}
    for name in sorted(environ):
        if name.startswith("NEWSFOLD_") and name not in NAMES:
            close = difflib.get_close_matches(name.removeprefix("NEWSFOLD_"), suffixes, n=1, cutoff=0.7)
            out[name] = f"NEWSFOLD_{close[0]}" if close else None
    return out


def warn_unknown_env(environ: Mapping[str, str] | None = None) -> None:
    """Log a warning, once per process and name, for every ``NEWSFOLD_*`` variable that nothing reads."""
    for name, nearest in unknown_env(environ).items():
        if name not in _warned:
            _warned.add(name)
            hint = f"; did you mean {nearest}?" if nearest else " (see docs/configuration.md)"
            log.warning("%s is not a newsfold setting and is ignored%s", name, hint)
