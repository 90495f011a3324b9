"""The search page: its arguments, the folded story search it runs, and its view."""
