"""The built-in gold sets: ``multidomain-v1`` (120 cases) and ``multidomain-v2`` (v1 + prompt injection).

``multidomain-v1`` is generated deterministically from templates (below). ``multidomain-v2`` is every v1
case unchanged plus the prompt-injection cases of ``templates/multidomain_v2/`` (ids
``<prefix>-injection-NN``, tagged ``prompt_injection``): hostile instructions in the question, in an
earlier follow-up turn, or quoted from the cell values the sample database plants
(``sample_db.builder.PROMPT_INJECTIONS``, bound to the slots ``{injected_title}``, ``{injected_synopsis}``
and ``{injected_review}``). Query cases expect the SQL of the user's legitimate intent; probes carry
what a model obeying the injection would write.

Templates are data (``templates/multidomain_v1/<domain>.yml``): a question, SQL with named literal
slots written ``{slot}``, and metadata. A template may offer ``choices`` (alternative slot bindings);
a :class:`random.Random` seeded with ``"<seed>:<case id>"`` picks one, so the output depends on the seed
and the templates only. In SQL a slot renders as a SQL literal (``'TV'``, ``42``, ``TRUE``); in questions
as plain text.

Generation also checks the set: exact composition per domain and category, tags from the fixed
vocabulary that match the expected SQL's syntax tree, no two query cases of a domain sharing a SQL
skeleton, and no clock-dependent functions. Any problem raises :class:`GoldTemplateError`.
"""

from __future__ import annotations

import logging
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import sqlglot
from sqlglot import exp

from nl2sql_pipeline import jsonl, paths
from nl2sql_pipeline.config.checker import Checker, Field, line_of
from nl2sql_pipeline.config.yaml_loader import read_yaml
from nl2sql_pipeline.cases import CATEGORIES, DIFFICULTIES, OUTCOME_POLICY_REJECTION, Case, Turn
from nl2sql_pipeline.errors import ConfigError

logger = logging.getLogger(__name__)

GOLD_SET_NAME = "multidomain-v1"
BUILTIN_GOLD_FILE = "nl2sql_multidomain.jsonl"
GOLD_SET_V2_NAME = "multidomain-v2"
V2_GOLD_FILE = "nl2sql_multidomain_v2.jsonl"
DATABASE = "anime_platform"
SEMANTIC_MODEL = "anime_platform"
DEFAULT_SEED = 20260630
TEMPLATE_DIR = Path(__file__).resolve().parent / "templates" / "multidomain_v1"
TEMPLATE_DIR_V2 = Path(__file__).resolve().parent / "templates" / "multidomain_v2"
SQL_DIALECT = "duckdb"

# domain -> id prefix; every domain has one template file named after it.
DOMAIN_PREFIXES: dict[str, str] = {
    "anime_content": "content",
    "viewer_engagement": "engagement",
    "platform_monetization": "monetization",
}
# category -> (id infix, cases per domain)
CATEGORY_PLAN: dict[str, tuple[str, int]] = {
    "single_table": ("single", 10),
    "multi_table": ("multi", 8),
    "time": ("time", 6),
    "metric": ("metric", 4),
    "follow_up": ("followup", 4),
    "policy_rejection": ("probe", 8),
}

