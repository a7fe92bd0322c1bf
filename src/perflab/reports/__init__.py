"""Reports: terminal tables, exports (JSON/CSV/Markdown), plots and HTML."""
