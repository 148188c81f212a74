"""Infrastructure both services use. It knows nothing of orders or stock."""
