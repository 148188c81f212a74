"""What an order is and what its fill asks, as pure logic: statuses, rows, requests, and the fill
policy that reads a stock answer for one order; no database, no HTTP, no I/O."""
