"""mlprep: practise the implementation side of ML interviews, offline."""

__version__ = "0.1.0"
