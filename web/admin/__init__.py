"""The admin (behind the login): clusters, their evidence and comparison, corrections, statistics and jobs."""
