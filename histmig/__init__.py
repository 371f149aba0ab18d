"""histmig: move AI coding-agent chat history between tools and through change, losslessly."""

__version__ = "0.1.0"
