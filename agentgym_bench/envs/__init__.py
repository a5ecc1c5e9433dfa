"""Core game environments: one package or module per game, pure rules kept apart from the Gymnasium adapter."""
