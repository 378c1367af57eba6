"""hbird's client calls for asyncio, on a psycopg (3) AsyncConnection.

    import hbird.aio, psycopg
    conn = await psycopg.AsyncConnection.connect("dbname=shop")
    await hbird.aio.upload(conn, "fraud", booster)      # -> version number
    await hbird.aio.grant(conn, "fraud", "analysts")
    await hbird.aio.models(conn)

The same calls as hbird.upload and the others, with the same statements,
the same unit of work (its own transaction, or a savepoint inside the
caller's) and the same errors (hbird.Error by SQLSTATE).  The model is
turned into bytes before the first await (a file is read then); the bytes
go as one binary parameter, as with a synchronous psycopg connection.
"""
from ._conn import AsyncSession
from ._source import payload
from .client import (activate_sql, drop_sql, models_result, models_sql, role_sql,
                     upload_sql)

__all__ = ["upload", "activate", "drop", "grant", "revoke", "reassign", "models"]


async def upload(conn, name, model, format=None, features=None):
    """hbird.upload, awaited: the new version's number."""
    p = payload(model, format, features)
    return await AsyncSession(conn).run(lambda s: upload_sql(s, name, p), "value")


async def activate(conn, name, version):
    """hbird.activate, awaited."""
    await AsyncSession(conn).run(lambda s: activate_sql(s, name, version), None)


async def drop(conn, name, version=None):
    """hbird.drop, awaited: how many versions were dropped."""
    return await AsyncSession(conn).run(lambda s: drop_sql(s, name, version), "value")


async def grant(conn, name, role):
    """hbird.grant, awaited."""
    await AsyncSession(conn).run(lambda s: role_sql(s, "hb_model_grant", name, role), None)


async def revoke(conn, name, role):
    """hbird.revoke, awaited."""
    await AsyncSession(conn).run(lambda s: role_sql(s, "hb_model_revoke", name, role), None)


async def reassign(conn, name, role):
    """hbird.reassign, awaited."""
    await AsyncSession(conn).run(lambda s: role_sql(s, "hb_model_reassign", name, role), None)


async def models(conn, name=None, as_frame=None):
    """hbird.models, awaited."""
    columns, rows = await AsyncSession(conn).run(lambda s: models_sql(s, name), "rows")
    return models_result(columns, rows, as_frame)