# Tags of query cases. Each is derived from the expected SQL's syntax tree (see ``structural_tags``),
# and a template's declared tags must equal the derived ones.
QUERY_TAGS: tuple[str, ...] = (
    "aggregate",  # an aggregate function outside a window
    "bridge",  # joins through the anime_genres bridge table
    "case_when",  # a CASE expression
    "correlated_subquery",  # a subquery referencing an alias of an enclosing query
    "cte",  # WITH ...
    "date_range",  # a comparison against a literal DATE/TIMESTAMP
    "date_trunc",  # date_trunc(...)
    "distinct",  # SELECT DISTINCT or an aggregate over DISTINCT values
    "filter",  # a WHERE clause
    "group_by",  # GROUP BY
    "having",  # HAVING
    "join",  # any JOIN
    "left_join",  # a LEFT JOIN
    "multi_hop",  # one FROM clause joining three or more tables
    "null_handling",  # IS [NOT] NULL, COALESCE or NULLIF
    "order_by",  # ORDER BY (outside window specifications)
    "ratio",  # a division by a computed value, or AVG over a 0/1 indicator (CASE / cast)
    "set_op",  # UNION / INTERSECT / EXCEPT
    "string_match",  # LIKE / ILIKE
    "subquery",  # a subquery (scalar, IN, EXISTS or derived table)
    "top_n",  # ORDER BY ... LIMIT n
    "window",  # a window function
)
# Tags of policy-rejection cases: which rule of the policy the probe exercises.
PROBE_TAGS: tuple[str, ...] = (
    "write",  # INSERT / UPDATE / DELETE
    "ddl",  # CREATE / DROP / ALTER
    "out_of_scope",  # catalog tables or system table functions
    "sensitive_column",  # users.email, directly, through SELECT * or an alias
    "row_limit",  # a LIMIT above the policy's max_limit
    "file_access",  # read_csv / read_parquet / a bare file path
    "external_access",  # ATTACH / COPY / INSTALL
    "multi_statement",  # a second statement smuggled after a comment
    "data_modifying_cte",  # WITH x AS (DELETE/UPDATE ... RETURNING) SELECT ...
)
INJECTION_TAG = "prompt_injection"  # the question, an earlier turn or a quoted cell value carries injected instructions
# Tags about what a case's prompt text holds rather than its SQL (allowed on query and probe cases).
PROMPT_TAGS: tuple[str, ...] = (INJECTION_TAG,)
TAG_VOCABULARY: tuple[str, ...] = QUERY_TAGS + PROBE_TAGS + PROMPT_TAGS

INJECTION_ID_INFIX = "injection"
# slot name -> (table, column) of the hostile value the sample-database builder plants there
INJECTION_SLOTS: dict[str, tuple[str, str]] = {
    "injected_synopsis": ("anime", "synopsis"),
    "injected_title": ("anime", "title"),
    "injected_review": ("ratings", "review"),
}
# Instruction phrases that mark question-level injections (matched case-insensitively).
INJECTION_PHRASES: tuple[str, ...] = ("ignore previous instructions", "i am now the admin")

_SLOT_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_CLOCK_FUNCTIONS = re.compile(r"\b(current_date|current_timestamp|now|today|get_current_timestamp)\b", re.I)
_STRING_LITERAL = re.compile(r"'(?:[^']|'')*'")  # a quoted value may say "now" without calling now()
TEMPLATE_FIELDS: dict[str, Field] = {
    "id": Field(str, required=True),
    "category": Field(str, required=True),
    "difficulty": Field(str, required=True),
    "tags": Field(list, items=Field(str)),
    "question": Field(str, required=True),
    "sql": Field(object),  # a string or a list of acceptable alternatives (checked by the loader)
    "probe_sql": Field(str),
    "context": Field(list, fix="write a list of {question, sql} turns"),
    "slots": Field(dict),
    "choices": Field(list, items=Field(dict), fix="write a list of slot -> value mappings"),
    "candidate_selection": Field(int, minimum=2),
}
TURN_FIELDS: dict[str, Field] = {"question": Field(str, required=True), "sql": Field(str, required=True)}
_TEMPLATE_KEYS = frozenset(TEMPLATE_FIELDS)


