"""Host-model programs for tests/test_hosts.py: small scripts run as subprocesses (a forking
program, a script interrupted with Ctrl-C, one that exits with calls in flight, ...), and the
helpers they share with the tests (`tests.hosts._common`)."""
