"""Searching a folded index: one hit per story, its other versions, top stories and a story's page.

``queries`` builds the search bodies (``fold_query``, ``collapsed_search``) and reads them back
(``folded_hits``); ``folded_search.fold_search`` runs one on a host's index; ``story_queries`` builds and
reads top stories, a story's versions and their relations; ``hits`` says which fields a hit shows.
"""
