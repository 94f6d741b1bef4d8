"""scripts/fakepod runs this: the fakepod package's CLI (sim/fakepod/cli.py)."""
from fakepod.cli import main

main()
