"""Editors' corrections: split a page out, merge two stories, mark a pair not duplicates, pick the representative.

``corrections`` makes them (and re-applies them after a reindex); ``effects`` applies each to the clusters;
``undo`` undoes one; ``correction_log`` records (pending until applied), checks and lists them. Folding reads them
back through ``plugin.fold.constraints``.
"""
