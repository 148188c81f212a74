"""The order service's HTTP face: the routes of orders and reservations, their request and
answer schemas, the dashboard; turns a request into calls of the capabilities below, no rules."""