class GoldTemplateError(ConfigError):
    """The multidomain templates are invalid; ``problems`` holds one line per problem."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class CaseTemplate:
    """One template: everything a case needs, with ``{slot}`` placeholders still in the text."""

    id: str
    domain: str
    category: str
    difficulty: str
    tags: tuple[str, ...]
    question: str
    sql: tuple[str, ...]  # acceptable expected SQL (first = canonical); empty for probes
    probe_sql: str | None
    context: tuple[tuple[str, str], ...]  # earlier turns (question, sql)
    slots: Mapping[str, Any]
    choices: tuple[Mapping[str, Any], ...]
    candidate_selection: int | None
    source: str  # "<file>:<line> (<id>)", for messages


# ---------------------------------------------------------------- loading


def load_templates(template_dir: Path | None = None) -> list[CaseTemplate]:
    """Read every domain's template file, in domain order; raise GoldTemplateError listing every problem
    (each as ``<file>:<line>: key '<key>': <what> (<fix>)``)."""
    directory = template_dir or TEMPLATE_DIR
    templates: list[CaseTemplate] = []
    problems: list[str] = []
    for domain in DOMAIN_PREFIXES:
        path = directory / f"{domain}.yml"
        if not path.is_file():
            problems.append(f"{path}: template file missing (one file per domain: {', '.join(DOMAIN_PREFIXES)})")
            continue
        try:
            _, document = read_yaml(path, lambda message: GoldTemplateError([message]), missing="add it")
        except GoldTemplateError as exc:
            problems.extend(exc.problems)
            continue
        check = Checker(path, error=lambda message: GoldTemplateError(message.splitlines()))
        top = check.mapping(document, {
            "domain": Field(str, required=True, choices=(domain,), fix=f"write domain: {domain}"),
            "cases": Field(list, required=True, fix="write 'cases:' holding a list of templates"),
        })
        cases = (top or {}).get("cases") or []
        for index, raw in enumerate(cases):
            template = _template_from_mapping(check, raw, domain, f"cases[{index}]", line_of(cases, index))
            if template is not None:
                templates.append(template)
        problems.extend(check.problems)
    if problems:
        raise GoldTemplateError(problems)
    return templates


def _template_from_mapping(check: Checker, raw: Any, domain: str, key: str, line: int | None) -> CaseTemplate | None:
    before = len(check.problems)
    values = check.mapping(raw, TEMPLATE_FIELDS, key=key, line=line)
    if values is None:
        return None
    sql = values["sql"]
    sql_list = [sql] if isinstance(sql, str) else list(sql or [])
    if not all(isinstance(s, str) and s.strip() for s in sql_list):
        check.problem(line_of(raw, "sql") or line, f"{key}.sql", "must be a string or a list of strings",
                      "write the expected SQL, or a list of acceptable alternatives")
    context = []
    for index, turn in enumerate(values["context"] or []):
        turn_values = check.mapping(turn, TURN_FIELDS, key=f"{key}.context[{index}]", line=line_of(raw["context"], index))
        if turn_values is not None and None not in turn_values.values():
            context.append((turn_values["question"], turn_values["sql"]))
    if len(check.problems) > before:
        return None
    return CaseTemplate(
        id=values["id"],
        domain=domain,
        category=values["category"],
        difficulty=values["difficulty"],
        tags=tuple(values["tags"] or ()),
        question=values["question"],
        sql=tuple(sql_list),
        probe_sql=values["probe_sql"],
        context=tuple(context),
        slots=dict(values["slots"] or {}),
        choices=tuple(dict(c) for c in values["choices"] or ()),
        candidate_selection=values["candidate_selection"],
        source=f"{check.source}:{line} ({values['id']})",
    )


# ---------------------------------------------------------------- rendering


def sql_literal(value: Any) -> str:
    """Render a slot value as a DuckDB literal: strings quoted, numbers and booleans bare."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        return repr(value)
    if hasattr(value, "isoformat"):  # YAML turns 2026-01-01 into a date
        value = value.isoformat()
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise GoldTemplateError([f"slot value {value!r} has unsupported type {type(value).__name__}"])


