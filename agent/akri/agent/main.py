"""Entry point of `akri-agent`."""

from akri.placeholder import not_implemented


def main() -> int:
    return not_implemented("akri-agent")
