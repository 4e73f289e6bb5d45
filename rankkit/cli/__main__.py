"""``python -m rankkit.cli``: the command-line interface, as ``python -m rankkit``."""

from rankkit.cli import main

if __name__ == "__main__":
    main()
