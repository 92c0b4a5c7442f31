"""udev: local devices matched by udev rules, followed through a udev monitor."""
