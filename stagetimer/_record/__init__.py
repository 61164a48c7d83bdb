"""Recording inside the user's process: stage and timed_stage, the Recorder, its saves."""
