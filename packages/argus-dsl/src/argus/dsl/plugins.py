"""Entry-point plugins: the discovery helper every Argus package shares (see argus.verify.plugins)."""

from argus.verify.plugins import GROUPS, Plugin, PluginError, discover

__all__ = ["GROUPS", "Plugin", "PluginError", "discover"]
