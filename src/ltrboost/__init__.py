"""ltrboost: learning to rank with gradient-boosted regression trees."""

from ltrboost._version import __version__

__all__ = ["__version__"]
