# syntax=docker/dockerfile:1
# contextsynth: a slim, non-root image that runs with a read-only root filesystem.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm
# The same Python on the same Debian, with a C compiler: setup.py compiles the engine's
# hot modules with mypyc, and only the built venv is copied into the slim image.
ARG BUILD_IMAGE=python:3.11-bookworm

FROM ${BUILD_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# Dependencies first, from the pinned set, so code changes reuse this layer.
COPY requirements.lock ./
RUN python -m venv /opt/venv \
    && /opt/venv/bin/pip install --no-deps -r requirements.lock
# setup.py lists the modules mypyc compiles: without it the wheel is pure Python, and
# every cold call about 1.6x slower.
COPY pyproject.toml README.md setup.py ./
COPY app ./app
RUN /opt/venv/bin/pip install --no-deps .

FROM ${PYTHON_IMAGE}
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="contextsynth" \
      org.opencontainers.image.description="Context compression for LLM agents" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="MIT"
# No bytecode writes and unbuffered logs: the root filesystem can be read-only.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    CONTEXTSYNTH_HOST=0.0.0.0 \
    CONTEXTSYNTH_PORT=8080 \
    CONTEXTSYNTH_WORKERS=1
RUN useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin contextsynth
COPY --from=build /opt/venv /opt/venv
USER 10001
EXPOSE 8080
# The port the service listens on, CONTEXTSYNTH_PORT, is the one probed.
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import os,sys,urllib.request; port = os.environ.get('CONTEXTSYNTH_PORT', '8080'); sys.exit(0 if urllib.request.urlopen(f'http://127.0.0.1:{port}/healthz', timeout=2).status == 200 else 1)"]
ENTRYPOINT ["contextsynth", "serve"]
