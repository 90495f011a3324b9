"""Editors' corrections: split a page out, merge two stories, mark a pair not duplicates, pick the representative.

``corrections`` applies them (and re-applies them after a reindex); ``undo`` undoes one; ``correction_log``
records, checks and lists them. Folding reads them back through ``plugin.fold.constraints``.
"""
