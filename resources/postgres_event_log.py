"""dagster-postgres's event log whose pool slot claim never double-books (named in ``deploy/dagster.yaml``).

It stores exactly what ``PostgresEventLogStorage`` stores, in the same tables, with the same configuration
(``postgres_db`` or ``postgres_url``); only the last step of a pool slot claim differs: the slot row is taken
by one conditional UPDATE (``resources.event_log.take_free_slot``), so two processes or machines claiming the
last slot at the same instant never both get it — whoever claims it: the executor (in-process, multiprocess,
the Celery orchestrator) or the step itself (``resources/pools.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dagster._serdes import ConfigurableClassData
from dagster._utils.concurrency import ConcurrencySlotStatus
from dagster_postgres.event_log.event_log import PostgresEventLogStorage
from dagster_postgres.utils import get_token_provider_from_config, pg_url_from_config

from resources.event_log import claim_status, take_free_slot


class SafeClaimPostgresEventLogStorage(PostgresEventLogStorage):
    """``PostgresEventLogStorage`` taking a pool slot only while it is still free."""

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]
    ) -> SafeClaimPostgresEventLogStorage:
        return cls(
            inst_data=inst_data,
            postgres_url=pg_url_from_config(config_value),
            should_autocreate_tables=config_value.get("should_autocreate_tables", True),
            token_provider=get_token_provider_from_config(config_value),
        )

    def _claim_concurrency_slot(self, concurrency_key: str, run_id: str, step_key: str) -> ConcurrencySlotStatus:
        # the last step of Dagster's claim_concurrency_slot, once its queue of pending steps gave this one its turn
        return claim_status(take_free_slot(self, concurrency_key, run_id, step_key))
