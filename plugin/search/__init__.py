"""Searching a folded index: one hit per story, its other versions, top stories and a story's page.

``queries`` builds folded searches (``fold_query``, ``collapsed_search``) and reads them back
(``folded_hits``); ``public_query`` checks what a public search may ask and turns it into clauses;
``folded_search.fold_search`` runs a folded search on a host's index; ``story_queries`` builds and reads
top stories, ``story_versions`` one story's page and ``version_relations`` a story's reference and each
version's relation to it; ``page_dates`` says which page times are believed; ``hits`` says which fields
a hit shows.
"""
