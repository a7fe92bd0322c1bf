"""perflab: measure the hot paths of runtimes, kernels and system libraries."""

__version__ = "0.1.0"