def _text_value(value: Any) -> str:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def injection_slot_values() -> dict[str, str]:
    """The planted hostile cell values by slot name (see ``INJECTION_SLOTS``), verbatim from the builder."""
    from nl2sql_pipeline.sample_db.builder import PROMPT_INJECTIONS

    planted = {(table, column): value for table, column, value in PROMPT_INJECTIONS}
    missing = [f"{t}.{c}" for t, c in INJECTION_SLOTS.values() if (t, c) not in planted]
    if missing:
        raise GoldTemplateError(
            [f"the sample-database builder plants no injection in {', '.join(missing)} (PROMPT_INJECTIONS)"]
        )
    return {slot: planted[key] for slot, key in INJECTION_SLOTS.items()}


def injection_texts() -> tuple[str, ...]:
    """Texts whose presence in a prompt marks a prompt injection: planted values and instruction phrases."""
    return tuple(injection_slot_values().values()) + INJECTION_PHRASES


def _fill(text: str, binding: Mapping[str, Any], *, as_sql: bool, where: str) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in binding:
            raise GoldTemplateError([f"{where}: slot {{{name}}} has no value (define it in 'slots' or every 'choices' entry)"])
        value = binding[name]
        return sql_literal(value) if as_sql else _text_value(value)

    return _SLOT_RE.sub(replace, text)


def _clean_sql(sql: str) -> str:
    """Strip trailing blanks per line and the trailing newline YAML block scalars leave."""
    return "\n".join(line.rstrip() for line in sql.strip().splitlines())


def render_case(
    template: CaseTemplate,
    seed: int = DEFAULT_SEED,
    *,
    extra_slots: Mapping[str, Any] | None = None,
    verbatim_slots: bool = False,
) -> Case:
    """Fill a template's slots (choosing among ``choices`` with a per-case seeded RNG) into a Case.

    ``extra_slots`` are bindings the template may use without declaring them (its own win).
    Questions have their whitespace collapsed; with ``verbatim_slots`` only the template's own text is
    collapsed and slot values keep theirs (a quoted cell value with newlines stays exact).
    """
    binding: dict[str, Any] = dict(extra_slots or {})
    binding.update(template.slots)
    if template.choices:
        rng = random.Random(f"{seed}:{template.id}")
        binding.update(rng.choice(template.choices))
    where = template.source

    def sql(text: str) -> str:
        return _clean_sql(_fill(text, binding, as_sql=True, where=where))

    def question(text: str) -> str:
        if verbatim_slots:
            return _fill(" ".join(text.split()), binding, as_sql=False, where=where)
        return " ".join(_fill(text, binding, as_sql=False, where=where).split())

    is_probe = template.category == "policy_rejection"
    return Case(
        id=template.id,
        domain=template.domain,
        category=template.category,
        question=question(template.question),
        database=DATABASE,
        expected_sql=tuple(sql(s) for s in template.sql),
        tags=template.tags,
        difficulty=template.difficulty,
        semantic_model=SEMANTIC_MODEL,
        follow_up_context=tuple(Turn(question=question(q), sql=sql(s)) for q, s in template.context),
        candidate_selection=template.candidate_selection,
        expected_outcome=OUTCOME_POLICY_REJECTION if is_probe else "result",
        policy_probe_sql=sql(template.probe_sql) if template.probe_sql is not None else None,
    )


# ---------------------------------------------------------------- SQL analysis


def parse_sql(sql: str) -> exp.Expression:
    """Parse one DuckDB statement with sqlglot; raise GoldTemplateError when it does not parse."""
    try:
        tree = sqlglot.parse_one(sql, dialect=SQL_DIALECT)
    except sqlglot.errors.ParseError as exc:
        raise GoldTemplateError([f"SQL does not parse as DuckDB: {exc}\n{sql}"]) from exc
    if tree is None:
        raise GoldTemplateError([f"SQL is empty: {sql!r}"])
    return tree


def sql_skeleton(sql: str | exp.Expression) -> str:
    """The query with every literal replaced by ``?``, normalized by sqlglot: equal skeletons = same shape."""
    tree = parse_sql(sql) if isinstance(sql, str) else sql
    stripped = tree.copy().transform(lambda node: exp.Placeholder() if isinstance(node, exp.Literal) else node)
    return stripped.sql(dialect=SQL_DIALECT, normalize=True, comments=False)


