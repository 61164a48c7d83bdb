"""What the tests share: fake hardware roots, child interpreters, the Slurm cluster harness."""
