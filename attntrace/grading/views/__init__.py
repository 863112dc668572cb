"""grade's views: the report as a person reads it."""