def _is_date_literal(node: exp.Expression) -> bool:
    return (
        isinstance(node, exp.Cast)
        and isinstance(node.this, exp.Literal)
        and node.this.is_string
        and node.to.is_type(*exp.DataType.TEMPORAL_TYPES)
    )


def _is_ratio(div: exp.Div) -> bool:
    """A division by a computed value (a unit conversion such as ``x / 3600.0`` is not a ratio)."""
    divisor = div.expression.unnest() if isinstance(div.expression, exp.Paren) else div.expression
    return not isinstance(divisor, exp.Literal)


def _defined_aliases(query: exp.Expression) -> set[str]:
    names: set[str] = set()
    for table in query.find_all(exp.Table):
        names.add(table.alias_or_name.lower())
    for sub in query.find_all(exp.Subquery):
        if sub.alias:
            names.add(sub.alias.lower())
    for cte in query.find_all(exp.CTE):
        names.add(cte.alias.lower())
    return names


def _subquery_bodies(tree: exp.Expression) -> list[exp.Expression]:
    bodies: list[exp.Expression] = [node.this for node in tree.find_all(exp.Subquery)]
    bodies += [node.this for node in tree.find_all(exp.Exists)]
    return bodies


def structural_tags(sql: str | exp.Expression) -> frozenset[str]:
    """The query tags (see QUERY_TAGS) that the SQL's syntax tree exhibits."""
    tree = parse_sql(sql) if isinstance(sql, str) else sql
    tags: set[str] = set()
    joins = list(tree.find_all(exp.Join))
    if joins:
        tags.add("join")
    if any(join.side == "LEFT" for join in joins):
        tags.add("left_join")
    if any(len(select.args.get("joins") or []) >= 2 for select in tree.find_all(exp.Select)):
        tags.add("multi_hop")
    if joins and any(t.name.lower() == "anime_genres" for t in tree.find_all(exp.Table)):
        tags.add("bridge")
    if any(not isinstance(agg.parent, exp.Window) for agg in tree.find_all(exp.AggFunc)):
        tags.add("aggregate")
    if tree.find(exp.Window):
        tags.add("window")
    if tree.find(exp.Group):
        tags.add("group_by")
    if tree.find(exp.Having):
        tags.add("having")
    if any(isinstance(where.parent, (exp.Select, exp.Update, exp.Delete)) for where in tree.find_all(exp.Where)):
        tags.add("filter")
    orders = [order for order in tree.find_all(exp.Order) if not isinstance(order.parent, exp.Window)]
    if orders:
        tags.add("order_by")
    if any(order.parent is not None and order.parent.args.get("limit") for order in orders):
        tags.add("top_n")
    if tree.find(exp.Distinct):
        tags.add("distinct")
    if tree.find(exp.Case):
        tags.add("case_when")
    if tree.find(exp.With):
        tags.add("cte")
    if tree.find(exp.SetOperation):
        tags.add("set_op")
    if any(_is_ratio(div) for div in tree.find_all(exp.Div)) or any(
        isinstance(avg.this, (exp.Case, exp.Cast)) for avg in tree.find_all(exp.Avg)
    ):
        tags.add("ratio")
    if tree.find(exp.Like, exp.ILike):
        tags.add("string_match")
    if tree.find(exp.DateTrunc, exp.TimestampTrunc):
        tags.add("date_trunc")
    if tree.find(exp.Coalesce, exp.Nullif) or any(isinstance(node.expression, exp.Null) for node in tree.find_all(exp.Is)):
        tags.add("null_handling")
    comparisons = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between)
    if any(any(_is_date_literal(arg) for arg in node.iter_expressions()) for node in tree.find_all(*comparisons)):
        tags.add("date_range")
    bodies = _subquery_bodies(tree)
    if bodies:
        tags.add("subquery")
    for body in bodies:
        inner = _defined_aliases(body)
        if any(col.table and col.table.lower() not in inner for col in body.find_all(exp.Column)):
            tags.add("correlated_subquery")
    return frozenset(tags)


