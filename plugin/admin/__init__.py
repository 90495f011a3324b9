"""What the admin shows: the overview, the story list and detail, statistics, and why pages share a story.

``admin_queries`` builds the overview, the cluster list and a cluster's detail; ``stats_queries`` the
statistics page's aggregations; ``evidence`` explains a story's membership and ``text_compare`` compares
two texts word by word (both pure).
"""
