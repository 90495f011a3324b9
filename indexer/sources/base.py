"""The ``Source`` protocol every ingest input keeps, and the choice of a source for a path.

An input is a PAGES.jsonl file (``indexer.sources.jsonl``), a directory tree of
HTML files (``indexer.sources.directory``) or a WARC file (``indexer.sources.warc``).
A new kind of input is a class keeping :class:`Source`, added to :data:`SOURCES`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Protocol, runtime_checkable

from newsfold.indexer.records import PageRecord, SourceStats, counted, error_record
from newsfold.indexer.sources.directory import Folder
from newsfold.indexer.sources.jsonl import PageList
from newsfold.indexer.sources.warc import WarcFile
from newsfold.plugin.page_limits import DEFAULT_MAX_PAGE_BYTES


@runtime_checkable
class Source(Protocol):
    """One kind of ingest input: what ``newsfold ingest`` and its ``--resume`` rely on.

    A new kind of source (an RSS feed, a queue) must promise the same, for
    example by spooling to a file first, or bring its own checkpoint:

    - **It is named by a local path** (a job stores the paths it was started
      with), and :meth:`read` reads it by that path alone.
    - **It can be read again, and gives the same records in the same order.**
      ``indexer.jobs.ingest`` cuts the records into batches numbered in input
      order (by the batch size and byte limit stored with the job), and the job
      counts each batch under its number. A resumed run reads every source
      again from the start and skips the batches already counted *by number*,
      so a source that changed, or gives another order, would skip pages never
      sent and send others twice. Error records are recorded under their
      ``origin``, which must be stable too.
    - **It is read once, one page at a time**: :meth:`read` returns a generator
      that never holds the whole input, so a source of any size streams.
    - **It never raises for bad input**: anything unusable (a bad line, a
      missing or unreadable file, a damaged record) becomes a
      :class:`~newsfold.indexer.records.PageRecord` with ``error`` set (and
      ``id`` when known), and the iteration goes on.
    - **Sizes are checked at the source**: a page over ``max_bytes``, or gzip
      bytes inflating past it, is a ``too_large`` error record
      (``records.checked_at_source``), so no page over the limit reaches a worker;
      so are ids: one outside the grammar of ``plugin.ids`` is a ``bad_id`` error record.
    """

    #: how an unsupported input's message names this kind ("a directory")
    described: str

    def accepts(self, path: Path) -> bool:
        """Whether ``path`` is this kind of input (asked in :data:`SOURCES` order; a name or a stat, no reading)."""
        ...

    def read(
        self, path: Path, *, stats: SourceStats | None, max_bytes: int, roots: list[str] | None
    ) -> Iterator[PageRecord]:
        """The records of ``path``, counted into ``stats``; ``roots`` are the folders links may lead into."""
        ...

    def count_hint(self, path: Path) -> int | None:
        """A cheap total for a progress bar, or None when only reading would tell (may raise OSError)."""
        ...


#: the sources, asked in this order which one a path is (a folder named ``x.jsonl`` is a folder)
SOURCES: tuple[Source, ...] = (Folder(), PageList(), WarcFile())


def source_for(path: Path) -> Source | None:
    """The source that reads ``path``, or None for an input no source accepts."""
    return next((source for source in SOURCES if source.accepts(path)), None)


def iter_source(
    path: Path | str,
    *,
    stats: SourceStats | None = None,
    max_bytes: int = DEFAULT_MAX_PAGE_BYTES,
    roots: list[str] | None = None,
) -> Iterator[PageRecord]:
    """Records of any supported input: a directory, a ``.jsonl`` file, or a ``.warc`` / ``.warc.gz`` file.

    Sizes are checked here, at the source: a page over ``max_bytes``, or
    gzip bytes inflating past it, is a ``too_large`` error record, so no page
    over the limit ever reaches a worker; a page whose id is outside the
    grammar of ``plugin.ids`` is a ``bad_id`` error record. ``roots`` are the folders besides a
    directory input that its links may lead into (``NEWSFOLD_READ_ROOTS``).
    A missing or unsupported input yields a single error record naming it.
    Reading the same path again gives the same records in the same order
    (the contract of :class:`Source`; ``--resume`` relies on it).
    """
    path = Path(path)
    source = source_for(path)
    if source is not None:
        return source.read(path, stats=stats, max_bytes=max_bytes, roots=roots)
    if not path.exists():
        message = f"{path}: no such file or directory"
    else:
        kinds = [s.described for s in SOURCES]
        message = f"unsupported input {path}: expected {', '.join(kinds[:-1])} or {kinds[-1]}"
    return counted(iter([error_record(message, str(path))]), stats)


def count_hint(path: Path | str) -> int | None:
    """A cheap total for a progress bar: JSONL non-blank lines, HTML files of a directory; None for WARC/unknown."""
    path = Path(path)
    source = source_for(path)
    try:
        return source.count_hint(path) if source is not None else None
    except OSError:
        return None
