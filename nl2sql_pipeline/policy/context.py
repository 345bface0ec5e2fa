"""One SQL text as the rules see it: parsed once by DuckDB and once by sqlglot, then indexed.

``QueryContext`` is lazy: DuckDB's parser runs when a rule first asks for the statements, sqlglot's
tokenizer and parser when a rule first asks for the tree, and the tree is walked exactly once to
index its nodes by type. The parses come from ``sql_ast`` (cached by the text, shared with the
sandbox's statement check and other readers), so the rules only read the tree, never modify it. Whatever fails to parse raises ``QueryParseError``: the engine fails closed.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, TypeVar, cast

import duckdb
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokens import Token, TokenType

from nl2sql_pipeline.errors import Nl2SqlError
from nl2sql_pipeline.policy.model import Policy, function_pattern_matches
from nl2sql_pipeline.policy.schema import DatabaseSchema
from nl2sql_pipeline.sql import parse as sql_ast

E = TypeVar("E", bound=exp.Expr)

_PATH_LIKE_RE = re.compile(r"[/\\:.*?~]")
_NON_NAME_TOKENS = frozenset(
    {
        TokenType.STRING,
        TokenType.NUMBER,
        TokenType.NATIONAL_STRING,
        TokenType.BIT_STRING,
        TokenType.HEX_STRING,
        TokenType.BYTE_STRING,
        TokenType.RAW_STRING,
        TokenType.HEREDOC_STRING,
    }
)


class QueryParseError(Nl2SqlError):
    """DuckDB's or sqlglot's parser rejected the SQL (or they disagree about it)."""


@dataclass(frozen=True)
class CompiledPolicy:
    """A ``Policy`` turned into the lower-case lookups the rules need on every query."""

    policy: Policy
    denied_by_table: dict[str, frozenset[str]]
    denied_function_patterns: tuple[str, ...]
    allowed_table_functions: frozenset[str]

    @classmethod
    def of(cls, policy: Policy) -> CompiledPolicy:
        """Compile ``policy`` once for many checks."""
        return cls(
            policy=policy,
            denied_by_table=policy.denied_columns_by_table,
            denied_function_patterns=policy.all_denied_functions,
            allowed_table_functions=frozenset(f.lower() for f in policy.allowed_table_functions),
        )

    def denied_function_pattern(self, name: str) -> str | None:
        """The deny-list pattern matching function ``name`` (lower case), or None."""
        return _first_match(self.denied_function_patterns, name)


@functools.lru_cache(maxsize=4096)
def _first_match(patterns: tuple[str, ...], name: str) -> str | None:
    for pattern in patterns:
        if function_pattern_matches(pattern, name):
            return pattern
    return None


@dataclass(frozen=True, eq=False)
class TableRef:
    """One ``exp.Table`` node classified: a relation of the database, a CTE, or a table function.

    ``name`` is the lower-case relation, CTE or function name; ``alias`` what the query calls it.
    """

    node: exp.Table
    kind: Literal["relation", "cte", "function"]
    name: str
    alias: str

    @property
    def db(self) -> str:
        """The schema qualifier, lower case ('' when absent)."""
        return self.node.text("db").lower()

    @property
    def catalog(self) -> str:
        """The catalog qualifier, lower case ('' when absent)."""
        return self.node.text("catalog").lower()

    def column_names(self, schema: DatabaseSchema) -> tuple[str, ...]:
        """The relation's columns as the query sees them: renamed by ``AS t(a, b, ...)`` when given."""
        columns = list(schema.columns(self.name))
        alias = self.node.args.get("alias")
        renames = [c.name.lower() for c in alias.columns] if isinstance(alias, exp.TableAlias) else []
        for index, new_name in enumerate(renames[: len(columns)]):
            columns[index] = new_name
        return tuple(columns)

    def effective_names(self, schema: DatabaseSchema, columns: frozenset[str]) -> dict[str, str]:
        """``{name the query may use: original column}`` for the given original columns.

        A renamed column is reachable under its new name; its original name is kept too, which
        errs on the side of rejecting.
        """
        original = schema.columns(self.name)
        renamed = self.column_names(schema)
        names = {column: column for column in columns}
        for before, after in zip(original, renamed):
            if before in columns:
                names[after] = before
        return names


