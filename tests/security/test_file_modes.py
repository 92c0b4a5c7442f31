"""Attack: a local user opens a socket or a key in the moment before it is made owner-only, or
puts their own in a directory they may write.

A socket connected to while group- or world-accessible stays connected after a chmod, and a
key file opened so stays readable. inotify shows whether an entry ever sat at its path before
getting its mode (IN_CREATE there, or IN_ATTRIB): it must only arrive, by rename, finished.
"""

from __future__ import annotations

import datetime
import os
import stat
from pathlib import Path

import grpc
import pytest
from kubernetes_asyncio import client

from akri.agent.discovery.registration import RegistrationServer
from akri.agent.discovery.registry import HandlerRegistry
from akri.agent.dra import checkpoint
from akri.controller.serving_certificate import KEY_FILE
from akri.discovery.registration import registration_socket
from akri.discovery.server import HandlerServer
from akri.discovery_handlers.debug_echo import DebugEcho
from akri.owner_only import make_directory
from akri.unix_sockets import add_port
from tests.controller.test_controller_webhook_certificate import WANTED, Clock, keeper, setup
from tests.security.inotify import IN_ATTRIB, IN_CREATE, IN_MOVED_TO, Watch, touched

# An attack on the node: made against the emulator even when a real cluster is given.
pytestmark = pytest.mark.node_side


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


async def test_a_socket_appears_at_its_path_already_owner_only(socket_dir: Path) -> None:
    path = socket_dir / "plugin.sock"
    server = grpc.aio.server()
    with Watch(socket_dir) as watch:
        add_port(server, f"unix://{path}")
        events = watch.events()
    await server.start()
    try:
        assert not touched(events, path.name, IN_CREATE | IN_ATTRIB), events
        assert touched(events, path.name, IN_MOVED_TO)
        assert mode(path) == 0o600
        assert os.listdir(socket_dir) == [path.name]  # nothing left aside
    finally:
        await server.stop(None)


async def test_the_registration_and_handler_sockets_appear_owner_only(socket_dir: Path) -> None:
    """The agent's registration socket and a handler's, each in a directory made for it."""
    directory = socket_dir / "handlers"
    make_directory(directory)
    with Watch(directory) as watch:
        registration = RegistrationServer(HandlerRegistry(), directory)
        await registration.start()
        try:
            async with HandlerServer(DebugEcho(availability_file=None), directory):
                events = watch.events()
        finally:
            await registration.stop()
    for name in (registration_socket(directory).name, "debugEcho.sock"):
        assert not touched(events, name, IN_CREATE | IN_ATTRIB), (name, events)
        assert touched(events, name, IN_MOVED_TO), name


def test_new_socket_directories_are_owner_only(socket_dir: Path) -> None:
    nested = socket_dir / "a" / "b"
    make_directory(nested)
    assert mode(nested) == mode(nested.parent) == 0o700


@pytest.mark.parametrize(("bits", "who"), [(0o775, "its group"), (0o777, "every user")])
def test_a_directory_others_may_write_is_refused(socket_dir: Path, bits: int, who: str) -> None:
    shared = socket_dir / "shared"
    shared.mkdir()
    shared.chmod(bits)
    with pytest.raises(OSError, match=f"writable by {who}"):
        make_directory(shared)
    with pytest.raises(OSError, match=f"writable by {who}"):
        checkpoint.write_atomically(shared / "checkpoint.json", "{}")
    assert list(shared.iterdir()) == []


def test_a_checkpoint_is_never_chmodded_or_seen_half_written(socket_dir: Path) -> None:
    path = socket_dir / "checkpoint.json"
    with Watch(socket_dir) as watch:
        checkpoint.write_atomically(path, "{}")
        checkpoint.write_atomically(path, '{"a": {}}')
        events = watch.events()
    assert not touched(events, path.name, IN_CREATE | IN_ATTRIB), events
    assert not any(m & IN_ATTRIB for _, m in events), events
    assert mode(path) == 0o600


def test_a_link_planted_at_the_temporary_name_is_not_followed(socket_dir: Path) -> None:
    """Someone who could write the directory earlier left a link where the file is written."""
    victim = socket_dir / "victim"
    victim.write_text("untouched")
    (socket_dir / ".checkpoint.json.tmp").symlink_to(victim)
    checkpoint.write_atomically(socket_dir / "checkpoint.json", "{}")
    assert victim.read_text() == "untouched"


async def test_the_webhook_key_is_created_owner_only(
    api: client.ApiClient, socket_dir: Path
) -> None:
    """The controller's serving key, written by the certificate keeper as it runs."""
    certs = socket_dir / "certs"
    await setup(api)
    with Watch(socket_dir) as outer:
        await keeper(api, certs, Clock()).sync()
        made = outer.events()
    assert touched(made, certs.name, IN_CREATE)
    assert mode(certs) == 0o700
    assert mode(certs / KEY_FILE) == 0o600
    with Watch(certs) as watch:  # renewed: written again, as it was the first time
        await keeper(
            api, certs, Clock(datetime.datetime.now(datetime.UTC) + WANTED.validity)
        ).sync()
        events = watch.events()
    assert touched(events, KEY_FILE, IN_MOVED_TO)
    assert not any(m & IN_ATTRIB for _, m in events), events
