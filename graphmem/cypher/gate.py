"""The lexical gate of graph_cypher (the first of its three read-only layers), and the rewrite
of the design's Neo4j labels onto the projection's one node table and one relation table.

Neither the engine's read-only transaction nor a read-only database stops `LOAD FROM` a file,
`COPY ... TO` a file, `EXPORT DATABASE` or `CALL` settings, and `...; COMMIT; CREATE ...`
escapes a read-only transaction (docs: the Cypher engine evaluation). So, before the engine
sees a query: one statement, a read clause first, and no word of the deny list anywhere
outside string literals, backquoted names and property access (`e.set` is a property).

The rewrite works on the same tokens, so a label inside a string is never touched:
`(p:Person {...})` becomes `(p:Entity {type: 'Person', ...})`, `-[w:WORKS_ON]->` becomes
`-[w:RELATES {type: 'WORKS_ON'}]->`, a typed variable-length pattern gets the engine's
recursive filter, `type(r)` reads `r.type` and `labels(n)` reads `['Entity', n.type]`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MAX_QUERY_CHARS", "CypherRefusedError", "gate"]

MAX_QUERY_CHARS = 20_000

# The clauses a query may start with.
READ_STARTS = frozenset({"MATCH", "OPTIONAL", "WITH", "UNWIND", "RETURN", "CALL"})
# Refused anywhere (as a word, not as `x.word`): writes, DDL, file and database I/O,
# extensions, transactions, settings.
DENIED = frozenset(
    {
        "CREATE", "MERGE", "SET", "DELETE", "DETACH", "REMOVE", "DROP", "ALTER", "COPY",
        "LOAD", "EXPORT", "IMPORT", "ATTACH", "USE", "INSTALL", "UNINSTALL",
        "UPDATE", "BEGIN", "COMMIT", "ROLLBACK", "CHECKPOINT", "MACRO", "TRANSACTION",
        "FOREACH", "PROFILE", "EXPLAIN", "TRUNCATE", "INSERT",
    }
)  # fmt: skip
# The only table functions CALL may name: they describe the schema and change nothing.
CALL_ALLOWED = frozenset({"show_tables", "table_info"})

NODE_TABLE = "Entity"
REL_TABLE = "RELATES"


class CypherRefusedError(ValueError):
    """The query is not one read-only statement the gate accepts; the message says why."""


@dataclass(frozen=True)
class Token:
    kind: str  # word, string, name (backquoted), number, punct, space
    text: str
    lead: str = ""  # the whitespace before it, kept so that `*1..3` stays as written

    @property
    def upper(self) -> str:
        return self.text.upper()


_TOKEN = re.compile(
    r"""(?P<space>\s+|//[^\n]*|/\*.*?\*/)
      |(?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
      |(?P<name>`(?:[^`]|``)*`)
      |(?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
      |(?P<word>[^\W\d]\w*)
      |(?P<punct>\.\.|<-|->|<=|>=|<>|=~|[^\s\w])
    """,
    re.VERBOSE | re.DOTALL,
)


def tokens(query: str) -> list[Token]:
    """The query's tokens; an unterminated string, name or comment is refused (it would hide
    the rest of the query from the gate)."""
    found: list[Token] = []
    at = 0
    while at < len(query):
        match = _TOKEN.match(query, at)
        if match is None or match.end() == at:
            raise CypherRefusedError(f"cannot read the query at character {at}")
        kind = match.lastgroup
        assert kind is not None
        text = match.group()
        if kind == "punct" and text in {"'", '"', "`"}:
            raise CypherRefusedError("the query has an unterminated string or `name`")
        if kind == "punct" and text == "/" and query.startswith("/*", at):
            raise CypherRefusedError("the query has an unterminated /* comment")
        found.append(Token(kind, text))
        at = match.end()
    return found


def gate(query: str) -> str:
    """The query the engine may run: `query` checked and rewritten, or CypherRefusedError."""
    if len(query) > MAX_QUERY_CHARS:
        raise CypherRefusedError(
            f"the query has {len(query)} characters; at most {MAX_QUERY_CHARS}"
        )
    found: list[Token] = []
    lead = ""
    for token in tokens(query):
        if token.kind == "space":
            lead = " "  # a comment reads as a space
        else:
            found.append(Token(token.kind, token.text, lead))
            lead = ""
    while found and found[-1].text == ";":  # one trailing `;` ends the statement
        found.pop()
    if not found:
        raise CypherRefusedError("the query is empty")
    _check(found)
    return "".join(t.lead + t.text for t in _rewrite(found)).strip()


def _check(found: list[Token]) -> None:
    first = found[0]
    if first.kind != "word" or first.upper not in READ_STARTS:
        raise CypherRefusedError(
            "graph_cypher runs read queries only: start with MATCH, OPTIONAL MATCH, WITH, "
            f"UNWIND or RETURN (got {first.text!r})"
        )
    for i, token in enumerate(found):
        if token.text == ";":
            raise CypherRefusedError("one statement per call: remove the `;` and what follows it")
        if token.kind != "word" or _property_key(found, i):
            continue
        word = token.upper
        if word in DENIED:
            raise CypherRefusedError(
                f"{word} is not allowed: graph_cypher is read-only (no writes, schema "
                "changes, file or database I/O, extensions or transactions); use the graph "
                "tools to change the graph"
            )
        if word == "CALL":
            following = found[i + 1] if i + 1 < len(found) else None
            if following is None or following.text.lower() not in CALL_ALLOWED:
                raise CypherRefusedError(f"CALL may only name {', '.join(sorted(CALL_ALLOWED))}")
        if (
            word == "SIZE"
            and i + 2 < len(found)
            and found[i + 1].text == "("
            and found[i + 2].text == "("
        ):
            raise CypherRefusedError(
                "size() of a pattern gives wrong counts in this engine; use COUNT { pattern }"
            )


def _property_key(found: list[Token], i: int) -> bool:
    """`x.word` written without spaces: a property, not a clause (`x. LOAD` is a clause)."""
    return i > 0 and found[i - 1].text == "." and not found[i - 1].lead and not found[i].lead


def _label(token: Token) -> str:
    return token.text[1:-1].replace("``", "`") if token.kind == "name" else token.text


def _quoted(text: str) -> Token:
    return Token("string", "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'", " ")


def _rewrite(found: list[Token]) -> list[Token]:
    out: list[Token] = []
    i = 0
    while i < len(found):
        token = found[i]
        before = out[-1] if out else None
        if token.text == "(":  # a node pattern when labels follow; anything else is kept
            i = _node(found, i, out)
            continue
        if token.text == "[" and before is not None and before.text in {"-", "<-"}:
            i = _relationship(found, i, out)
            continue
        if (
            token.kind == "word"
            and token.text.lower() in {"type", "labels"}
            and (before is None or before.text != ".")
            and i + 3 < len(found)
            and found[i + 1].text == "("
            and found[i + 2].kind in {"word", "name"}
            and found[i + 3].text == ")"
        ):
            variable = found[i + 2].text
            if token.text.lower() == "type":
                out.append(Token("word", f"{variable}.type", token.lead))
            else:
                out.append(Token("word", f"['{NODE_TABLE}', {variable}.type]", token.lead))
            i += 4
            continue
        out.append(token)
        i += 1
    return out


def _labels_after(found: list[Token], i: int) -> tuple[list[str], int, bool]:
    """Labels written from `found[i]` on (`:A:B` or `:A|B`), the index after them, and whether
    they were alternatives (`|`)."""
    labels: list[str] = []
    alternatives = False
    while i < len(found) and found[i].text in {":", "|"}:
        alternatives = alternatives or found[i].text == "|"
        if i + 1 >= len(found) or found[i + 1].kind not in {"word", "name"}:
            break
        labels.append(_label(found[i + 1]))
        i += 2
    return labels, i, alternatives


def _node(found: list[Token], i: int, out: list[Token]) -> int:
    out.append(found[i])
    i += 1
    if (
        i < len(found)
        and found[i].kind in {"word", "name"}
        and i + 1 < len(found)
        and found[i + 1].text == ":"
    ):
        out.append(found[i])
        i += 1
    labels, after, alternatives = _labels_after(found, i)
    if not labels:
        return i
    types = [label for label in labels if label.upper() != NODE_TABLE.upper()]
    if alternatives:
        raise CypherRefusedError(
            "a node has one type here: write (n:Entity) WHERE n.type IN ['A', 'B'] instead "
            "of (n:A|B)"
        )
    if len(types) > 1:
        raise CypherRefusedError(f"an entity has one type; (n:{':'.join(types)}) can match nothing")
    out.extend([Token("punct", ":"), Token("word", NODE_TABLE)])
    if types:
        _property_filter(found, after, out, types[0])
        if after < len(found) and found[after].text == "{":
            return after + 1
    return after


def _property_filter(found: list[Token], at: int, out: list[Token], value: str) -> None:
    """`{type: 'value'` merged into the property map that follows, or a map of its own."""
    merged = at < len(found) and found[at].text == "{"
    out.extend(
        [Token("punct", "{", " "), Token("word", "type"), Token("punct", ":"), _quoted(value)]
    )
    if merged:
        if at + 1 < len(found) and found[at + 1].text != "}":
            out.append(Token("punct", ", "))
    else:
        out.append(Token("punct", "}"))


def _relationship(found: list[Token], i: int, out: list[Token]) -> int:
    out.append(found[i])
    i += 1
    variable: str | None = None
    if i < len(found) and found[i].kind in {"word", "name"}:
        variable = found[i].text
        out.append(found[i])
        i += 1
    labels, after, _ = _labels_after(found, i)
    types = [label for label in labels if label.upper() != REL_TABLE]
    if not labels:
        return i
    out.extend([Token("punct", ":"), Token("word", REL_TABLE)])
    if not types:
        return after
    variable_length = after < len(found) and found[after].text == "*"
    if not variable_length and len(types) == 1:
        _property_filter(found, after, out, types[0])
        if after < len(found) and found[after].text == "{":
            return after + 1
        return after
    if not variable_length:
        raise CypherRefusedError(
            f"relation types as alternatives: write [{variable or 'r'}:RELATES] and "
            f"WHERE {variable or 'r'}.type IN [...] instead of [:{'|'.join(types)}]"
        )
    # [r:T*1..3] -> [r:RELATES*1..3 (_r, _n | WHERE _r.type IN ['T'])]: the engine's filter of
    # every hop of a recursive pattern.
    end = after
    while end < len(found) and found[end].text not in {"]", "(", "{"}:
        end += 1
    if end >= len(found) or found[end].text != "]":
        raise CypherRefusedError(
            "a typed variable-length relation takes no property map or filter here; write "
            "[r:RELATES*1..3 (e, n | WHERE e.type = 'T' AND ...)]"
        )
    out.extend(found[after:end])
    listed = ", ".join(_quoted(t).text for t in types)
    out.append(Token("word", f" (_gm_r, _gm_n | WHERE _gm_r.type IN [{listed}])"))
    return end
