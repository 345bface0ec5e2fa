"""The semantic model in prompts: a compact text block and the database's DDL annotated with the model.

:func:`render_for_prompt` lists conventions, synonyms, value domains, joins, dimensions and metrics;
:func:`database_ddl_with_descriptions` reads the CREATE TABLE statements from a DuckDB file and comments
each table and column with the model's description, value domain and unit.
"""

from __future__ import annotations

from pathlib import Path

from nl2sql_pipeline.errors import DatabaseNotFoundError
from nl2sql_pipeline.semantic_model.model import SemanticModel, UnknownModelItemError


def render_for_prompt(model: SemanticModel, tables: list[str] | None = None) -> str:
    """A compact text block (conventions, synonyms, value domains, joins, dimensions, metrics).

    With ``tables``, only what lies entirely within those tables is included.
    """
    selected = model.table_names if tables is None else tuple(model.table(t).name for t in tables)
    chosen = set(selected)
    lines = [f"Semantic model {model.name} (reference date {model.reference_date.isoformat()} = today)."]
    lines.append("Conventions:")
    lines.extend(f"- {c}" for c in model.conventions)

    lines.append("Synonyms and value domains:")
    for table in (model.table(t) for t in selected):
        head = f"- {table.name}"
        if table.synonyms:
            head += f" (also: {', '.join(table.synonyms)})"
        if table.grain:
            head += f"; grain: {table.grain}"
        lines.append(head)
        for column in table.columns:
            notes: list[str] = []
            if column.synonyms:
                notes.append(f"also: {', '.join(column.synonyms)}")
            if column.values:
                notes.append("values: " + " | ".join(repr(v) for v in column.values))
            if column.unit:
                notes.append(f"unit: {column.unit}")
            if column.sensitive:
                notes.append("SENSITIVE: never select")
            if notes:
                lines.append(f"    {table.name}.{column.name}: {'; '.join(notes)}")

    joins = [r for r in model.relationships if {r.from_table, r.to_table} <= chosen]
    paths_ = [p for p in model.join_paths if set(p.tables) <= chosen]
    if joins or paths_:
        lines.append("Joins:")
        lines.extend(f"- {r.condition} ({r.cardinality})" for r in joins)
        for path in paths_:
            text = f"- {path.name}: FROM {' '.join(path.sql.split())}"
            if path.caution:
                text += f"  -- {path.caution}"
            lines.append(text)

    dims = [d for d in model.dimensions if set(model.source_tables(d.source)) <= chosen]
    if dims:
        lines.append("Dimensions:")
        for d in dims:
            also = f" (also: {', '.join(d.synonyms)})" if d.synonyms else ""
            lines.append(f"- {d.name} = {d.sql} FROM {d.source}{also}")

    metrics = [m for m in model.metrics if set(model.source_tables(m.source)) <= chosen]
    if metrics:
        lines.append("Metrics:")
        for m in metrics:
            text = f"- {m.name} = {m.sql} FROM {m.source}"
            if m.filter:
                text += f" WHERE {m.filter}"
            if m.time_column:
                text += f" [time: {m.time_column}]"
            text += f" -- {m.description}"
            if m.synonyms:
                text += f" (also: {', '.join(m.synonyms)})"
            lines.append(text)
    return "\n".join(lines)


