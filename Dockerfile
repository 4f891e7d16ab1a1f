# research-bot: Python 3.12 (its ipaddress fixes matter for the fetch guard), slim, non-root.
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    RESEARCH_BOT_DB=/data/research-bot.sqlite3

# PDF export: Pango and HarfBuzz's subsetter (WeasyPrint's text layout), and fonts for
# Latin, Cyrillic, Greek, Arabic, Hebrew, Indic … (fonts-noto-core), Chinese, Japanese and
# Korean (fonts-noto-cjk) and code (fonts-dejavu-core).
RUN apt-get update \
    && apt-get install -y --no-install-recommends libpango-1.0-0 libpangoft2-1.0-0 \
        libharfbuzz-subset0 fonts-noto-core fonts-noto-cjk fonts-dejavu-core \
    && rm -rf /var/lib/apt/lists/*

RUN useradd --create-home --uid 10001 bot && mkdir /data && chown bot:bot /data

WORKDIR /app
COPY pyproject.toml README.md ./
COPY bot ./bot
RUN pip install .

USER bot
VOLUME ["/data"]
# Only used by Slack's HTTP mode (no SLACK_APP_TOKEN); Socket Mode needs no inbound port.
EXPOSE 3000
STOPSIGNAL SIGTERM
CMD ["research-bot", "serve"]