class QueryContext:
    """The facts the rules read about one SQL text, each computed at most once."""

    def __init__(self, sql: str, policy: CompiledPolicy, schema: DatabaseSchema) -> None:
        self.sql = sql
        self.policy = policy
        self.schema = schema
        self._nodes_by_types: dict[tuple[type, ...], list[exp.Expr]] = {}

    # ---- parsing -------------------------------------------------------------------------------

    @functools.cached_property
    def statements(self) -> list[duckdb.Statement]:
        """DuckDB's own split of the text into statements (with their types)."""
        try:
            return list(sql_ast.duckdb_statements(self.sql))
        except duckdb.Error as exc:
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise QueryParseError(f"DuckDB cannot parse the SQL: {first_line}") from exc

    @functools.cached_property
    def tokens(self) -> list[Token]:
        """sqlglot's tokens of the text (the tree is parsed from these, not re-tokenized)."""
        try:
            return list(sql_ast.tokens(self.sql))
        except SqlglotError as exc:
            raise QueryParseError(f"sqlglot cannot tokenize the SQL: {_short(exc)}") from exc

    @functools.cached_property
    def tree(self) -> exp.Expr:
        """The one sqlglot expression of the text."""
        _ = self.tokens  # a tokenizer error is reported as such, before any parse error
        try:
            expressions = sql_ast.statements(self.sql)
        except SqlglotError as exc:
            raise QueryParseError(f"sqlglot cannot parse the SQL: {_short(exc)}") from exc
        if len(expressions) != 1:
            raise QueryParseError(
                f"sqlglot sees {len(expressions)} statements where DuckDB sees {len(self.statements)}"
            )
        return expressions[0]

    @functools.cached_property
    def _index(self) -> dict[type, list[exp.Expr]]:
        index: dict[type, list[exp.Expr]] = {}
        for node in self.tree.walk():
            index.setdefault(type(node), []).append(node)
        commands = index.get(exp.Command)
        if commands:
            raise QueryParseError(
                f"sqlglot could not parse part of the SQL ({commands[0].sql(dialect='duckdb')[:60]!r})"
            )
        return index

    def nodes(self, *types: type[E]) -> list[E]:
        """Every node of the tree that is an instance of one of ``types`` (subclasses included)."""
        cached = self._nodes_by_types.get(types)
        if cached is None:
            cached = []
            for node_type, nodes in self._index.items():
                if issubclass(node_type, types):
                    cached.extend(nodes)
            self._nodes_by_types[types] = cached
        return cast("list[E]", cached)  # cached under ``types``: each node is an instance of one of them

    def called_names(self) -> Iterator[tuple[str, str]]:
        """``(lower-case name, as written)`` of every name directly followed by ``(`` in the token stream.

        This sees functions as the user wrote them, whatever sqlglot maps them to (``range`` becomes
        ``GenerateSeries``), including quoted names and method-call syntax (``'x'.getenv()``).
        """
        tokens = self.tokens
        for token, following in zip(tokens, tokens[1:]):
            if following.token_type is TokenType.L_PAREN and token.token_type not in _NON_NAME_TOKENS:
                yield token.text.lower(), token.text

    # ---- tables --------------------------------------------------------------------------------

    @functools.cached_property
    def table_refs(self) -> list[TableRef]:
        """Every ``exp.Table`` of the tree, classified (CTE names resolved case-insensitively)."""
        refs = []
        for node in self.nodes(exp.Table):
            alias = node.alias_or_name.lower() if not isinstance(node.this, exp.Func) else node.alias.lower()
            if isinstance(node.this, exp.Func):
                refs.append(TableRef(node, "function", function_name(node.this), alias))
                continue
            name = node.name.lower()
            if not node.args.get("db") and not node.args.get("catalog") and name in visible_cte_names(node):
                refs.append(TableRef(node, "cte", name, alias))
            else:
                refs.append(TableRef(node, "relation", name, alias))
        return refs

    @functools.cached_property
    def denied_refs(self) -> list[TableRef]:
        """The relation references whose table has denied columns."""
        denied = self.policy.denied_by_table
        return [ref for ref in self.table_refs if ref.kind == "relation" and ref.name in denied]

    def ref_of(self, node: exp.Expr) -> TableRef | None:
        """The ``TableRef`` of an ``exp.Table`` node, or None for anything else."""
        return self._ref_by_id.get(id(node))

    @functools.cached_property
    def _ref_by_id(self) -> dict[int, TableRef]:
        return {id(ref.node): ref for ref in self.table_refs}


