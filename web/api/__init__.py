"""The JSON API under ``/api``: search, clusters, page submission, tasks, jobs, syndication and editors' corrections.

The story lists' own JSON routes live with their pages (``web/stories/views.py``); ``/api/openapi.json``
describes every ``/api`` route (``web/openapi.json``, the corrections' parts built by ``web.api.openapi_doc``).
"""
