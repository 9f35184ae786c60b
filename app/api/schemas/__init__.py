"""Request and response models: the API contract as published in ``openapi.yaml``."""
