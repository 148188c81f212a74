"""`inventory chaos`, the Jepsen way: buyers under load (workload) recording a history
(history) while a nemesis breaks the cluster (nemesis); then a checker of the history against
the databases (checker) and a report with a timeline (report); `run` ties them together."""
