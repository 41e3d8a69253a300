"""helmsim: rehearse Helm and Flux rollouts offline."""

__version__ = "0.1.0"
