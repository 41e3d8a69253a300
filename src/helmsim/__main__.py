"""``python -m helmsim`` runs the CLI."""

from helmsim.cli import main

main()
