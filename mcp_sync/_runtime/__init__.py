"""The machinery both sides run on: loop threads, the call that crosses from a caller's thread to a
loop, the one callback thread, and the states and process hooks (fork, exit, once per process).

Each piece says which thread runs which part of it. May import: `_values` and the operating-system
boundary (`_os`) only.
"""
