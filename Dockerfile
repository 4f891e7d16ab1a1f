# research-bot: Python 3.12 (its ipaddress fixes matter for the fetch guard), slim, non-root.
# Pinned: Python's minor version (requirements.lock is compiled for it and CI runs the suite on
# it) and Debian's release (the package names below are trixie's). Python's patch releases and
# Debian's security updates still arrive with each rebuild.
FROM python:3.12-slim-trixie

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    RESEARCH_BOT_DB=/data/research-bot.sqlite3

# PDF export: Pango and HarfBuzz's subsetter (WeasyPrint's text layout), and fonts for
# Latin, Cyrillic, Greek, Arabic, Hebrew, Indic … (fonts-noto-core), Chinese, Japanese and
# Korean (fonts-noto-cjk) and code (fonts-dejavu-core). Not pinned to versions: Debian's
# archive keeps only the newest build of a package, so a pinned version fails the build at the
# next security update; the release they come from is pinned above.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libpango-1.0-0 libpangoft2-1.0-0 \
        libharfbuzz-subset0 fonts-noto-core fonts-noto-cjk fonts-dejavu-core \
    && rm -rf /var/lib/apt/lists/*

# A numeric user and group: a platform can tell it is not root without reading /etc/passwd
# (Kubernetes' runAsNonRoot), and Fly.io mounts the volume for it (fly.toml checks).
RUN groupadd --gid 10001 bot \
    && useradd --uid 10001 --gid 10001 --create-home bot \
    && mkdir /data \
    && chown 10001:10001 /data

WORKDIR /app
# Exactly the dependencies CI tested, each checked against its hash (requirements.lock, made by
# `uv pip compile`: see docs/deploying.md), then the project itself with none of its own.
# `pip check` fails the build if the lock no longer satisfies pyproject.toml.
COPY requirements.lock ./
RUN pip install --require-hashes --no-deps -r requirements.lock
COPY pyproject.toml README.md ./
COPY bot ./bot
RUN pip install --no-deps . && pip check

USER 10001:10001
VOLUME ["/data"]
# Only used by Slack's HTTP mode (no SLACK_APP_TOKEN); Socket Mode needs no inbound port.
EXPOSE 3000
STOPSIGNAL SIGTERM
CMD ["research-bot", "serve"]
