"""One module per endpoint."""
