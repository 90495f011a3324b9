"""The JSON API under ``/api``: search, clusters, page submission, tasks, jobs, syndication and editors' corrections.

The story lists' own JSON routes live with their pages (``web/stories/views.py``); ``web/openapi.json``
describes every ``/api`` route.
"""
