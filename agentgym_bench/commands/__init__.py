"""Small subcommands of the ``agentgym-bench`` CLI that belong to no other layer."""
