"""The API version this package was written against: docs/openapi.json's
info.version, and the package's own version (the drift test checks both)."""

API_VERSION = "1.0.0"
__version__ = API_VERSION
