# research-bot: Python 3.12 (its ipaddress fixes matter for the fetch guard), slim, non-root.
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    RESEARCH_BOT_DB=/data/research-bot.sqlite3

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
