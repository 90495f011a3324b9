"""What the admin shows: the overview, the story list and detail, statistics, and why pages share a story.

``admin_queries`` builds the aggregations and lists; ``evidence`` explains a story's membership (pure).
"""