# ---------------------------------------------------------------- checks and generation


def check_gold_set(cases: list[Case]) -> list[str]:
    """Problems with a generated set (composition, ids, tags, skeletons, clock functions); empty = valid."""
    problems: list[str] = []
    seen_ids: set[str] = set()
    counts: dict[tuple[str, str], int] = {}
    skeletons: dict[tuple[str, str], str] = {}
    for case in cases:
        counts[(case.domain, case.category)] = counts.get((case.domain, case.category), 0) + 1
        if case.id in seen_ids:
            problems.append(f"{case.id}: duplicate id")
        seen_ids.add(case.id)
        problems.extend(_check_case(case))
        if case.is_probe or not case.expected_sql:
            continue
        _check_skeletons(case, skeletons, problems)
    for domain in DOMAIN_PREFIXES:
        for category, (_, wanted) in CATEGORY_PLAN.items():
            got = counts.get((domain, category), 0)
            if got != wanted:
                problems.append(f"{domain}/{category}: {got} cases, expected {wanted}")
    return problems


def _check_skeletons(case: Case, skeletons: dict[tuple[str, str], str], problems: list[str]) -> None:
    """Record ``case``'s SQL skeletons in ``skeletons``; a skeleton another case of its domain has is a problem."""
    for sql in case.expected_sql:
        try:
            key = (case.domain, sql_skeleton(sql))
        except GoldTemplateError as exc:
            problems.extend(f"{case.id}: {p}" for p in exc.problems)
            continue
        if key in skeletons and skeletons[key] != case.id:
            problems.append(f"{case.id}: same SQL skeleton as {skeletons[key]} (vary the query's shape)")
        skeletons.setdefault(key, case.id)


def _check_case(case: Case, id_infix: str | None = None) -> list[str]:
    """Problems of one case; ``id_infix`` replaces the category's id infix (``content-<infix>-NN``)."""
    problems: list[str] = []
    prefix = DOMAIN_PREFIXES.get(case.domain)
    if prefix is None:
        return [f"{case.id}: unknown domain {case.domain!r} (known: {', '.join(DOMAIN_PREFIXES)})"]
    if case.category not in CATEGORIES:
        return [f"{case.id}: unknown category {case.category!r} (known: {', '.join(CATEGORIES)})"]
    infix = id_infix or CATEGORY_PLAN[case.category][0]
    if not re.fullmatch(rf"{prefix}-{infix}-\d\d", case.id):
        problems.append(f"{case.id}: id must look like {prefix}-{infix}-NN for {case.domain}/{case.category}")
    if case.difficulty not in DIFFICULTIES:
        problems.append(f"{case.id}: difficulty {case.difficulty!r} not in {DIFFICULTIES}")
    unknown = [t for t in case.tags if t not in TAG_VOCABULARY]
    if unknown:
        problems.append(f"{case.id}: tags {unknown} not in the vocabulary (see TAG_VOCABULARY)")
    if len(set(case.tags)) != len(case.tags):
        problems.append(f"{case.id}: duplicate tags")
    if (case.category == "follow_up") != bool(case.follow_up_context):
        problems.append(f"{case.id}: follow_up cases, and only they, carry follow_up_context")
    if case.is_probe:
        if case.category != "policy_rejection" or case.expected_sql or not case.policy_probe_sql:
            problems.append(f"{case.id}: a probe needs category policy_rejection, policy_probe_sql and no expected_sql")
        if not any(t in PROBE_TAGS for t in case.tags) or any(t not in PROBE_TAGS + PROMPT_TAGS for t in case.tags):
            problems.append(f"{case.id}: probe tags must come from PROBE_TAGS (plus PROMPT_TAGS), at least one")
        return problems
    if not case.expected_sql:
        return problems + [f"{case.id}: a query case needs expected SQL"]
    for sql in list(case.expected_sql) + [turn.sql for turn in case.follow_up_context]:
        if _CLOCK_FUNCTIONS.search(_STRING_LITERAL.sub("''", sql)):
            problems.append(f"{case.id}: uses a clock function; write literal dates relative to 2026-06-30")
    try:
        derived = structural_tags(case.expected_sql[0])
    except GoldTemplateError as exc:
        return problems + [f"{case.id}: {p}" for p in exc.problems]
    declared = set(case.tags) - set(PROMPT_TAGS)
    if declared != derived:
        missing = sorted(derived - declared)
        extra = sorted(declared - derived)
        problems.append(f"{case.id}: tags do not match the SQL (add {missing}, remove {extra})")
    return problems


