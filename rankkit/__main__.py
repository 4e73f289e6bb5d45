"""``python -m rankkit``: the command-line interface."""

from rankkit.cli import main

if __name__ == "__main__":
    main()
