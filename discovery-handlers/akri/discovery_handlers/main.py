"""Entry point of `akri-discovery-handler`."""

from akri.placeholder import not_implemented


def main() -> int:
    return not_implemented("akri-discovery-handler")