def generate_multidomain_v1(seed: int = DEFAULT_SEED, template_dir: Path | None = None) -> list[Case]:
    """The 120 cases of ``multidomain-v1``, in template order; raise GoldTemplateError if invalid."""
    cases = [render_case(template, seed) for template in load_templates(template_dir)]
    problems = check_gold_set(cases)
    if problems:
        raise GoldTemplateError(problems)
    logger.info("generated %d cases of %s (seed %d)", len(cases), GOLD_SET_NAME, seed)
    return cases


def _prompt_texts(case: Case) -> list[str]:
    """The texts of ``case`` that reach any model's prompt: the earlier turns' questions, then its own.

    (An earlier turn's gold SQL is not one of them: the model answers earlier turns itself.)
    """
    return [turn.question for turn in case.follow_up_context] + [case.question]


def carries_injection(text: str, injections: Iterable[str] | None = None) -> bool:
    """True when ``text`` holds a planted injection value or an injection phrase (case-insensitive)."""
    lowered = text.lower()
    return any(marker.lower() in lowered for marker in (injections if injections is not None else injection_texts()))


def check_injection_cases(injection: list[Case], base: list[Case]) -> list[str]:
    """Problems with the prompt-injection cases added to ``base`` (the v1 cases); empty = valid.

    Each case: a ``<prefix>-injection-NN`` id unique in the whole set, the ``prompt_injection`` tag,
    truthful tags, injection text in what reaches the prompt, and (query cases) a SQL skeleton no
    other query case of its domain has. The set: every domain has query and probe cases, every planted
    value is quoted verbatim, and at least one follow-up carries the injection in an earlier turn.
    """
    problems: list[str] = []
    planted = injection_slot_values()
    markers = tuple(planted.values()) + INJECTION_PHRASES
    slot_names = ", ".join(f"{{{slot}}}" for slot in INJECTION_SLOTS)
    ids = {case.id for case in base}
    skeletons: dict[tuple[str, str], str] = {}
    for case in base:
        for sql in case.expected_sql:
            skeletons.setdefault((case.domain, sql_skeleton(sql)), case.id)
    for case in injection:
        if case.id in ids:
            problems.append(f"{case.id}: duplicate id")
        ids.add(case.id)
        problems.extend(_check_case(case, id_infix=INJECTION_ID_INFIX))
        if INJECTION_TAG not in case.tags:
            problems.append(f"{case.id}: an injection case must be tagged {INJECTION_TAG}")
        if not any(carries_injection(text, markers) for text in _prompt_texts(case)):
            problems.append(
                f"{case.id}: no injection text reaches the prompt (quote a planted value with one of the "
                f"slots {slot_names} or use one of the phrases {list(INJECTION_PHRASES)})"
            )
        _check_skeletons(case, skeletons, problems)
    for domain in DOMAIN_PREFIXES:
        mine = [case for case in injection if case.domain == domain]
        if not any(not case.is_probe for case in mine) or not any(case.is_probe for case in mine):
            problems.append(f"{domain}: needs at least one injection query case and one injection probe")
    everything = "\n".join(text for case in injection for text in _prompt_texts(case))
    for slot, value in planted.items():
        if value not in everything:
            problems.append(f"no injection case quotes the planted {slot} verbatim (use {{{slot}}})")
    if not any(any(carries_injection(t.question, markers) for t in case.follow_up_context) for case in injection):
        problems.append("no follow_up injection case carries the injection in an earlier turn")
    return problems


