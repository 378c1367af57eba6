"""One interface over psycopg (3) and psycopg2 connections.

What must hold:
- Each client call runs as one unit, the way psycopg 3's
  conn.transaction() does it: on a connection idle outside a transaction it
  is its own transaction, committed at the end (so that "one call" leaves
  the model uploaded even when the connection is not in autocommit mode);
  inside the caller's transaction it runs under a savepoint and the caller
  commits.  A failure leaves nothing behind and the caller's transaction
  usable.
- Server errors become hbird.errors exceptions carrying the SQLSTATE and
  the server's message, with the driver's exception as __cause__; errors
  without a SQLSTATE (a closed connection) pass through unchanged.
- hbird's functions are called qualified with the schema the extension is
  installed in, so that nothing earlier on search_path can stand in for
  them.
"""
import sys

from .errors import Error, error_class

_FIND_SCHEMA = (
    "SELECT n.nspname FROM pg_catalog.pg_extension e "
    "JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace "
    "WHERE e.extname OPERATOR(pg_catalog.=) 'hbird'")


def _is(obj, module, cls):
    m = sys.modules.get(module)
    c = getattr(m, cls, None) if m is not None else None
    return c is not None and isinstance(obj, c)


def quote_ident(s):
    """A SQL identifier, quoted; '%' doubled for the drivers' placeholders."""
    return ('"' + s.replace('"', '""') + '"').replace("%", "%%")


class Session:
    """A connection seen through one driver, for the length of one call."""

    def __init__(self, conn):
        self.conn = conn
        if _is(conn, "psycopg", "AsyncConnection"):
            raise TypeError("hbird needs a synchronous psycopg connection "
                            "(psycopg.connect), not an AsyncConnection: use hbird.aio")
        if _is(conn, "psycopg", "Connection"):
            self.driver = "psycopg"
            self.binary_placeholder = "%b"
            self._error = sys.modules["psycopg"].Error
        elif _is(conn, "psycopg2.extensions", "connection"):
            self.driver = "psycopg2"
            self.binary_placeholder = "%s"
            self._error = sys.modules["psycopg2"].Error
        else:
            raise TypeError("expected a psycopg or psycopg2 connection, got %s.%s"
                            % (type(conn).__module__, type(conn).__qualname__))
        self.cur = None
        self._schema = None

    # ---- parameters

    def binary(self, data):
        """A bytea parameter for binary_placeholder.

        psycopg 3 sends a bytes object as it is (a binary parameter, no
        escaping; bytearray and memoryview would be copied to bytes by the
        driver); psycopg2 has text parameters only and escapes it.
        """
        if self.driver == "psycopg":
            return data
        return sys.modules["psycopg2"].Binary(data)

    # ---- statements

    def execute(self, sql, params=None):
        self.cur.execute(sql, params)
        return self.cur

    def value(self, sql, params=None):
        row = self.execute(sql, params).fetchone()
        return None if row is None else row[0]

    def columns(self):
        return [d[0] for d in self.cur.description]

    @property
    def schema(self):
        """The extension's schema, quoted, ready to prefix a function."""
        if self._schema is None:
            self._schema = _schema_of(self.value(_FIND_SCHEMA))
        return self._schema

    # ---- one call

    def run(self, fn):
        """fn(self) as one unit (see the file comment); returns its result."""
        try:
            with self.conn.cursor() as cur:
                self.cur = cur
                if self.driver == "psycopg":
                    return self._run_psycopg(fn)
                return self._run_psycopg2(fn)
        except self._error as e:
            mapped = mapped_error(e, self.driver)
            if mapped is e:
                raise
            raise mapped from e
        finally:
            self.cur = None

    def _run_psycopg(self, fn):
        status = self.conn.info.transaction_status
        if status == sys.modules["psycopg"].pq.TransactionStatus.INERROR:
            # the server answers 25P02 to anything; not through
            # conn.transaction(), whose failed SAVEPOINT would leave the
            # connection refusing the caller's rollback() (psycopg 3.1)
            return fn(self)
        with self.conn.transaction():
            return fn(self)

    def _run_psycopg2(self, fn):
        ext = sys.modules["psycopg2.extensions"]
        status = self.conn.get_transaction_status()
        if status == ext.TRANSACTION_STATUS_INTRANS:
            return self._in_savepoint(fn)
        if status != ext.TRANSACTION_STATUS_IDLE:
            # a failed transaction: the server answers 25P02 to anything
            return fn(self)
        if self.conn.autocommit:
            self.cur.execute("BEGIN")
        try:
            result = fn(self)
        except BaseException:
            self._end("ROLLBACK")
            raise
        self._end("COMMIT")
        return result

    def _end(self, what):
        if self.conn.autocommit:
            self.cur.execute(what)
        elif what == "COMMIT":
            self.conn.commit()
        else:
            self.conn.rollback()

    def _in_savepoint(self, fn):
        self.cur.execute("SAVEPOINT hbird_call")
        try:
            result = fn(self)
        except BaseException:
            self.cur.execute("ROLLBACK TO SAVEPOINT hbird_call")
            self.cur.execute("RELEASE SAVEPOINT hbird_call")
            raise
        self.cur.execute("RELEASE SAVEPOINT hbird_call")
        return result



