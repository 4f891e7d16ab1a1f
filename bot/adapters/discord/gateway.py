"""One replica at a time on Discord's gateway. Discord sends each command, button and reaction to
every connected session of a bot, so with several replicas each would answer it: the replica
that holds the gateway lock (bot/store/locks.py: a PostgreSQL advisory lock; on SQLite the one
process holds it) connects and receives them. The others stay logged in: they post the runs they
work on over REST with the bot token, and take the gateway over when its holder goes.
"""

from __future__ import annotations

import asyncio
import logging

import discord

from bot.store.locks import SessionLock

log = logging.getLogger(__name__)

CANCEL_PASS_S = 1.0
"""How long one cancellation of the gateway task is given before it is cancelled again."""


def gateway_lock_name(client: discord.Client) -> str:
    """The lock of this bot's gateway: two bots sharing a database do not share a gateway."""
    bot = client.user.id if client.user is not None else 0
    return f"discord gateway {bot}"


async def hold_gateway(client: discord.AutoShardedClient, lock: SessionLock) -> None:
    """Connect while this replica holds `lock`, disconnect the moment it is lost, and compete
    for it again; until cancelled, or the gateway ends for good (raising what ended it).

    `client` is logged in: its REST calls work throughout, with or without the gateway."""
    while True:
        if not await lock.acquire():
            holder = await lock.holder()
            if holder is not None:
                log.info(
                    "discord: the gateway is held by %s; this replica (%s) posts its runs over "
                    "REST and takes the gateway over when that one goes",
                    holder,
                    lock.identity,
                )
            else:
                log.info(
                    "discord: waiting for the gateway lock; this replica (%s) posts its runs "
                    "over REST meanwhile",
                    lock.identity,
                )
            await lock.wait_until_held()
        log.info("discord: this replica (%s) holds the gateway: connecting", lock.identity)
        why = await _connected_while_held(client, lock)
        if why is None:
            return
        log.warning(
            "discord: lost the gateway lock (%s): disconnected from the gateway; "
            "competing for it again",
            why,
        )


async def _connected_while_held(client: discord.AutoShardedClient, lock: SessionLock) -> str | None:
    """The gateway, for as long as the lock holds: why the lock was lost, or None when the
    gateway ended by itself (the client closed)."""
    lost = asyncio.create_task(lock.wait_lost(), name="discord-gateway-lock")
    gateway: asyncio.Task[None] | None = None
    try:
        # A previous holder that has just lost the lock is still leaving the gateway.
        await asyncio.wait([lost], timeout=lock.settle_s)
        if lost.done():
            return lost.result()
        # None: ask `GET /gateway/bot` for the gateway and the shard count again, as on the
        # first connection (with a count set, discord.py goes to its built-in gateway address).
        client.shard_count = None  # type: ignore[assignment]
        gateway = asyncio.create_task(client.connect(), name="discord-gateway")
        done, _ = await asyncio.wait([gateway, lost], return_when=asyncio.FIRST_COMPLETED)
    finally:
        if gateway is not None and not gateway.done():
            await _disconnect(client, gateway)
        if not lost.done():
            lost.cancel()
            await asyncio.wait([lost])
    if gateway in done:
        gateway.result()  # raises what ended the gateway
        return None
    _log_gateway_end(gateway)
    return lost.result()


async def _disconnect(client: discord.AutoShardedClient, gateway: asyncio.Task[None]) -> None:
    """Leave the gateway, keeping the client logged in for REST."""
    # discord.py swallows a cancellation that lands while it re-identifies a shard, then goes
    # on: cancel until the task has really ended.
    while not gateway.done():
        gateway.cancel()
        await asyncio.wait([gateway], timeout=CANCEL_PASS_S)
    for shard in client.shards.values():
        await shard.disconnect()
    # A shard that was waiting to reconnect may still queue its reconnection; a fresh queue
    # (what this hook sets up, with the client's other loop-bound objects) leaves it unread.
    await client._async_setup_hook()


def _log_gateway_end(gateway: asyncio.Task[None]) -> None:
    if gateway.cancelled():
        return
    error = gateway.exception()
    if error is not None:
        log.warning("discord: the gateway connection had failed as well: %s", error)