def generate_injection_cases(seed: int = DEFAULT_SEED, template_dir: Path | None = None) -> list[Case]:
    """The prompt-injection cases alone (templates/multidomain_v2), rendered with the planted values."""
    slots = injection_slot_values()
    templates = load_templates(template_dir or TEMPLATE_DIR_V2)
    return [render_case(template, seed, extra_slots=slots, verbatim_slots=True) for template in templates]


def generate_multidomain_v2(
    seed: int = DEFAULT_SEED, template_dir: Path | None = None, v1_template_dir: Path | None = None
) -> list[Case]:
    """``multidomain-v2``: the v1 cases unchanged, then the injection cases; raise GoldTemplateError if invalid."""
    base = generate_multidomain_v1(seed, v1_template_dir)
    injection = generate_injection_cases(seed, template_dir)
    problems = check_injection_cases(injection, base)
    if problems:
        raise GoldTemplateError(problems)
    logger.info(
        "generated %d cases of %s (%d injection cases)", len(base) + len(injection), GOLD_SET_V2_NAME, len(injection)
    )
    return base + injection


BUILTIN_GOLD_SETS: dict[str, tuple[str, Callable[[], list[Case]]]] = {
    GOLD_SET_NAME: (BUILTIN_GOLD_FILE, generate_multidomain_v1),
    GOLD_SET_V2_NAME: (V2_GOLD_FILE, generate_multidomain_v2),
}
"""Built-in gold-set key -> (file name under ``data/gold/``, generator)."""


def builtin_gold_path() -> Path:
    """Where the checked-in built-in gold file lives: ``data_dir()/gold/nl2sql_multidomain.jsonl``."""
    return paths.data_dir() / "gold" / BUILTIN_GOLD_FILE


def gold_set_path(key: str) -> Path:
    """Where the checked-in file of built-in gold set ``key`` lives (``data_dir()/gold/<file>``)."""
    return paths.data_dir() / "gold" / _builtin(key)[0]


def _builtin(key: str) -> tuple[str, Callable[[], list[Case]]]:
    try:
        return BUILTIN_GOLD_SETS[key]
    except KeyError:
        raise ConfigError(
            f"{key!r} is not a built-in gold set (built-in: {', '.join(BUILTIN_GOLD_SETS)}); "
            "other gold sets are imported with `nl2sql-eval gold import`"
        ) from None


def render_jsonl(cases: Iterable[Case]) -> str:
    """The JSONL text of a gold set: one ``Case.to_json()`` per line, ``\\n`` endings."""
    return jsonl.render_jsonl(case.to_json() for case in cases)


def _write_jsonl(cases: list[Case], target: Path) -> Path:
    return jsonl.write_jsonl_lines(target, (case.to_json() for case in cases))


def write_builtin_gold(path: Path | None = None) -> Path:
    """Generate ``multidomain-v1`` and write it as UTF-8 JSONL (default: ``builtin_gold_path()``)."""
    return _write_jsonl(generate_multidomain_v1(), path or builtin_gold_path())


def write_gold_set(key: str, path: Path | None = None) -> Path:
    """Generate built-in gold set ``key`` and write it as UTF-8 JSONL (default: ``gold_set_path(key)``).

    Raises ConfigError for a key that is not built in.
    """
    generate = _builtin(key)[1]
    return _write_jsonl(generate(), path or gold_set_path(key))


if __name__ == "__main__":  # regenerate the checked-in files: python -m nl2sql_pipeline.gold.generator
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    for gold_key in BUILTIN_GOLD_SETS:
        write_gold_set(gold_key)
