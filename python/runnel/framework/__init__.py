"""Graph building: graphs, operations, tensors, dtypes, shapes, errors."""
