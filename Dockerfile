# The CPU images of the stack; docker-compose.yml builds both. From the repository root:
#   docker build --target app -t structured-agents:app .      # API, migrations, Flower, beat, CPU workers
#   docker build --target model -t structured-agents:model .  # and the model worker: + torch (CPU),
#                                                             #   transformers, the shipped small model
# BASE_IMAGE: a Python 3.11+ image with python3 -m venv (scripts/docker.sh builds a local one when
# no registry is reachable). TORCH_INDEX_URL: where the model image gets torch==2.13.0; PyPI's
# Linux build is the CUDA one (several GB), so the default is PyTorch's CPU index; empty: the
# index pip is configured with.
# Layers go from the least to the most often changed: dependencies (pyproject.toml through
# scripts/install.sh), then the package and its bundles, so a code change rebuilds seconds.
# Stages are in build order: Docker's classic builder builds every stage before the target.
ARG BASE_IMAGE=python:3.11-slim

FROM ${BASE_IMAGE} AS deps
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    VENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    STRUCTURED_AGENTS_CACHE_DIR=/var/cache/structured-agents
RUN useradd --create-home --uid 1000 sa && install -d -o sa /var/cache/structured-agents
WORKDIR /app
COPY pyproject.toml ./
COPY scripts/install.sh scripts/deps.py scripts/
RUN EXTRAS= bash scripts/install.sh --deps-only

FROM deps AS app
COPY README.md ./
COPY structured_agents structured_agents/
COPY bundles bundles/
RUN python -m pip install --no-deps -q .
USER sa
EXPOSE 8080
CMD ["uvicorn", "--factory", "structured_agents.api.app:create_app", "--host", "0.0.0.0", "--port", "8080"]

FROM deps AS model-deps
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
RUN EXTRAS=model bash scripts/install.sh --deps-only

FROM model-deps AS model
COPY README.md ./
COPY structured_agents structured_agents/
COPY bundles bundles/
RUN python -m pip install --no-deps -q .
USER sa
CMD ["sa", "worker", "gpu"]
