"""What a local Elasticsearch node needs before it starts: the distribution, a Java, a user to run as.

- **the server:** Elasticsearch's runnable minimal distribution (the
  ``integ-test-zip`` that Elasticsearch's own plugin tests start), pinned by
  :data:`ES_VERSION` and fetched with ``mvn dependency:get`` into
  ``~/.m2/repository``, then unpacked once into the cache folder
  (``NEWSFOLD_ES_HOME``; default ``~/.cache/newsfold``, or
  ``/var/cache/newsfold`` for root);
- **Java:** Elasticsearch 9 needs Java 21+ with the ``jdk.jlink`` and
  ``jdk.incubator.vector`` modules. :func:`find_java` tries ``ES_JAVA_HOME``,
  then ``JAVA_HOME``, then every JDK under ``/usr/lib/jvm`` (newest first),
  runs each and keeps the first that passes; it says what each candidate
  lacked when none does;
- **root:** Elasticsearch refuses to run as root, so a launcher running as
  root runs the node as the system user ``newsfold-es`` (created on first
  use, :func:`service_user`); anyone else runs it as themselves.

:mod:`newsfold.esnode` runs the node.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from newsfold.plugin.errors import NewsfoldError

ES_VERSION = "9.5.4"  # the one pin: the newest 9.x Maven Central serves (docs/operations.md)
ARTIFACT = f"org.elasticsearch.distribution.integ-test-zip:elasticsearch:{ES_VERSION}:zip"
SERVICE_USER = "newsfold-es"
JAVA_MODULES = ("jdk.jlink", "jdk.incubator.vector")  # the distribution's module path and jvm.options need both


class NodeError(NewsfoldError, RuntimeError):
    """The node cannot be fetched, started or reached; the message says why and what to do."""


def cache_dir() -> Path:
    """Where the unpacked distribution lives (readable by the service user when running as root)."""
    if os.environ.get("NEWSFOLD_ES_HOME"):
        return Path(os.environ["NEWSFOLD_ES_HOME"])
    if os.geteuid() == 0:
        return Path("/var/cache/newsfold")
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "newsfold"


def _maven_zip() -> Path:
    repo = Path(os.environ.get("NEWSFOLD_M2_REPO") or Path.home() / ".m2" / "repository")
    return (
        repo
        / "org/elasticsearch/distribution/integ-test-zip/elasticsearch"
        / ES_VERSION
        / (f"elasticsearch-{ES_VERSION}.zip")
    )


def fetch_distribution(*, announce=print) -> Path:
    """The unpacked distribution's folder, fetched with ``mvn`` and unpacked on first use only."""
    home = cache_dir() / f"elasticsearch-{ES_VERSION}"
    if (home / "bin" / "elasticsearch").is_file():
        return home
    archive = _maven_zip()
    if not archive.is_file():
        mvn = shutil.which("mvn")
        if mvn is None:
            raise NodeError(f"Maven (mvn) is not installed: it fetches {ARTIFACT} from Maven Central")
        announce(f"fetching Elasticsearch {ES_VERSION} from Maven Central ({ARTIFACT})")
        done = subprocess.run(
            [mvn, "-q", "-B", "dependency:get", f"-Dartifact={ARTIFACT}", "-Dtransitive=false"],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0 or not archive.is_file():
            said = (done.stdout + done.stderr).splitlines()
            lines = [ln for ln in said if "ERROR" in ln][:6] or said[-6:]
            raise NodeError(
                f"mvn could not fetch {ARTIFACT} (exit {done.returncode}):\n  " + "\n  ".join(lines or ["no output"])
            )
    announce(f"unpacking {archive.name} into {home}")
    home.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=home.parent))
    try:
        try:
            with zipfile.ZipFile(archive) as zf:
                for info in zf.infolist():
                    target = zf.extract(info, staging)
                    mode = (info.external_attr >> 16) & 0o777
                    if mode and not info.is_dir():
                        os.chmod(target, mode | 0o444)  # zipfile drops the executable bits the launcher needs
        except (zipfile.BadZipFile, OSError) as exc:
            raise NodeError(f"cannot unpack {archive} ({exc}): delete it and run the command again") from exc
        (top,) = list(staging.iterdir())
        for path in [top, *top.rglob("*")]:  # readable (and folders enterable) by the service user
            os.chmod(path, path.stat().st_mode | (0o555 if path.is_dir() else 0o444))
        try:
            top.rename(home)
        except OSError:
            if not (home / "bin" / "elasticsearch").is_file():  # else another process unpacked it first
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return home


def _java_version(java: Path) -> tuple[int, str] | None:
    try:
        out = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r'version "(\d+)(?:\.[\d.]+)?[^"]*"', out)
    return (int(m.group(1)), out.splitlines()[0]) if m else None


def check_java(home: Path) -> str:
    """Why the JDK at ``home`` cannot run the node, or "" when it can."""
    java = home / "bin" / "java"
    if not java.is_file():
        return "no bin/java"
    version = _java_version(java)
    if version is None:
        return "bin/java does not run"
    if version[0] < 21:
        return f"Java {version[0]} (Elasticsearch 9 needs 21 or newer)"
    try:
        modules = subprocess.run([str(java), "--list-modules"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "bin/java --list-modules failed"
    names = {line.split("@")[0] for line in modules.split()}
    missing = [m for m in JAVA_MODULES if m not in names]
    return f"lacks the module(s) {', '.join(missing)}" if missing else ""


def java_candidates() -> list[tuple[str, Path]]:
    found: list[tuple[str, Path]] = []
    for var in ("ES_JAVA_HOME", "JAVA_HOME"):
        if os.environ.get(var):
            found.append((var, Path(os.environ[var])))
    jvms = Path("/usr/lib/jvm")
    if jvms.is_dir():

        def newest(path: Path) -> tuple[int, str]:
            m = re.search(r"(\d+)", path.name)
            return (int(m.group(1)) if m else 0, path.name)

        dirs = [p for p in jvms.iterdir() if p.is_dir() and not p.is_symlink()]
        found += [(str(p), p) for p in sorted(dirs, key=newest, reverse=True)]
    return found


def find_java() -> Path:
    """The first JDK that can run Elasticsearch 9, or :class:`NodeError` listing why each candidate failed."""
    tried = []
    for origin, home in java_candidates():
        problem = check_java(home)
        if not problem:
            return home
        tried.append(f"{origin} ({home}): {problem}")
    raise NodeError(
        "no Java that can run Elasticsearch 9 was found (it needs Java 21+ with the modules "
        f"{', '.join(JAVA_MODULES)}); set ES_JAVA_HOME to one. Tried:\n  " + "\n  ".join(tried or ["nothing"])
    )


def service_user() -> tuple[int, int] | None:
    """(uid, gid) to run the node as: ``newsfold-es`` (created if missing) for root, else None (ourselves)."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(SERVICE_USER)
    except KeyError:
        done = subprocess.run(
            ["useradd", "--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVICE_USER],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0 and "already exists" not in done.stderr:
            raise NodeError(
                f"Elasticsearch refuses to run as root and the user {SERVICE_USER} could not be created: "
                f"{done.stderr.strip()}"
            ) from None
        entry = pwd.getpwnam(SERVICE_USER)
    return entry.pw_uid, entry.pw_gid
