#!/usr/bin/env python3
"""A launcher as torchrun is one: starts the command given twice, as ranks 0 and 1 of 2
(RANK, WORLD_SIZE), uses no CUDA itself, and exits with the workers' worst status.

Usage: launcher.py command [argument...]
"""
import os
import subprocess
import sys

workers = [
    subprocess.Popen(sys.argv[1:], env=dict(os.environ, RANK=str(rank), WORLD_SIZE="2"))
    for rank in range(2)
]
sys.exit(max(w.wait() for w in workers))
