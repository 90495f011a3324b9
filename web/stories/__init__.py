"""Top stories, a story's page, a version's added passages, their JSON API and the Atom feeds of every story list."""