def _schema_of(name):
    """The extension's schema found by _FIND_SCHEMA, quoted."""
    if name is None:
        raise Error('extension "hbird" is not installed in this database '
                    "(CREATE EXTENSION hbird)")
    return quote_ident(name)


def mapped_error(e, driver):
    """The hbird.Error of a driver's error, or e itself (no SQLSTATE)."""
    state = e.sqlstate if driver == "psycopg" else e.pgcode
    diag = getattr(e, "diag", None)
    message = getattr(diag, "message_primary", None) if state else None
    if not state or message is None:
        return e
    cls = error_class(state)
    return cls(message, sqlstate=state,
               detail=getattr(diag, "message_detail", None),
               hint=getattr(diag, "message_hint", None))


class AsyncSession:
    """A psycopg AsyncConnection, for the length of one call of hbird.aio.

    The same unit as Session.run: its own transaction on an idle
    connection, a savepoint inside the caller's, nothing but the server's
    25P02 in a failed one; server errors mapped the same way.
    """

    driver = "psycopg"
    binary_placeholder = "%b"

    def __init__(self, conn):
        if not _is(conn, "psycopg", "AsyncConnection"):
            raise TypeError("hbird.aio expects a psycopg AsyncConnection, got %s.%s"
                            " (hbird.upload and the others take synchronous ones)"
                            % (type(conn).__module__, type(conn).__qualname__))
        self.conn = conn
        self.schema = None
        self._error = sys.modules["psycopg"].Error

    def binary(self, data):
        return data

    async def run(self, build, fetch):
        """The statement build(self) gives, (sql, params), as one unit;
        fetch: "value" (the first column of the first row), "rows"
        (column names and rows) or None."""
        psycopg = sys.modules["psycopg"]
        try:
            async with self.conn.cursor() as cur:
                if self.conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR:
                    return await self._call(cur, build, fetch)
                async with self.conn.transaction():
                    return await self._call(cur, build, fetch)
        except self._error as e:
            mapped = mapped_error(e, self.driver)
            if mapped is e:
                raise
            raise mapped from e

    async def _call(self, cur, build, fetch):
        if self.schema is None:
            await cur.execute(_FIND_SCHEMA)
            row = await cur.fetchone()
            self.schema = _schema_of(None if row is None else row[0])
        await cur.execute(*build(self))
        if fetch == "value":
            row = await cur.fetchone()
            return None if row is None else row[0]
        if fetch == "rows":
            rows = await cur.fetchall()
            return [d[0] for d in cur.description], rows
        return None
