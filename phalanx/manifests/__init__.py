"""Install manifests for Phalanx on a real cluster (`phalanx manifests all`)."""

from .install import InstallOptions, install_manifests, to_yaml

__all__ = ["InstallOptions", "install_manifests", "to_yaml"]