def database_ddl_with_descriptions(db_path: Path, model: SemanticModel, tables: list[str] | None = None) -> str:
    """CREATE TABLE statements read from the DuckDB file ``db_path`` (read-only), each table and column
    annotated with the model's description, value domain and unit as SQL comments (column synonyms are
    in :func:`render_for_prompt`).

    ``tables`` limits the output (unknown names raise UnknownModelItemError). Raises
    DatabaseNotFoundError when the file does not exist.
    """
    import duckdb

    db_path = Path(db_path)
    if not db_path.exists():
        raise DatabaseNotFoundError(f"database file {db_path} does not exist (build it with: nl2sql-eval db build)")
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        column_rows = con.execute(
            "SELECT table_name, column_name, data_type, is_nullable FROM duckdb_columns() "
            "WHERE schema_name = 'main' AND NOT internal ORDER BY table_name, column_index"
        ).fetchall()
        constraint_rows = con.execute(
            "SELECT table_name, constraint_type, constraint_column_names, referenced_table, "
            "referenced_column_names FROM duckdb_constraints() WHERE schema_name = 'main' "
            "AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY') ORDER BY table_name, constraint_index"
        ).fetchall()
    finally:
        con.close()

    db_columns: dict[str, list[tuple[str, str, bool]]] = {}
    for table, column, data_type, nullable in column_rows:
        db_columns.setdefault(table, []).append((column, data_type, bool(nullable)))
    primary: dict[str, list[str]] = {}
    foreign: dict[str, list[tuple[list[str], str, list[str]]]] = {}
    for table, kind, cols, ref_table, ref_cols in constraint_rows:
        if kind == "PRIMARY KEY":
            primary[table] = list(cols)
        else:
            foreign.setdefault(table, []).append((list(cols), ref_table, list(ref_cols)))

    if tables is None:
        order = [t for t in model.table_names if t in db_columns]
        order += sorted(t for t in db_columns if t not in model.table_names)
    else:
        order = []
        for name in tables:
            if name not in db_columns:
                known = ", ".join(sorted(db_columns))
                raise UnknownModelItemError(f"table {name!r} is not in {db_path.name}; it has: {known}")
            order.append(name)
    return "\n\n".join(_table_ddl(t, db_columns[t], primary.get(t, []), foreign.get(t, []), model) for t in order)


def _comment(text: str) -> str:
    return " ".join(text.split())


def _table_ddl(
    table: str,
    columns: list[tuple[str, str, bool]],
    primary: list[str],
    foreign: list[tuple[list[str], str, list[str]]],
    model: SemanticModel,
) -> str:
    described = model.table(table) if table in model.table_names else None
    lines: list[str] = []
    if described is not None:
        header = f"-- {table}: {described.description}"
        if described.grain:
            header += f" Grain: {described.grain}."
        if described.synonyms:
            header += f" Also called: {', '.join(described.synonyms)}."
        lines.append(_comment(header))
    else:
        lines.append(f"-- {table}: (not described in the semantic model)")
    single_fk = {cols[0]: (ref, ref_cols[0]) for cols, ref, ref_cols in foreign if len(cols) == 1}
    items: list[tuple[str, str]] = []
    for name, data_type, nullable in columns:
        definition = f"{name} {data_type}"
        if primary == [name]:
            definition += " PRIMARY KEY"
        elif not nullable:
            definition += " NOT NULL"
        if name in single_fk:
            ref, ref_col = single_fk[name]
            definition += f" REFERENCES {ref} ({ref_col})"
        note = ""
        if described is not None and name in described.column_names:
            column = described.column(name)
            note = column.description
            if column.values:
                note += " Values: " + ", ".join(f"'{v}'" for v in column.values) + "."
            if column.unit:
                note += f" Unit: {column.unit}."
            if column.sensitive:
                note += " SENSITIVE: never select."
        else:
            note = "(not described in the semantic model)"
        items.append((definition, _comment(note)))
    if len(primary) > 1:
        items.append((f"PRIMARY KEY ({', '.join(primary)})", ""))
    for cols, ref, ref_cols in foreign:
        if len(cols) > 1:
            items.append((f"FOREIGN KEY ({', '.join(cols)}) REFERENCES {ref} ({', '.join(ref_cols)})", ""))
    lines.append(f"CREATE TABLE {table} (")
    for i, (definition, note) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        lines.append(f"    {definition}{comma}" + (f"  -- {note}" if note else ""))
    lines.append(");")
    return "\n".join(lines)
