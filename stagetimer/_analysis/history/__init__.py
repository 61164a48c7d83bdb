"""history: a stage across a repository's commits, since when it is slower, and what changed."""
