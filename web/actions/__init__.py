"""What several parts of the site do: run a search or the top stories, correct and name stories, start jobs,
check a merge, count syndication. The features (``web.search``, ``web.stories``, ``web.admin``, ``web.api``)
import these and never each other (docs/architecture.md)."""
