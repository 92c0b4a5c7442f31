# syntax=docker/dockerfile:1
# One image for every component: akri-agent, akri-controller, akri-discovery-handler and akri.
# The chart picks the program with `command`; the agent and the handlers run as root (they own
# sockets in the kubelet's root-owned directories), the controller as the image's user.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# 1. Build the wheel, and wheels of every dependency, with the build tools kept out of the image.
FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
RUN pip install --no-cache-dir "build==1.2.2.post1"
COPY pyproject.toml setup.py README.md ./
COPY core core
COPY agent agent
COPY controller controller
COPY discovery-handlers discovery-handlers
RUN python -m build --wheel --outdir /wheels \
    && pip wheel --no-cache-dir --wheel-dir /wheels /wheels/akri_py-*.whl

# 2. Install only the wheels: no compiler, no source tree, no pip cache.
FROM ${PYTHON_IMAGE}
# libudev is what pyudev loads for the udev discovery handler.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libudev1 \
    && rm -rf /var/lib/apt/lists/*
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index --find-links /wheels /wheels/akri_py-*.whl \
    && useradd --uid 65532 --user-group --no-create-home --shell /usr/sbin/nologin akri
USER 65532:65532
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
CMD ["akri", "--help"]
