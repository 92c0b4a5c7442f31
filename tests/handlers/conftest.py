"""Handler tests reuse the discovery fixtures, and share umockdev testbeds per module."""

from collections.abc import Iterator

import pytest

from tests.discovery.conftest import agent, make_session, recorder, registry
from tests.handlers.umockdev import Testbed

__all__ = ["agent", "make_session", "recorder", "registry"]


@pytest.fixture(scope="module")
def shared_testbed() -> Iterator[Testbed]:
    """Module-scoped: set up before the per-test leak check snapshots the open sockets."""
    bed = Testbed()
    yield bed
    bed.close()


@pytest.fixture
def testbed(shared_testbed: Testbed) -> Iterator[Testbed]:
    """The module's testbed, emptied after the test."""
    yield shared_testbed
    shared_testbed.remove_all()