def visible_cte_names(node: exp.Expr) -> set[str]:
    """Lower-case names of the CTEs visible at ``node``.

    A CTE sees only the CTEs defined before it in its WITH list (and itself when RECURSIVE); the
    query body sees all of them; subqueries inherit what their enclosing queries see.
    """
    names: set[str] = set()
    child, parent = node, node.parent
    while parent is not None:
        if isinstance(parent, exp.With):
            ctes = parent.expressions
            position = next((i for i, cte in enumerate(ctes) if cte is child), len(ctes))
            visible = ctes[: position + 1] if parent.args.get("recursive") else ctes[:position]
            names.update(cte.alias.lower() for cte in visible)
            owner = parent.parent
            if owner is None:
                break
            child, parent = owner, owner.parent
            continue
        with_ = parent.args.get("with_")
        if isinstance(with_, exp.With):
            names.update(cte.alias.lower() for cte in with_.expressions)
        child, parent = parent, parent.parent
    return names


def function_name(func: exp.Func) -> str:
    """The lower-case DuckDB name of a function node (``range`` for sqlglot's exclusive GenerateSeries)."""
    if isinstance(func, exp.Anonymous):
        return func.name.lower()
    rendered = func.sql(dialect="duckdb")
    head = rendered.split("(", 1)[0].strip()
    if head and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", head):
        return head.lower()
    return type(func).sql_names()[0].lower() if type(func).sql_names() else type(func).__name__.lower()


def function_aliases(func: exp.Func) -> set[str]:
    """Every lower-case name sqlglot knows a function node by (its name, or its class's SQL names)."""
    if isinstance(func, exp.Anonymous):
        return {func.name.lower()}
    return {name.lower() for name in type(func).sql_names()}


def looks_like_path(name: str) -> bool:
    """True for a table name that is a file path, glob or URL rather than an identifier."""
    return bool(_PATH_LIKE_RE.search(name))


def enclosing_select(node: exp.Expr) -> exp.Select | None:
    """The innermost SELECT containing ``node``."""
    return node.find_ancestor(exp.Select)


def from_items(select: exp.Select) -> list[exp.Expr]:
    """The FROM items of one SELECT, parenthesized join trees flattened (nested queries not entered)."""
    items: list[exp.Expr] = []
    from_ = select.args.get("from_")
    if isinstance(from_, exp.From):
        _flatten_item(from_.this, items)
    for join in select.args.get("joins") or []:
        _flatten_item(join.this, items)
    return items


def joins_of(select: exp.Select) -> list[exp.Join]:
    """The joins of one SELECT, including those inside parenthesized join trees."""
    joins: list[exp.Join] = []

    def visit(item: exp.Expr) -> None:
        if is_join_tree(item):
            visit(item.this)
        for join in item.args.get("joins") or []:
            joins.append(join)
            visit(join.this)

    from_ = select.args.get("from_")
    if isinstance(from_, exp.From):
        visit(from_.this)
    for join in select.args.get("joins") or []:
        joins.append(join)
        visit(join.this)
    return joins


def is_join_tree(item: exp.Expr) -> bool:
    """True for a parenthesized join tree in FROM, ``(a JOIN b ON ...)`` (aliased or not), not a query."""
    return isinstance(item, exp.Subquery) and not isinstance(item.this, exp.UNWRAPPED_QUERIES)


def tables_of_join_tree(tree: exp.Expr) -> list[exp.Table]:
    """The tables a join tree reads directly (not those inside nested queries)."""
    return [
        node
        for node in tree.walk(prune=lambda n: isinstance(n, exp.Query) and not is_join_tree(n))
        if isinstance(node, exp.Table)
    ]


def _flatten_item(item: exp.Expr, items: list[exp.Expr]) -> None:
    if is_join_tree(item):
        _flatten_item(item.this, items)
    else:
        items.append(item)
    for join in item.args.get("joins") or []:
        _flatten_item(join.this, items)


def _short(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__
