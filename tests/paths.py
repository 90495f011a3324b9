"""Where the tests find the repository and their own files, whatever folder a test module sits in."""

from __future__ import annotations

from pathlib import Path

#: this folder: the shared helpers, ``data/``, ``crashing_worker.py``
TESTS = Path(__file__).resolve().parent
#: the repository (README.md, docs/, benchmarks/, the product folders)
REPO_ROOT = TESTS.parent
