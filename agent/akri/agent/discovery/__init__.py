"""Discovery: embedded and external handlers behind one protocol, merged per Configuration."""
