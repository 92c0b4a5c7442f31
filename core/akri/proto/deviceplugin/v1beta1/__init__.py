"""Device plugin API v1beta1: generated messages and stubs plus hand-written constants."""
