"""One module per REST resource."""
