"""``helmsim fleet``: a matrix of rehearsals (releases × values × profiles × seeds) run as tasks
on the local pool or on Ray, merged in matrix order (docs/fleet.md)."""
