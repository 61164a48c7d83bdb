"""The floor under everything: file reads, bounded commands, mounts, units, git's
environment, the NVML module and the one durable write.

Each module here imports nothing of stagetimer but its errors, so every other package
(the hardware and software probes, the sidecar protocol, the recorder, the readers) may
import it.
"""
