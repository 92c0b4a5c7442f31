"""Entry point of `akri-controller`."""

from akri.placeholder import not_implemented


def main() -> int:
    return not_implemented("akri-controller")
