"""``python -m heinzel`` is the same as ``hz``."""

from heinzel.cli import main

if __name__ == "__main__":
    main()
