"""The order database: its tables, the statements built once, the repository and the units of
work that move an order's status; no HTTP, and no call of the stock service."""
