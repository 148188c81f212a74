"""The `inventory` command: local stack, seeding, demos. It drives the services from outside,
over HTTP, like any client."""
