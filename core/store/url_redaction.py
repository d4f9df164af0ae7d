"""A database URL in anything a person sees: one redaction that assumes nothing about the URL's form.

The instructor types DATABASE_URL by hand, and a password holding an unencoded `/`, `@`, `:`, space,
`#`, `?` or a bad `%` escape makes a URL that parsers split in surprising places: libpq took
"pa/ss-SECRET@127.0.0.1:57635/class" for a database name and printed it (issue 30). So:

- `read_url` accepts only a URL of the strict form `postgresql://[user[:password]@]host[:port][,...][/db][?k=v&...]`
  (every special character percent-encoded); anything else is None, is never handed to the driver
  (which might print its pieces, or look one up as a host name in DNS), and is described without any of it.
- `redact` blanks, in a text made from the URL (the store's description, a driver's message), every run of
  three or more characters that also occurs in the password, as written or percent-decoded, and a shorter
  password where it stands as a field (`:p@`, `password=p`). For a URL that cannot be read the "password" is
  everything after `://`: wherever the password was meant to start and end, none of it shows (such a URL is
  never connected to, so this only guards). A host or database name that is part of the password is blanked.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from urllib.parse import unquote

SCHEMES = ("postgresql://", "postgres://")
MIN_RUN = 3  # runs this long that occur in the password are blanked wherever they stand
MARK = "***"
_UNRESERVED = string.ascii_letters + string.digits + "-._~"
_SUB_DELIMS = "!$&'()*+,;="
_PCT = r"%[0-9A-Fa-f]{2}"
_USER = rf"(?:[{re.escape(_UNRESERVED + _SUB_DELIMS)}]|{_PCT})*"
_HOST = rf"(?:\[[0-9A-Fa-f:.]+\]|(?:[{re.escape(_UNRESERVED + _SUB_DELIMS.replace(',', ''))}]|{_PCT})*)"
_HOSTPORT = rf"{_HOST}(?::[0-9]{{1,5}})?"
_DBNAME = rf"(?:[{re.escape(_UNRESERVED + _SUB_DELIMS + ':')}]|{_PCT})*"
_VALUE = rf"(?:[{re.escape(_UNRESERVED + _SUB_DELIMS.replace('&', '').replace('=', '') + ':/?')}]|{_PCT})*"
_URL = re.compile(
    rf"(?P<scheme>postgres(?:ql)?)://"
    rf"(?:(?P<user>{_USER})(?::(?P<password>{_USER}))?@)?"
    rf"(?P<hosts>{_HOSTPORT}(?:,{_HOSTPORT})*)"
    rf"(?:/(?P<db>{_DBNAME}))?"
    rf"(?:\?(?P<query>[a-z_]+={_VALUE}(?:&[a-z_]+={_VALUE})*))?"
)


@dataclass(frozen=True)
class PgUrl:
    """A URL of the strict form, its fields percent-decoded."""

    user: str
    password: str
    hosts: tuple[str, ...]  # "host:port" or "host", as written (decoded)
    dbname: str
    params: tuple[tuple[str, str], ...]  # the query's key=value pairs


def read_url(url: str) -> PgUrl | None:
    """The URL's fields when it has the strict form (printable ASCII, special characters percent-encoded,
    at most one `@` and one `:` before the host); None for anything else."""
    found = _URL.fullmatch(url)
    if found is None or any(_bad_port(h) for h in found["hosts"].split(",")):
        return None
    params = tuple((k, unquote(v))
                   for k, v in (pair.split("=", 1) for pair in (found["query"] or "").split("&") if pair))
    return PgUrl(user=unquote(found["user"] or ""), password=unquote(found["password"] or ""),
                 hosts=tuple(unquote(h) for h in found["hosts"].split(",")), dbname=unquote(found["db"] or ""),
                 params=params)


def _bad_port(hostport: str) -> bool:
    port = hostport.rsplit("]", 1)[-1].rpartition(":")[2] if ":" in hostport.rsplit("]", 1)[-1] else ""
    return bool(port) and not 1 <= int(port) <= 65535


def secrets(url: str) -> tuple[str, ...]:
    """Every string that is or may be a password in `url`, as written and percent-decoded."""
    rest = url.split("://", 1)[1] if "://" in url else url
    parsed = read_url(url)
    if parsed is None:
        raw = [rest]  # wherever the password was meant to start and end: all of it
    else:
        raw = [parsed.password, *(value for key, value in parsed.params if key == "password")]
        written = re.search(r"://[^@/?]*?:([^@/?]*)@", url)
        raw += [written.group(1)] if written else []
    found = {text for item in raw for text in (item, unquote(item)) if text}
    return tuple(sorted(found, key=len, reverse=True))


def redact(text: str, url: str) -> str:
    """`text` with every part of `url`'s password blanked (see the module's docstring)."""
    hidden = secrets(url)
    for secret in hidden:
        if len(secret) < MIN_RUN:  # too short to blank everywhere ("p" in "expired"): only as a field
            text = text.replace(f":{secret}@", f":{MARK}@")
            text = re.sub(rf"(password\s*=\s*)(['\"]?){re.escape(secret)}\2(?=\s|$|&)", rf"\1{MARK}", text)
    long = [s for s in hidden if len(s) >= MIN_RUN]
    return _blank_runs(text, long) if long else text


def _blank_runs(text: str, hidden: list[str]) -> str:
    """Replace each longest run of MIN_RUN or more characters found in one of `hidden` by MARK."""
    out: list[str] = []
    i = 0
    while i < len(text):
        k = MIN_RUN
        if i + k <= len(text) and any(text[i:i + k] in s for s in hidden):
            while i + k < len(text) and any(text[i:i + k + 1] in s for s in hidden):
                k += 1
            out.append(MARK)
            i += k
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def describe(url: str) -> str:
    """Which PostgreSQL database `url` names, redacted: its database and first host, or, for a URL that
    cannot be read, nothing from it."""
    parsed = read_url(url)
    if parsed is None:
        return "PostgreSQL database in DATABASE_URL (a URL this dashboard cannot read)"
    params = dict(parsed.params)
    host = parsed.hosts[0] or params.get("host", "") or "localhost"
    where = host if ":" in host.rsplit("]", 1)[-1] else f"{host}:{params.get('port') or 5432}"
    name = parsed.dbname or params.get("dbname") or parsed.user or params.get("user") or ""
    return redact(f"PostgreSQL database {name} on {where} (shared)", url)


def malformed_message(variable: str) -> str:
    """What to do about a URL that cannot be read, quoting none of it."""
    return (f"{variable} is not a postgresql://user:password@host:port/dbname URL this dashboard can read "
            "(nothing of it is shown); percent-encode every / @ : ? # % and space in the user name and password "
            "(e.g. @ as %40, / as %2F), or unset it to keep results in this machine's SQLite file")
