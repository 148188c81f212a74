"""SQL for both services: engines and transactions, shared column types, the database's clock.
The same on SQLite, PostgreSQL and MySQL/MariaDB; no table of either service is defined here.

    engines.py   engines (with statement and lock timeouts) and transactions
    columns.py   column types: identifiers that compare exactly on every database
    clock.py     one clock for every deadline: the database's
    startup.py   the schema policy at start-up (migrate when asked)
"""
