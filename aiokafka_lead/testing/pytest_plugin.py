"""pytest plugin (registered via the ``pytest11`` entry point): real-cluster fixtures."""
