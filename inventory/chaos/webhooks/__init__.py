"""The chaos run's receiver of the stock service's webhooks, and W1, the check of what it got.

receipts.py: one delivery as the receiver saw it (its signature verified with the
subscription's secret), the log it appends and fsyncs before it answers 2xx, and an HTTP
handler that both the chaos program and `inventory demo webhooks` serve; receiver.py: the
program run on a host of the cluster; check.py: W1, a pure function over the log, the outbox
and the dead letters; subscriber.py: what the run does (start the receiver, subscribe, wait
for the deliveries, judge them).
"""
