"""``python -m helmsim`` runs the CLI."""

from helmsim.entry import main

main()
