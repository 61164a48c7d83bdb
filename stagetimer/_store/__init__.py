"""The sidecar protocol writers and readers share: lock, read, rules, write, recover, migrate."""
