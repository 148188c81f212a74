"""Load and what it costs: the light HTTP client of the bench and CPU read from /proc."""
