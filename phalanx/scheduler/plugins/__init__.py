"""Scheduler plugins, one module each; each registers itself with `register_plugin`."""
